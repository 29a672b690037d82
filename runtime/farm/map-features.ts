/**
 * What the farm map shows in one view (issue 42; farmOS issue #280: maps that will not open with
 * 29,000 areas): the assets whose geometry meets a bounding box, at a zoom, in the layers asked
 * for, never the whole farm at once. A bounded answer in a fixed number of statements, whatever
 * the farm holds:
 *
 * - Shapes: active fixed assets (land, structures, water, and any other fixed one) at their
 *   intrinsic geometry. The box lookup uses the geofield's bounding-box index (generator/storage.ts:
 *   left, right, bottom and top in one index). When the view holds at most SHAPES_MAX of them, all
 *   are sent; otherwise the largest on screen (at least BIG_PX across) up to SHAPES_MAX, and the
 *   rest as clusters: a count per cell of a grid of CELL_PX pixels at this zoom, per layer.
 * - Markers: active assets that are not fixed, at their computed geometry (farm/location.ts: the
 *   geometry of the movement log that placed them, from `asset_location`), always as cells of
 *   the grid, so that 10,000 animals in one paddock are one marker with its count; a cell of one
 *   asset is that asset, with its name and location.
 *
 * Cells are of a grid fixed to the world at each zoom (not to the view), so that a pan keeps them.
 */
import type { ModelRegistry } from '../model/registry.ts';
import { columnOf, fieldOf } from '../model/storage-of.ts';
import { ChangeCache } from '../storage/change-cache.ts';
import { dialectOf } from '../storage/dialect.ts';
import { quoteName, selectRows } from '../storage/sql.ts';
import type { Db } from '../storage/records.ts';
import { PLACEMENTS_TABLE } from './placements.ts';

/** Shapes sent at most in one answer. */
export const SHAPES_MAX = 1000;
/** A shape this wide or tall on screen (in pixels) is drawn as itself even in a crowded view. */
const BIG_PX = 24;
/** The side of a cluster's cell, in pixels at the view's zoom. */
export const CELL_PX = 56;
/** Cells sent at most in one answer, per kind (a view of 1920 × 1080 px has about 700). */
const CELLS_MAX = 4000;

/** [west, south, east, north] in degrees (EPSG:4326). */
export type BBox = [number, number, number, number];

export interface MapView {
  bbox: BBox;
  zoom: number;
  /** Asset bundles to show. */
  bundles: string[];
  /** Unix seconds: where assets are now. */
  now: number;
}

export interface ShapeRow {
  uuid: string;
  bundle: string;
  name: string;
  isLocation: boolean;
  wkt: string;
}

export interface CellRow {
  bundle: string;
  count: number;
  lon: number;
  lat: number;
  /** The one asset of a cell of one. */
  one: { uuid: string; name: string; location: string | null; locationUuid: string | null } | null;
}

export interface MapAnswer {
  shapes: ShapeRow[];
  /** Fixed assets too small or too many to draw, counted per cell. */
  clusters: CellRow[];
  /** Assets that are not fixed, per cell. */
  markers: CellRow[];
  /** More shapes met the view than were sent as shapes (the rest are in `clusters`). */
  crowded: boolean;
  /** Fixed assets in the view. */
  total: number;
}

/** Degrees of longitude per pixel at a zoom of the web's tiles (256 px tiles). */
export function degreesPerPixel(zoom: number): number {
  return 360 / (256 * 2 ** zoom);
}

interface Layout {
  asset: string;
  log: string;
  status: string;
  isFixed: string;
  isLocation: string | null;
  name: string;
  /** The asset's intrinsic geometry: value, left, right, bottom, top, lat, lon. */
  own: Record<'value' | 'left' | 'right' | 'bottom' | 'top' | 'lat' | 'lon', string>;
  /** A log's geometry (where a movement put its assets). */
  logGeo: Record<'left' | 'right' | 'bottom' | 'top' | 'lat' | 'lon', string>;
}

