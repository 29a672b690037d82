/**
 * P2's `included` for the rendered baseline: the assets and quantities a page of logs names,
 * read with prepared SQL and written by hand, as Tilth must write them (bytes checked identical).
 *
 * It does the work the document needs, no less: the assets' rows with their users and terms, every
 * multi-valued field in one UNION ALL, the computed `location`, `geometry` and `group` from the
 * stored placement and membership intervals at this moment (and the geometry of the movement logs
 * they name), the computed `inventory` from the quantities that adjust the assets, and the
 * quantities' rows. It knows only the farm the benchmark generates: the bundles below, standard
 * quantities and no files or inventories; anything else throws, so a change shows up as a failed
 * check rather than as a faster baseline.
 */
import type Database from 'better-sqlite3';
import { bool, geometry, iso, num, ref, str, userRef } from './json-text.ts';

// A name-based UUID per bundle, as Tilth gives its config entities (GET /api/asset_type/asset_type).
const ASSET_TYPE: Record<string, string> = {
  animal: '5af31405-4908-56c5-b550-ae97eb877b41',
  equipment: 'fac7e8dc-9b0c-5f5b-96ac-02cb06e7254e',
  group: '271e9fa5-9da3-53f7-9784-858d4c5e627f',
  land: '73393225-3c3e-5723-a40a-208d11f3e4c1',
  plant: '2c7adf9c-f96f-5a0a-849d-e1520d319be2',
  structure: 'a1cdad00-0711-56aa-9655-f85653182abe',
};
const QUANTITY_TYPE: Record<string, string> = { standard: '3b537ee9-12a9-5298-a10b-72f283d0ceb2' };

type Row = Record<string, unknown> & { id: number; uuid: string; bundle: string };
/** One value of a multi-valued field or an interval: a reference (uuid, bundle, tid) or a plain value (uuid holds it). */
interface SideRow {
  f: string;
  entity_id: number;
  uuid: string;
  bundle: string | null;
  tid: number | null;
  a: unknown;
  b: unknown;
  log_id?: number;
}

const ASSET_SQL = `SELECT a.id, a.uuid, a.bundle, a.revision_id, a.revision_created, a.revision_log_message, a.name, a.status, a.archived,
  a.created, a.changed, a.data, a.notes__value, a.notes__format, a.intrinsic_geometry__value AS geometry__value,
  a.intrinsic_geometry__geo_type AS geometry__geo_type, a.intrinsic_geometry__lat AS geometry__lat, a.intrinsic_geometry__lon AS geometry__lon,
  a.intrinsic_geometry__left AS geometry__left, a.intrinsic_geometry__top AS geometry__top, a.intrinsic_geometry__right AS geometry__right,
  a.intrinsic_geometry__bottom AS geometry__bottom, a.intrinsic_geometry__geohash AS geometry__geohash, a.intrinsic_geometry__latlon AS geometry__latlon,
  a.is_location, a.is_fixed, a.revision_user, ru.uuid AS revision_user_uuid, a.uid, u.uuid AS uid_uuid,
  a.animal_type, at.uuid AS animal_type_uuid, a.birthdate, a.is_castrated, a.sex, a.manufacturer, a.model, a.serial_number, a.land_type, a.structure_type
  FROM asset a LEFT JOIN users ru ON ru.id = a.revision_user LEFT JOIN users u ON u.id = a.uid LEFT JOIN taxonomy_term at ON at.id = a.animal_type
  WHERE a.id IN (SELECT value FROM json_each(?))`;

