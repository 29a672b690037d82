/**
 * Exports of a collection in formats spreadsheets and maps read: CSV (one row per record, related
 * records as names and UUIDs, as farmOS's CSV export writes them), GeoJSON and KML (the records
 * that have a geometry). Chosen with `_format=csv|geojson|kml` or the Accept header. The same
 * filters, sorts and access checks apply as to the JSON:API collection, but the 50-record page
 * limit does not: the export is streamed in batches that follow the keyset cursor, written as
 * the client reads, so memory stays flat whatever the size.
 *
 * What a farmer reads: a log's quantities as farmOS 2.x's log CSV wrote them ("picked (Weight)
 * 12.5 kg": label, measure, value, units; farmOS 3.x's log CSV leaves quantities out), loaded for
 * a whole batch at once; none of Drupal's internal columns (language and revision flags, which
 * farmOS's CSV export leaves out too); CSV with a UTF-8 byte order mark, so that spreadsheet
 * programs read accented names right; GeoJSON properties as typed JSON values.
 */
import type { Request, Response } from 'express';
import wkx from 'wkx';
import type { JsonApiServices } from './handlers/services.ts';
import type { ResourceType } from '../model/registry.ts';
import type { Principal } from '../access/principal.ts';
import { fieldsetsToRead, type JsonApiQuery } from './query/index.ts';
import type { QueryCompiler } from './collection/compile.ts';
import type { ResourceObject } from './serialize.ts';
import { fetchPage } from './collection/page.ts';
import { listCondition, viewCondition } from '../access/policy.ts';
import { badParameter } from '../errors.ts';
import { quoted } from './coerce.ts';

/** A resource object with both members, empty or not: the columns of an export come from them. */
type Resource = Required<ResourceObject>;

function withAllMembers(r: ResourceObject): Resource {
  return { ...r, attributes: r.attributes ?? {}, relationships: r.relationships ?? {} };
}

export type ExportFormat = 'csv' | 'geojson' | 'kml';

const MEDIA_TYPES: Record<ExportFormat, string> = {
  csv: 'text/csv; charset=utf-8',
  geojson: 'application/geo+json',
  kml: 'application/vnd.google-earth.kml+xml',
};

/** Records read and written per batch. */
const BATCH = 200;

/**
 * Drupal's bookkeeping, not the farm's: language and revision flags, the revision's id, author and
 * time (farmOS's CSV export removes `default_langcode`, `revision_translation_affected`,
 * `revision_created` and `revision_user`, and has no column for the rest). Left out of every export.
 */
const INTERNAL = new Set([
  'langcode',
  'default_langcode',
  'revision_translation_affected',
  'revision_default',
  'revision_created',
  'revision_user',
  'drupal_internal__revision_id',
]);

/** So that spreadsheet programs (Excel above all) read the CSV as UTF-8, accents and all. */
const BYTE_ORDER_MARK = '\uFEFF';

/** The export format a request asks for, or null for a JSON:API document. */
export function exportFormat(req: Request, query: JsonApiQuery): ExportFormat | null {
  const format = query.params._format;
  if (format !== undefined) {
    if (format === 'csv' || format === 'geojson' || format === 'kml') return format;
    if (format === 'json' || format === 'api_json') return null;
    throw badParameter(
      '_format',
      `The _format ${quoted(format)} is not known here: use csv, geojson or kml, or leave it out for JSON:API.`,
    );
  }
  return exportFormatOfAccept(req.headers.accept ?? '');
}

/** The export format an Accept header asks for, or null. */
export function exportFormatOfAccept(accept: string): ExportFormat | null {
  if (/\btext\/csv\b/.test(accept)) return 'csv';
  if (/\bapplication\/geo\+json\b/.test(accept)) return 'geojson';
  if (/\bapplication\/vnd\.google-earth\.kml\+xml\b/.test(accept)) return 'kml';
  return null;
}

/** A flat, readable value of an attribute: long text's value, a fraction's decimal, a geometry's WKT. */
function flatten(value: unknown): string {
  if (value === null || value === undefined) return '';
  if (Array.isArray(value)) return value.map(flatten).filter(Boolean).join(', ');
  if (typeof value === 'object') {
    const v = value as Record<string, unknown>;
    if ('decimal' in v) return String(v.decimal ?? '');
    if ('value' in v) return String(v.value ?? '');
    if ('id' in v && 'type' in v) return [v.type, v.id].filter(Boolean).join(' ');
    return JSON.stringify(v);
  }
  return String(value);
}