export class MapFeatures {
  private readonly layout: Layout | null;
  /** The farm's extent by the layers asked for, while the database is unchanged. */
  private readonly extents = new ChangeCache<BBox | null>(64);

  constructor(registry: ModelRegistry) {
    const assetType = registry.model.entityTypes.asset;
    const logType = registry.model.entityTypes.log;
    const a = (name: string, p = 'value') => columnOf(fieldOf(registry, 'asset', name), p);
    const l = (p: string) => columnOf(fieldOf(registry, 'log', 'geometry'), p);
    const own = Object.fromEntries(
      (['value', 'left', 'right', 'bottom', 'top', 'lat', 'lon'] as const).map((p) => [p, a('intrinsic_geometry', p)]),
    );
    const logGeo = Object.fromEntries(
      (['left', 'right', 'bottom', 'top', 'lat', 'lon'] as const).map((p) => [p, l(p)]),
    );
    const status = a('status');
    const isFixed = a('is_fixed');
    const name = a('name');
    this.layout =
      assetType &&
      logType &&
      status &&
      isFixed &&
      name &&
      Object.values(own).every(Boolean) &&
      Object.values(logGeo).every(Boolean)
        ? {
            asset: assetType.table,
            log: logType.table,
            status,
            isFixed,
            isLocation: a('is_location'),
            name,
            own: own as Layout['own'],
            logGeo: logGeo as Layout['logGeo'],
          }
        : null;
  }