// The assets' multi-valued fields, then where they are and which groups they are in at @now.
const ASSET_SIDE_SQL = `WITH ids(id) AS (SELECT value FROM json_each(@ids))
  SELECT 'flag' AS f, x.entity_id, x.delta, x.value AS uuid, NULL AS bundle, NULL AS tid, NULL AS a, NULL AS b, NULL AS log_id FROM asset__flag x WHERE x.entity_id IN (SELECT id FROM ids)
  UNION ALL SELECT 'id_tag', x.entity_id, x.delta, x.id, NULL, NULL, x.type, x.location, NULL FROM asset__id_tag x WHERE x.entity_id IN (SELECT id FROM ids)
  UNION ALL SELECT 'nickname', x.entity_id, x.delta, x.value, NULL, NULL, NULL, NULL, NULL FROM asset__nickname x WHERE x.entity_id IN (SELECT id FROM ids)
  UNION ALL SELECT 'file', x.entity_id, x.delta, t.uuid, 'file', t.id, NULL, NULL, NULL FROM asset__file x JOIN files t ON t.id = x.target_id WHERE x.entity_id IN (SELECT id FROM ids)
  UNION ALL SELECT 'image', x.entity_id, x.delta, t.uuid, 'file', t.id, NULL, NULL, NULL FROM asset__image x JOIN files t ON t.id = x.target_id WHERE x.entity_id IN (SELECT id FROM ids)
  UNION ALL SELECT 'owner', x.entity_id, x.delta, t.uuid, 'user', t.id, NULL, NULL, NULL FROM asset__owner x JOIN users t ON t.id = x.target_id WHERE x.entity_id IN (SELECT id FROM ids)
  UNION ALL SELECT 'parent', x.entity_id, x.delta, t.uuid, t.bundle, t.id, NULL, NULL, NULL FROM asset__parent x JOIN asset t ON t.id = x.target_id WHERE x.entity_id IN (SELECT id FROM ids)
  UNION ALL SELECT 'plant_type', x.entity_id, x.delta, t.uuid, t.bundle, t.id, NULL, NULL, NULL FROM asset__plant_type x JOIN taxonomy_term t ON t.id = x.target_id WHERE x.entity_id IN (SELECT id FROM ids)
  UNION ALL SELECT 'equipment_type', x.entity_id, x.delta, t.uuid, t.bundle, t.id, NULL, NULL, NULL FROM asset__equipment_type x JOIN taxonomy_term t ON t.id = x.target_id WHERE x.entity_id IN (SELECT id FROM ids)
  UNION ALL SELECT 'season', x.entity_id, x.delta, t.uuid, t.bundle, t.id, NULL, NULL, NULL FROM asset__season x JOIN taxonomy_term t ON t.id = x.target_id WHERE x.entity_id IN (SELECT id FROM ids)
  UNION ALL SELECT 'location', p.entity_id, p.delta, t.uuid, t.bundle, p.target_id, NULL, NULL, p.log_id FROM asset_location p LEFT JOIN asset t ON t.id = p.target_id
    WHERE p.entity_id IN (SELECT id FROM ids) AND p.start_ts <= @now AND (p.end_ts IS NULL OR p.end_ts > @now)
  UNION ALL SELECT 'group', p.entity_id, p.delta, t.uuid, t.bundle, p.target_id, NULL, NULL, p.log_id FROM asset_group p JOIN asset t ON t.id = p.target_id
    WHERE p.entity_id IN (SELECT id FROM ids) AND p.start_ts <= @now AND (p.end_ts IS NULL OR p.end_ts > @now)
  ORDER BY 2, 1, 3`;

const MOVEMENT_GEOMETRY_SQL = `SELECT id, geometry__value, geometry__geo_type, geometry__lat, geometry__lon, geometry__left, geometry__top,
  geometry__right, geometry__bottom, geometry__geohash, geometry__latlon FROM log WHERE id IN (SELECT value FROM json_each(?))`;

// Inventory: the (measure, units) pairs on quantities that adjust the assets, and the adjustments
// on done logs up to now. The benchmark's farm has none; finding any throws (not rendered here).
const INVENTORY_SQL = `WITH ids(id) AS (SELECT value FROM json_each(@ids))
  SELECT q.inventory_asset FROM quantity q WHERE q.inventory_asset IN (SELECT id FROM ids)
  UNION ALL SELECT q.inventory_asset FROM quantity q JOIN log__quantity lq ON lq.target_id = q.id JOIN log l ON l.id = lq.entity_id
    WHERE q.inventory_asset IN (SELECT id FROM ids) AND q.inventory_adjustment IS NOT NULL AND l.status = 'done' AND l.timestamp <= @now`;

const QUANTITY_SQL = `SELECT q.id, q.uuid, q.bundle, q.revision_id, q.revision_created, q.revision_log_message, q.measure, q.value__numerator,
  q.value__denominator, q.label, q.inventory_adjustment, q.created, q.changed, q.revision_user, ru.uuid AS revision_user_uuid, q.uid, u.uuid AS uid_uuid,
  q.inventory_asset, ia.uuid AS inventory_asset_uuid, ia.bundle AS inventory_asset_bundle, q.units, un.uuid AS units_uuid, un.bundle AS units_bundle
  FROM quantity q LEFT JOIN users ru ON ru.id = q.revision_user LEFT JOIN users u ON u.id = q.uid
  LEFT JOIN asset ia ON ia.id = q.inventory_asset LEFT JOIN taxonomy_term un ON un.id = q.units
  WHERE q.id IN (SELECT value FROM json_each(?))`;

/** A fraction whose denominator is a power of ten (the farm's quantities) as a decimal, exact, no trailing zeros. */
function decimal(numerator: number, denominator: number): string {
  const places = String(denominator).length - 1;
  if (denominator !== 10 ** places)
    throw new Error(`quantity denominator ${denominator} is not rendered by this baseline`);
  const digits = String(Math.abs(numerator)).padStart(places + 1, '0');
  const fraction = digits.slice(digits.length - places).replace(/0+$/, '');
  return `${numerator < 0 ? '-' : ''}${digits.slice(0, digits.length - places)}${fraction ? `.${fraction}` : ''}`;
}