/**
 * An attribute as a typed JSON value for GeoJSON properties: numbers (decimals and fractions too)
 * and booleans as such, an empty value as null, anything else as its flat text.
 */
function typed(type: string | undefined, value: unknown): unknown {
  if (value === null || value === undefined) return null;
  if (typeof value === 'boolean' || typeof value === 'number') return value;
  if (type === 'decimal' && typeof value === 'string' && value.trim() !== '' && Number.isFinite(Number(value)))
    return Number(value);
  if (type === 'fraction' && typeof value === 'object' && !Array.isArray(value)) {
    const decimal = (value as { decimal?: unknown }).decimal;
    return decimal === null || decimal === undefined || decimal === '' ? null : Number(decimal);
  }
  if (Array.isArray(value) && !value.length) return null;
  const text = flatten(value);
  return text === '' ? null : text;
}

/** A number as JSON writes it: left bare, so that spreadsheets read it as a number (it is no formula). */
const PLAIN_NUMBER = /^-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?$/;
/**
 * A formula after a separator a spreadsheet may split on (`,` `;` tab `|`), for a spreadsheet
 * that ignores the quotes: `=` and `@` always, `+` and `-` unless a number or a space follows.
 */
const FORMULA_AFTER_SEPARATOR = /([,;\t|]\s*)(=|@|[+-](?=[^\d.\s]))/g;

/**
 * One CSV cell that no spreadsheet runs as a formula (OWASP's CSV injection guidance): a leading
 * = + - @ tab or CR is neutralised with a quote mark, and so is a formula after a separator (in a
 * locale that splits on `;`, `x;=1+1` would otherwise be two cells, the second a formula); every
 * text cell is quoted. Numbers stay bare.
 */
function csvCell(text: string): string {
  if (text === '' || PLAIN_NUMBER.test(text)) return text;
  const safe = (/^[=+\-@\t\r]/.test(text) ? `'${text}` : text).replace(FORMULA_AFTER_SEPARATOR, "$1'$2");
  return `"${safe.replace(/"/g, '""')}"`;
}

const xml = (s: string) =>
  s.replace(/[<>&'"]/g, (c) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;', "'": '&apos;', '"': '&quot;' })[c]!);

/** GeoJSON geometry as KML. */
function kmlGeometry(g: { type: string; coordinates?: unknown; geometries?: unknown[] }): string {
  const coords = (c: number[][]) => c.map((p) => p.slice(0, 3).join(',')).join(' ');
  switch (g.type) {
    case 'Point':
      return `<Point><coordinates>${(g.coordinates as number[]).slice(0, 3).join(',')}</coordinates></Point>`;
    case 'LineString':
      return `<LineString><coordinates>${coords(g.coordinates as number[][])}</coordinates></LineString>`;
    case 'Polygon': {
      const [outer, ...inner] = g.coordinates as number[][][];
      return `<Polygon><outerBoundaryIs><LinearRing><coordinates>${coords(outer ?? [])}</coordinates></LinearRing></outerBoundaryIs>${inner.map((r) => `<innerBoundaryIs><LinearRing><coordinates>${coords(r)}</coordinates></LinearRing></innerBoundaryIs>`).join('')}</Polygon>`;
    }
    case 'MultiPoint':
    case 'MultiLineString':
    case 'MultiPolygon': {
      const single = g.type.slice(5);
      return `<MultiGeometry>${(g.coordinates as unknown[]).map((c) => kmlGeometry({ type: single, coordinates: c })).join('')}</MultiGeometry>`;
    }
    case 'GeometryCollection':
      return `<MultiGeometry>${(g.geometries as Array<typeof g>).map(kmlGeometry).join('')}</MultiGeometry>`;
    default:
      return '';
  }
}

function geometryOf(resource: Resource): { type: string; coordinates?: unknown } | null {
  const wkt = flatten(resource.attributes.geometry ?? resource.attributes.intrinsic_geometry);
  if (!wkt) return null;
  try {
    return wkx.Geometry.parse(wkt).toGeoJSON() as { type: string; coordinates?: unknown };
  } catch {
    return null;
  }
}

/** Write, waiting when the client reads slower than we write (so memory stays flat). */
async function write(res: Response, chunk: string): Promise<void> {
  if (!res.write(chunk))
    await new Promise<void>((resolve, reject) => {
      res.once('drain', resolve);
      res.once('close', () => reject(new Error('the client went away')));
    });
}