  /** The view's features: four statements (a count, shapes, clusters, markers), whatever the view holds. */
  async view(db: Db, view: MapView): Promise<MapAnswer> {
    const empty: MapAnswer = { shapes: [], clusters: [], markers: [], crowded: false, total: 0 };
    const L = this.layout;
    if (!L || !view.bundles.length) return empty;
    const q = quoteName;
    const [w, s, e, n] = view.bbox;
    const dpp = degreesPerPixel(view.zoom);
    const cell = dpp * CELL_PX;
    const inList = view.bundles.map(() => '?').join(', ');
    const postgres = dialectOf(db).name === 'postgres';
    const floor = (x: string) => (postgres ? `CAST(FLOOR(${x}) AS BIGINT)` : `CAST(${x} AS INTEGER)`);
    // SQLite, with no statistics, prefers an index of equalities (bundle and is_fixed, bundle and
    // status: every field of the farm) to the bounding box's range, and read all 30,000 rows of
    // the bench's farm for a view of a hundred (bench/map.ts, M1). A unary + keeps a column's
    // condition off any index (SQLite's documented way), so the box's index is the one used.
    // PostgreSQL plans from its statistics and has no such operator on text: as written.
    const noIndex = (column: string) => (postgres ? column : `+${column}`);
    // The box lookup (the index's four columns), then the rest of the conditions, each a column of
    // the map's index (core migration 0018): the count and the clusters read no asset row. (A
    // shape with a box has a value: the box is derived from it.)
    const fixedWhere = `${q(L.own.left)} <= ? AND ${q(L.own.right)} >= ? AND ${q(L.own.bottom)} <= ? AND ${q(L.own.top)} >= ?
      AND ${noIndex('a.bundle')} IN (${inList}) AND ${noIndex(`a.${q(L.status)}`)} = ? AND ${noIndex(`a.${q(L.isFixed)}`)} = ?`;
    const fixedArgs = [e, w, n, s, ...view.bundles, 'active', true];

    const [{ total }] = await selectRows<{ total: number | string }>(
      db,
      `SELECT COUNT(*) AS total FROM ${q(L.asset)} a WHERE ${fixedWhere}`,
      fixedArgs,
    ).then((rows) => rows.map((r) => ({ total: Number(r.total) })));
    const crowded = total > SHAPES_MAX;
    const big = BIG_PX * dpp;
    // Crowded: the biggest on screen as shapes, the others (and any beyond the cap) counted per cell.
    const sizeCond = crowded
      ? ` AND (${q(L.own.right)} - ${q(L.own.left)} >= ? OR ${q(L.own.top)} - ${q(L.own.bottom)} >= ?)`
      : '';
    const shapeRows = await selectRows<Record<string, unknown>>(
      db,
      `SELECT a.id, a.uuid, a.bundle, a.${q(L.name)} AS name, ${L.isLocation ? `a.${q(L.isLocation)}` : 'NULL'} AS is_location, a.${q(L.own.value)} AS wkt
       FROM ${q(L.asset)} a WHERE ${fixedWhere}${sizeCond}
       ORDER BY (${q(L.own.right)} - ${q(L.own.left)}) + (${q(L.own.top)} - ${q(L.own.bottom)}) DESC, a.id LIMIT ?`,
      [...fixedArgs, ...(crowded ? [big, big] : []), SHAPES_MAX],
    );
    const shapes = shapeRows.map((r) => ({
      uuid: String(r.uuid),
      bundle: String(r.bundle),
      name: String(r.name ?? ''),
      isLocation: r.is_location === true || Number(r.is_location) === 1,
      wkt: String(r.wkt),
    }));
    let clusters: CellRow[] = [];
    if (crowded) {
      // Those not sent as shapes, by their centroid's cell: the shapes sent are left out by size
      // (the same condition, negated), or, when the cap cut the big ones, by id (the shapes sent
      // were counted in their cells too, each twice on the map: a cluster said 3 over two fields
      // drawn and one not).
      const cut = shapeRows.length >= SHAPES_MAX;
      const notShape = cut
        ? ` AND a.id NOT IN (${shapeRows.map(() => '?').join(', ')})`
        : ` AND NOT (${q(L.own.right)} - ${q(L.own.left)} >= ? OR ${q(L.own.top)} - ${q(L.own.bottom)} >= ?)`;
      const cx = floor(`(a.${q(L.own.lon)} + 180) / ?`);
      const cy = floor(`(a.${q(L.own.lat)} + 90) / ?`);
      // Counted from the index; the name and UUID read only for a cell of one, by its id.
      const rows = await selectRows<Record<string, unknown>>(
        db,
        `WITH cells AS (
           SELECT a.bundle AS bundle, ${cx} AS cx, ${cy} AS cy, COUNT(*) AS n, AVG(a.${q(L.own.lon)}) AS lon, AVG(a.${q(L.own.lat)}) AS lat, MIN(a.id) AS one_id
           FROM ${q(L.asset)} a WHERE ${fixedWhere}${notShape}
           GROUP BY 1, 2, 3 LIMIT ?)
         SELECT c.bundle, c.n, c.lon, c.lat, o.uuid, o.${q(L.name)} AS name
         FROM cells c LEFT JOIN ${q(L.asset)} o ON o.id = c.one_id AND c.n = 1`,
        [cell, cell, ...fixedArgs, ...(cut ? shapeRows.map((r) => Number(r.id)) : [big, big]), CELLS_MAX],
      );
      clusters = rows.map((r) => cellOf(r, null));
    }

    // Assets that are not fixed, where their movement put them now: the log's geometry's centroid.
    // From the logs whose geometry meets the view (the log's box index), to their placements
    // (by log) and assets: on SQLite in that order (CROSS JOIN keeps it; it chose to read every
    // placement of the farm first).
    const lx = floor(`(g.${q(L.logGeo.lon)} + 180) / ?`);
    const ly = floor(`(g.${q(L.logGeo.lat)} + 90) / ?`);
    const markerRows = await selectRows<Record<string, unknown>>(
      db,
      `SELECT a.bundle, ${lx} AS cx, ${ly} AS cy, COUNT(DISTINCT a.id) AS n, AVG(g.${q(L.logGeo.lon)}) AS lon, AVG(g.${q(L.logGeo.lat)}) AS lat,
         MIN(CAST(a.uuid AS TEXT)) AS uuid, MIN(a.${q(L.name)}) AS name, MIN(t.${q(L.name)}) AS location, MIN(CAST(t.uuid AS TEXT)) AS location_uuid
       FROM ${q(L.log)} g
       ${postgres ? 'JOIN' : 'CROSS JOIN'} ${q(PLACEMENTS_TABLE)} p ON p.log_id = g.id
       JOIN ${q(L.asset)} a ON a.id = p.entity_id
       LEFT JOIN ${q(L.asset)} t ON t.id = p.target_id
       WHERE g.${q(L.logGeo.left)} <= ? AND g.${q(L.logGeo.right)} >= ? AND g.${q(L.logGeo.bottom)} <= ? AND g.${q(L.logGeo.top)} >= ?
         AND g.${q(L.logGeo.lon)} BETWEEN ? AND ? AND g.${q(L.logGeo.lat)} BETWEEN ? AND ?
         AND p.start_ts <= ? AND (p.end_ts IS NULL OR p.end_ts > ?)
         AND ${noIndex('a.bundle')} IN (${inList}) AND ${noIndex(`a.${q(L.status)}`)} = ? AND (${noIndex(`a.${q(L.isFixed)}`)} IS NULL OR ${noIndex(`a.${q(L.isFixed)}`)} = ?)
       GROUP BY 1, 2, 3 LIMIT ?`,
      [cell, cell, e, w, n, s, w, e, s, n, view.now, view.now, ...view.bundles, 'active', false, CELLS_MAX],
    );
    const markers = markerRows.map((r) => cellOf(r, r));
    return { shapes, clusters, markers, crowded, total };
  }