function relationship(self: string, field: string, data: string): string {
  return `"${field}":{"data":${data},"links":{"related":{"href":"${self}/${field}"},"self":{"href":"${self}/relationships/${field}"}}}`;
}

function renderAsset(
  base: string,
  r: Row,
  side: Map<string, SideRow[]>,
  movements: Map<number, Record<string, unknown>>,
): string {
  const self = `${base}/api/asset/${r.bundle}/${r.uuid}`;
  const many = (f: string) => side.get(f) ?? [];
  const refs = (f: string, type: (x: SideRow) => string) =>
    `[${many(f)
      .map((x) => ref(type(x), x.uuid, x.tid))
      .join(',')}]`;
  const fixed = Boolean(r.is_fixed);
  // A movable asset is where its placement's movement log put it; a fixed one is nowhere, at its own geometry.
  const placement = fixed ? [] : many('location');
  const computedGeometry = fixed
    ? geometry(r)
    : placement.length
      ? geometry(movements.get(placement[0]!.log_id!))
      : 'null';
  let out = `{"type":"asset--${r.bundle}","id":"${r.uuid}","links":{"self":{"href":"${self}"}},"attributes":{`;
  out += `"drupal_internal__id":${r.id},"drupal_internal__revision_id":${num(r.revision_id)},"langcode":"en","revision_created":${iso(r.revision_created)},`;
  out += `"revision_log_message":${str(r.revision_log_message)},"name":${str(r.name)},"status":${str(r.status)},"archived":${iso(r.archived)},`;
  out += `"created":${iso(r.created)},"changed":${iso(r.changed)},"default_langcode":true,"revision_default":true,"revision_translation_affected":true,`;
  out += `"data":${str(r.data)},"flag":${JSON.stringify(many('flag').map((x) => x.uuid))},`;
  out += `"id_tag":[${many('id_tag')
    .map((x) => `{"id":${str(x.uuid)},"type":${str(x.a)},"location":${str(x.b)}}`)
    .join(',')}],`;
  out += `"notes":${r.notes__value === null ? 'null' : `{"value":${str(r.notes__value)},"format":${str(r.notes__format)}}`},`;
  out += `"geometry":${computedGeometry},"intrinsic_geometry":${geometry(r)},"is_location":${bool(r.is_location)},"is_fixed":${bool(r.is_fixed)},"inventory":[]`;
  switch (r.bundle) {
    case 'animal':
      out += `,"birthdate":${iso(r.birthdate)},"is_castrated":${bool(r.is_castrated)},"nickname":${JSON.stringify(many('nickname').map((x) => x.uuid))},"sex":${str(r.sex)}`;
      break;
    case 'equipment':
      out += `,"manufacturer":${str(r.manufacturer)},"model":${str(r.model)},"serial_number":${str(r.serial_number)}`;
      break;
    case 'land':
      out += `,"land_type":${str(r.land_type)}`;
      break;
    case 'structure':
      out += `,"structure_type":${str(r.structure_type)}`;
      break;
    case 'plant':
    case 'group':
      break;
    default:
      throw new Error(`asset bundle ${r.bundle} is not rendered by this baseline`);
  }
  if (many('file').length || many('image').length) throw new Error('files are not rendered by this baseline');
  out += `},"relationships":{"asset_type":{"data":{"type":"asset_type--asset_type","id":"${ASSET_TYPE[r.bundle]}","meta":{"drupal_internal__target_id":"${r.bundle}"}}},`;
  out += `${relationship(self, 'revision_user', userRef(r.revision_user, r.revision_user_uuid))},${relationship(self, 'uid', userRef(r.uid, r.uid_uuid))},`;
  out += `${relationship(self, 'file', '[]')},${relationship(self, 'image', '[]')},${relationship(
    self,
    'owner',
    refs('owner', () => 'user--user'),
  )},`;
  out += `${relationship(
    self,
    'parent',
    refs('parent', (x) => `asset--${x.bundle}`),
  )},`;
  out += `${relationship(
    self,
    'location',
    `[${placement
      .filter((x) => x.uuid !== null)
      .map((x) => ref(`asset--${x.bundle}`, x.uuid, x.tid))
      .join(',')}]`,
  )},`;
  out += relationship(
    self,
    'group',
    refs('group', (x) => `asset--${x.bundle}`),
  );
  // The farm (organization) an asset belongs to: none on the bench's farm.
  out += `,${relationship(self, 'farm', 'null')}`;
  if (r.bundle === 'equipment')
    out += `,${relationship(
      self,
      'equipment_type',
      refs('equipment_type', (x) => `taxonomy_term--${x.bundle}`),
    )}`;
  if (r.bundle === 'animal')
    out += `,${relationship(self, 'animal_type', ref('taxonomy_term--animal_type', r.animal_type_uuid, r.animal_type))}`;
  if (r.bundle === 'plant')
    out += `,${relationship(
      self,
      'plant_type',
      refs('plant_type', (x) => `taxonomy_term--${x.bundle}`),
    )},${relationship(
      self,
      'season',
      refs('season', (x) => `taxonomy_term--${x.bundle}`),
    )}`;
  return `${out}}}`;
}