export async function sendExport(
  s: JsonApiServices,
  compiler: QueryCompiler,
  res: Response,
  rt: ResourceType,
  query: JsonApiQuery,
  principal: Principal,
  format: ExportFormat,
): Promise<void> {
  // The first batch is fetched before anything is sent, so that a bad query is still a clean error.
  let page = { offset: 0, limit: BATCH } as { offset: number; limit: number; cursor?: string };
  const at = query.asOf ?? undefined;
  let batch = await fetchPage(s.knex, compiler, rt, query.filter, query.sort, page, principal, at);
  const columns = new Map<string, 'attribute' | 'relationship'>();
  let headed = false;
  let features = 0;
  const filename = `${rt.entityType.entityType}-${rt.bundle.bundle}.${format}`;
  const fieldTypes = new Map(rt.bundle.fields.map((f) => [f.name, f.type as string]));
  res
    .status(200)
    .type(MEDIA_TYPES[format])
    .set('Content-Disposition', `attachment; filename="${filename}"`)
    .set('Cache-Control', 'private, no-store');
  for (;;) {
    const records = await s.loader.load(
      s.knex,
      rt.entityType.entityType,
      batch.ids,
      fieldsetsToRead(query.fields, query.include),
      at,
      [rt.bundle.bundle],
    );
    const resources = records.map((r) =>
      // The columns are the request's shape's (an asset's 4.x `archived` a boolean column).
      withAllMembers(s.serializer.resourceObject(r, principal, query.fields.get(rt.type), s.shape(res))),
    );
    const labels = await relatedLabels(s, resources, principal, (ref) => !isQuantity(ref));
    for (const [uuid, text] of await quantityTexts(s, resources, principal, at)) labels.set(uuid, text);
    // A configuration record (a log's log_type, an asset's asset_type) has no row to name it: its
    // machine name, the relationship's target id, is what farmOS shows and the bundle is called.
    const name = (ref: Ref) => labels.get(ref.id) ?? ref.meta?.drupal_internal__target_id?.toString() ?? '';
    let out = '';
    if (!headed) {
      // The columns: what the first batch shows (the fields the caller may see), in field order.
      for (const r of resources) {
        for (const k of Object.keys(r.attributes)) if (!INTERNAL.has(k)) columns.set(k, 'attribute');
        for (const k of Object.keys(r.relationships)) if (!INTERNAL.has(k)) columns.set(k, 'relationship');
      }
      if (!columns.size)
        for (const f of rt.bundle.fields) if (!f.internal && !INTERNAL.has(f.name)) columns.set(f.name, f.kind);
      out +=
        format === 'csv'
          ? `${BYTE_ORDER_MARK}${['id', 'type', ...[...columns].flatMap(([k, kind]) => (kind === 'relationship' ? [k, `${k}.id`] : [k]))].map(csvCell).join(',')}\r\n`
          : format === 'geojson'
            ? '{"type":"FeatureCollection","features":['
            : `<?xml version="1.0" encoding="UTF-8"?>\n<kml xmlns="http://www.opengis.net/kml/2.2"><Document><name>${xml(`${s.ctx.config.farmName}: ${rt.bundle.label}`)}</name>\n`;
      headed = true;
    }
    for (const r of resources) {
      const related = (k: string) => refsOf(r.relationships[k]);
      if (format === 'csv') {
        const cells = [r.id, r.type];
        for (const [k, kind] of columns) {
          if (kind === 'relationship')
            cells.push(
              related(k).map(name).join(', '),
              related(k)
                .map((x) => x.id)
                .join(', '),
            );
          else cells.push(flatten(r.attributes[k]));
        }
        out += `${cells.map(csvCell).join(',')}\r\n`;
        continue;
      }
      const geometry = geometryOf(r);
      if (!geometry) continue;
      const properties: Record<string, unknown> = { type: r.type };
      for (const [k, v] of Object.entries(r.attributes))
        if (k !== 'geometry' && k !== 'intrinsic_geometry' && !INTERNAL.has(k))
          properties[k] = typed(fieldTypes.get(k), v);
      for (const k of Object.keys(r.relationships))
        if (related(k).length && !INTERNAL.has(k)) properties[k] = related(k).map(name).join(', ');
      if (format === 'geojson')
        out += `${features ? ',' : ''}${JSON.stringify({ type: 'Feature', id: r.id, geometry, properties })}`;
      else
        out += `<Placemark id="${xml(r.id)}"><name>${xml(String(properties.name ?? properties.label ?? r.id))}</name><ExtendedData>${Object.entries(
          properties,
        )
          .map(([k, v]) => `<Data name="${xml(k)}"><value>${xml(v === null ? '' : String(v))}</value></Data>`)
          .join('')}</ExtendedData>${kmlGeometry(geometry)}</Placemark>\n`;
      features++;
    }
    if (out) await write(res, out);
    if (!batch.hasMore) break;
    page = {
      offset: page.offset + page.limit,
      limit: BATCH,
      ...(batch.nextCursor ? { cursor: batch.nextCursor } : {}),
    };
    batch = await fetchPage(s.knex, compiler, rt, query.filter, query.sort, page, principal, at);
  }
  res.end(format === 'csv' ? '' : format === 'geojson' ? ']}\n' : '</Document></kml>\n');
}