  /**
   * The farm's extent: the box around every active fixed asset's shape, or null when there is
   * none. Read from the map's index alone (core migration 0018), and kept until the database
   * changes (on SQLite, storage/change-cache.ts): every dashboard and every form with a geometry
   * asks for it, and on the bench's farm of 30,000 fields it is a pass over 30,000 entries.
   */
  async extent(db: Db, bundles: string[]): Promise<BBox | null> {
    const L = this.layout;
    if (!L || !bundles.length) return null;
    const key = bundles.join(',');
    const { version, kept } = this.extents.get(db, key);
    if (kept !== undefined) return kept;
    const q = quoteName;
    const noIndex = (column: string) => (dialectOf(db).name === 'postgres' ? column : `+${column}`);
    const [row] = await selectRows<Record<string, unknown>>(
      db,
      `SELECT MIN(${q(L.own.left)}) AS w, MIN(${q(L.own.bottom)}) AS s, MAX(${q(L.own.right)}) AS e, MAX(${q(L.own.top)}) AS n
       FROM ${q(L.asset)} a WHERE ${noIndex('a.bundle')} IN (${bundles.map(() => '?').join(', ')}) AND ${noIndex(`a.${q(L.status)}`)} = ? AND ${noIndex(`a.${q(L.isFixed)}`)} = ? AND ${q(L.own.left)} IS NOT NULL`,
      [...bundles, 'active', true],
    );
    const box = [row?.w, row?.s, row?.e, row?.n].map((v) => (v === null || v === undefined ? NaN : Number(v)));
    const extent = box.every(Number.isFinite) ? (box as BBox) : null;
    this.extents.set(key, extent, version);
    return extent;
  }
}

function cellOf(r: Record<string, unknown>, placed: Record<string, unknown> | null): CellRow {
  const count = Number(r.n);
  return {
    bundle: String(r.bundle),
    count,
    lon: Number(r.lon),
    lat: Number(r.lat),
    one:
      count === 1
        ? {
            uuid: String(r.uuid),
            name: String(r.name ?? ''),
            location:
              placed && placed.location !== null && placed.location !== undefined ? String(placed.location) : null,
            locationUuid: placed && placed.location_uuid ? String(placed.location_uuid) : null,
          }
        : null,
  };
}