function renderQuantity(base: string, r: Row): string {
  if (!QUANTITY_TYPE[r.bundle]) throw new Error(`quantity bundle ${r.bundle} is not rendered by this baseline`);
  const self = `${base}/api/quantity/${r.bundle}/${r.uuid}`;
  const value =
    r.value__numerator === null
      ? 'null'
      : `{"numerator":${r.value__numerator},"denominator":${r.value__denominator},"decimal":"${decimal(Number(r.value__numerator), Number(r.value__denominator))}"}`;
  let out = `{"type":"quantity--${r.bundle}","id":"${r.uuid}","links":{"self":{"href":"${self}"}},"attributes":{`;
  out += `"drupal_internal__id":${r.id},"drupal_internal__revision_id":${num(r.revision_id)},"langcode":"en","revision_created":${iso(r.revision_created)},`;
  out += `"revision_log_message":${str(r.revision_log_message)},"measure":${str(r.measure)},"value":${value},"label":${str(r.label)},"inventory_adjustment":${str(r.inventory_adjustment)},`;
  out += `"created":${iso(r.created)},"changed":${iso(r.changed)},"default_langcode":true,"revision_default":true,"revision_translation_affected":true},"relationships":{`;
  out += `"quantity_type":{"data":{"type":"quantity_type--quantity_type","id":"${QUANTITY_TYPE[r.bundle]}","meta":{"drupal_internal__target_id":"${r.bundle}"}}},`;
  out += `${relationship(self, 'revision_user', userRef(r.revision_user, r.revision_user_uuid))},${relationship(self, 'uid', userRef(r.uid, r.uid_uuid))},`;
  out += `${relationship(self, 'inventory_asset', ref(`asset--${r.inventory_asset_bundle}`, r.inventory_asset_uuid, r.inventory_asset))},`;
  out += relationship(self, 'units', ref(`taxonomy_term--${r.units_bundle}`, r.units_uuid, r.units));
  return `${out}}}`;
}

export interface Includer {
  /** The `included` members for assets and quantities by id, in the order given (each already unique). */
  render(assetIds: number[], quantityIds: number[]): string[];
}

/** P2's includes on SQLite: five prepared statements for a whole page. */
export function sqliteIncluder(db: Database.Database, base: string): Includer {
  const assets = db.prepare(ASSET_SQL);
  const assetSide = db.prepare(ASSET_SIDE_SQL);
  const movementGeometry = db.prepare(MOVEMENT_GEOMETRY_SQL);
  const inventory = db.prepare(INVENTORY_SQL);
  const quantities = db.prepare(QUANTITY_SQL);
  return {
    render(assetIds, quantityIds) {
      const out: string[] = [];
      if (assetIds.length) {
        const ids = JSON.stringify(assetIds);
        const now = Math.floor(Date.now() / 1000);
        const rows = new Map((assets.all(ids) as Row[]).map((r) => [r.id, r]));
        const side = new Map<number, Map<string, SideRow[]>>();
        for (const s of assetSide.all({ ids, now }) as SideRow[]) {
          let fields = side.get(s.entity_id);
          if (!fields) side.set(s.entity_id, (fields = new Map()));
          let list = fields.get(s.f);
          if (!list) fields.set(s.f, (list = []));
          list.push(s);
        }
        const logIds = [...side.values()]
          .map((f) => f.get('location')?.[0]?.log_id)
          .filter((id): id is number => id !== undefined && id !== null);
        const movements = new Map(
          logIds.length
            ? (
                movementGeometry.all(JSON.stringify([...new Set(logIds)])) as Array<
                  Record<string, unknown> & { id: number }
                >
              ).map((g) => [g.id, g])
            : [],
        );
        if (inventory.all({ ids, now }).length) throw new Error('inventories are not rendered by this baseline');
        for (const id of assetIds) {
          const r = rows.get(id);
          if (r) out.push(renderAsset(base, r, side.get(id) ?? new Map(), movements));
        }
      }
      if (quantityIds.length) {
        const rows = new Map((quantities.all(JSON.stringify(quantityIds)) as Row[]).map((r) => [r.id, r]));
        for (const id of quantityIds) {
          const r = rows.get(id);
          if (r) out.push(renderQuantity(base, r));
        }
      }
      return out;
    },
  };
}