type Ref = { type: string; id: string; meta?: { drupal_internal__target_id?: string | number } };

const refsOf = (rel: unknown): Ref[] =>
  [(rel as { data?: unknown } | undefined)?.data ?? []].flat().filter(Boolean) as Ref[];

const isQuantity = (ref: Ref) => ref.type.startsWith('quantity--');

/**
 * The labels of the records a batch refers to (those `wanted` picks), one query per entity type,
 * hiding what the caller may not see.
 */
async function relatedLabels(
  s: JsonApiServices,
  resources: Resource[],
  principal: Principal,
  wanted: (ref: Ref) => boolean = () => true,
): Promise<Map<string, string>> {
  const byType = new Map<string, Set<string>>();
  for (const r of resources) {
    for (const rel of Object.values(r.relationships)) {
      for (const ref of refsOf(rel)) {
        if (!wanted(ref)) continue;
        const entityType = ref.type.split('--')[0]!;
        if (!s.ctx.registry.model.entityTypes[entityType] || ref.id === 'missing') continue;
        byType.set(entityType, (byType.get(entityType) ?? new Set()).add(ref.id));
      }
    }
  }
  const labels = new Map<string, string>();
  for (const [entityType, uuids] of byType) {
    const et = s.ctx.registry.model.entityTypes[entityType]!;
    const qb = s
      .knex(`${et.table} as e`)
      .whereIn('e.uuid', [...uuids])
      .select('e.uuid', `e.${et.labelField} as label`);
    // Labels of what the caller is shown: a blocked owner too, by name, as documents show it.
    listCondition(principal, et, 'e')?.(qb);
    for (const row of (await qb) as Array<{ uuid: string; label: string | null }>)
      labels.set(row.uuid, row.label ?? '');
  }
  return labels;
}

/**
 * The quantities a batch refers to, each as farmOS 2.x's log CSV wrote one: its label, its
 * measure in brackets, its value and its units ("picked (Weight) 12.5 kg"), leaving out what is
 * empty. Loaded for the whole batch at once (the quantities, then their units' names), hiding
 * what the caller may not see.
 */
async function quantityTexts(
  s: JsonApiServices,
  resources: Resource[],
  principal: Principal,
  at: number | undefined,
): Promise<Map<string, string>> {
  const texts = new Map<string, string>();
  const et = s.ctx.registry.model.entityTypes.quantity;
  if (!et) return texts;
  const uuids = new Set<string>();
  for (const r of resources)
    for (const rel of Object.values(r.relationships))
      for (const ref of refsOf(rel)) if (isQuantity(ref) && ref.id !== 'missing') uuids.add(ref.id);
  if (!uuids.size) return texts;
  const qb = s
    .knex(`${et.table} as e`)
    .whereIn('e.uuid', [...uuids])
    .select('e.id');
  viewCondition(principal, et, 'e')?.(qb);
  const ids = ((await qb) as Array<{ id: number }>).map((row) => row.id);
  if (!ids.length) return texts;
  const quantities = (await s.loader.load(s.knex, 'quantity', ids, null, at)).map((q) =>
    withAllMembers(s.serializer.resourceObject(q, principal)),
  );
  const units = await relatedLabels(s, quantities, principal, (ref) => ref.type === 'taxonomy_term--unit');
  for (const q of quantities) {
    const measure = q.attributes.measure;
    const measureField = s.ctx.registry.get(q.type)?.bundle.fields.find((f) => f.name === 'measure');
    const measureLabel =
      typeof measure === 'string' && measure
        ? (measureField?.allowedValues?.find((a) => a.value === measure)?.label ?? measure)
        : '';
    const unitNames = Object.values(q.relationships)
      .flatMap(refsOf)
      .filter((ref) => ref.type === 'taxonomy_term--unit')
      .map((ref) => units.get(ref.id) ?? '');
    const parts = [
      flatten(q.attributes.label),
      measureLabel ? `(${measureLabel})` : '',
      flatten(q.attributes.value),
      ...unitNames,
    ];
    texts.set(q.id, parts.filter(Boolean).join(' '));
  }
  return texts;
}
