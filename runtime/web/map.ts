/**
 * The farm map's server side (issue 42 part 1): the features of one view as GeoJSON, behind the
 * same sign-in and permissions as every page, and the markup the map's script (browser/map.ts)
 * enhances: the dashboard's map, a record's small map, and the geometry widget's settings. With
 * no script, none of it shows and every page works as before (a geometry stays a WKT textarea).
 *
 *   GET /farm/map/features?bbox=<west>,<south>,<east>,<north>&zoom=<0–24>&layers=<bundle>,…
 *
 * answers a FeatureCollection of at most SHAPES_MAX shapes and a bounded number of clusters and
 * markers (farm/map-features.ts: an indexed box lookup in four statements, whatever the farm
 * holds); shapes are simplified to a pixel at the zoom. Not signed in: 401; a person who may not
 * view assets: 403; a bad parameter: 400 naming it; each a JSON:API error document.
 */
import type { Request, Response, Router } from 'express';
import express from 'express';
import wkx from 'wkx';
import type { AppContext } from '../context.ts';
import type { Principal } from '../access/principal.ts';
import { mayOnType } from '../access/policy.ts';
import { ApiError, badParameter, forbidden } from '../errors.ts';
import { jsonApiErrorDocument } from '../jsonapi/errors.ts';
import { MapFeatures, degreesPerPixel, type BBox, type CellRow, type MapAnswer } from '../farm/map-features.ts';
import { html, type Html } from './html.ts';
import { MAP_M } from './messages.ts';
import type { WebSessions } from './session.ts';

export const MAP_FEATURES_PATH = '/farm/map/features';

/**
 * Each layer's legend colour, by asset type. farmOS gives asset types no colour of their own, so
 * this is the one palette: a type not named here takes the next of SPARE, in the order of types.
 * Each has a contrast of at least 3:1 on the map's plain background (WCAG's for graphics).
 */
export const LAYER_COLOURS: Readonly<Record<string, string>> = {
  land: '#2e7d32',
  structure: '#8d4e1f',
  water: '#1565c0',
  animal: '#ad1457',
  plant: '#558b2f',
  equipment: '#5e35b1',
  group: '#c43e00',
  sensor: '#00838f',
  compost: '#6d4c41',
  material: '#546e7a',
  product: '#6a1b9a',
  seed: '#8a6d00',
};
const SPARE = ['#283593', '#00695c', '#9e2a2b', '#4e342e', '#37474f', '#827717'];

/** A layer as the script gets it. */
export interface LayerSpec {
  id: string;
  label: string;
  colour: string;
}

const MAPS = new WeakMap<AppContext, MapPages>();

export class MapPages {
  private readonly features: MapFeatures;

  /** The farm's map pages, made once per farm. */
  static of(ctx: AppContext): MapPages {
    let made = MAPS.get(ctx);
    if (!made) MAPS.set(ctx, (made = new MapPages(ctx)));
    return made;
  }

  private constructor(private readonly ctx: AppContext) {
    this.features = new MapFeatures(ctx.registry);
  }

  /** Every asset type as a layer, for a person who may view assets; none otherwise. */
  layers(principal: Principal): LayerSpec[] {
    const bundles = this.ctx.registry.bundlesOf('asset');
    if (!bundles.length || !mayOnType(principal, bundles[0]!.entityType, 'view')) return [];
    let spare = 0;
    return bundles.map((rt) => ({
      id: rt.bundle.bundle,
      label: this.ctx.generated.ui.get(rt.type)?.label ?? rt.bundle.bundle,
      colour: LAYER_COLOURS[rt.bundle.bundle] ?? SPARE[spare++ % SPARE.length]!,
    }));
  }

  /** What a map element's data-map (or a widget's data-geometry-widget) holds, as JSON. */
  private spec(principal: Principal, extra: Record<string, unknown>): string {
    const tiles = this.ctx.config.mapTiles;
    return JSON.stringify({
      features: MAP_FEATURES_PATH,
      layers: this.layers(principal),
      extent: null,
      tiles: tiles ? { url: tiles.url, attribution: tiles.attribution } : null,
      labels: {
        truncated: MAP_M.truncated,
        failed: MAP_M.failed,
        close: MAP_M.close,
        zoomIn: MAP_M.zoomIn,
        location: MAP_M.location,
        recordLog: MAP_M.recordLog,
        tools: MAP_M.tools,
        widgetMap: MAP_M.widgetMap,
        point: MAP_M.point,
        line: MAP_M.line,
        polygon: MAP_M.polygon,
        modify: MAP_M.modify,
        move: MAP_M.move,
        delete: MAP_M.delete,
        clear: MAP_M.clear,
        here: MAP_M.here,
      },
      ...extra,
    });
  }

  /** The layers' legend: a checkbox each (switched on by the script), with its colour. */
  private legend(layers: LayerSpec[]): Html {
    return html`<fieldset class="map-layers"><legend>${MAP_M.layers}</legend>${layers.map(
      (l) =>
        html`<label class="choice"><input type="checkbox" data-map-layer value="${l.id}" checked disabled> <svg width="16" height="16" aria-hidden="true" focusable="false"><rect width="16" height="16" rx="3" fill="${l.colour}"/></svg> ${l.label}</label>`,
    )}</fieldset>`;
  }

  /** The dashboard's map: the farm's extent, its layers and legend; nothing for a person who may not view assets. */
  async dashboardCard(principal: Principal): Promise<Html | string> {
    const layers = this.layers(principal);
    if (!layers.length) return '';
    const extent = await this.features.extent(
      this.ctx.db.knex,
      layers.map((l) => l.id),
    );
    return html`<section class="card map-card" data-map-section hidden aria-labelledby="farm-map"><h2 id="farm-map">${MAP_M.title}</h2><p class="help" id="farm-map-help">${MAP_M.help}</p><div class="map" data-map="${this.spec(principal, { extent })}" role="region" aria-label="${MAP_M.farmMap}" aria-describedby="farm-map-help"></div><p class="muted" data-map-status role="status"></p>${this.legend(layers)}</section>`;
  }

  /**
   * A record's small map: its geometry, and the farm's features around it (a location's contents
   * among them, at its shape). Nothing for a record with no geometry.
   */
  recordMap(principal: Principal, name: string, geometry: unknown): Html | string {
    const wkt = (geometry as { value?: unknown } | null | undefined)?.value;
    if (typeof wkt !== 'string' || !wkt.trim()) return '';
    const layers = this.layers(principal);
    return html`<section class="card map-card" data-map-section hidden aria-labelledby="record-map"><h2 id="record-map">${MAP_M.title}</h2><div class="map small" data-map="${this.spec(principal, { wkt })}" role="region" aria-label="${MAP_M.recordMap(name)}"></div><p class="muted" data-map-status role="status"></p>${layers.length ? this.legend(layers) : ''}</section>`;
  }

  /** The geometry widget's settings, for a form's WKT textarea (widgets.ts): it opens on the farm. */
  async widgetSpec(principal: Principal): Promise<string> {
    const layers = this.layers(principal);
    const extent = await this.features.extent(
      this.ctx.db.knex,
      layers.map((l) => l.id),
    );
    return this.spec(principal, { extent });
  }

  /** GET /farm/map/features. */
  routes(web: WebSessions): Router {
    const router = express.Router();
    router.get(MAP_FEATURES_PATH, (req, res, next) => {
      this.answer(req, res, web).catch(next);
    });
    return router;
  }

  private async answer(req: Request, res: Response, web: WebSessions): Promise<void> {
    res.set('Cache-Control', 'no-store');
    try {
      const principal = await web.principal(req);
      if (!principal) throw new ApiError(401, MAP_M.signIn);
      const layers = this.layers(principal);
      if (!layers.length) throw forbidden(MAP_M.forbidden);
      const params = new URL(req.originalUrl, 'http://x').searchParams;
      const bbox = parseBbox(params.get('bbox'));
      const zoom = parseZoom(params.get('zoom'));
      const bundles = parseLayers(params.get('layers'), layers);
      const answer = await this.features.view(this.ctx.db.knex, {
        bbox,
        zoom,
        bundles,
        now: Math.floor(Date.now() / 1000),
      });
      res
        .status(200)
        .type('application/geo+json')
        .send(JSON.stringify(this.geojson(answer, zoom, principal, layers)));
    } catch (error) {
      if (!(error instanceof ApiError)) throw error;
      const doc = jsonApiErrorDocument(error, `${this.ctx.config.baseUrl}${req.originalUrl}`);
      res.status(doc.status).set(doc.headers).type('application/vnd.api+json').send(JSON.stringify(doc.body));
    }
  }

  /** The answer as GeoJSON: each feature's layer, kind, and what its popup says. */
  private geojson(answer: MapAnswer, zoom: number, principal: Principal, layers: LayerSpec[]): object {
    const label = new Map(layers.map((l) => [l.id, l.label]));
    const tolerance = degreesPerPixel(zoom);
    const logForm = this.logFormPath(principal);
    const recordLog = (params: Array<[string, string, string]>) =>
      logForm
        ? `${logForm}?${params.map(([field, name, uuid]) => `${field}=${encodeURIComponent(`${name} [${uuid}]`)}`).join('&')}`
        : null;
    const features: object[] = [];
    for (const s of answer.shapes) {
      const geometry = simplified(s.wkt, tolerance);
      if (!geometry) continue;
      features.push({
        type: 'Feature',
        geometry,
        properties: {
          kind: 'shape',
          layer: s.bundle,
          name: s.name,
          type: label.get(s.bundle) ?? s.bundle,
          url: `/farm/asset/${s.bundle}/${s.uuid}`,
          location: null,
          logUrl: s.isLocation ? recordLog([['location', s.name, s.uuid]]) : recordLog([['asset', s.name, s.uuid]]),
        },
      });
    }
    const cell = (c: CellRow, placed: boolean) => {
      const point = { type: 'Point', coordinates: [round(c.lon), round(c.lat)] };
      if (!c.one)
        return {
          type: 'Feature',
          geometry: point,
          properties: {
            kind: 'cluster',
            layer: c.bundle,
            count: c.count,
            label: `${label.get(c.bundle) ?? c.bundle}: ${c.count}`,
          },
        };
      const one = c.one;
      const log: Array<[string, string, string]> = [['asset', one.name, one.uuid]];
      if (placed && one.location && one.locationUuid) log.push(['location', one.location, one.locationUuid]);
      return {
        type: 'Feature',
        geometry: point,
        properties: {
          kind: 'point',
          layer: c.bundle,
          name: one.name,
          type: label.get(c.bundle) ?? c.bundle,
          url: `/farm/asset/${c.bundle}/${one.uuid}`,
          location: placed ? one.location : null,
          logUrl: recordLog(log),
        },
      };
    };
    for (const c of answer.clusters) features.push(cell(c, false));
    for (const c of answer.markers) features.push(cell(c, true));
    return { type: 'FeatureCollection', features, truncated: answer.crowded, total: answer.total };
  }

  /** A new log's form ("record a log here"): an activity, when the person may create logs. */
  private logFormPath(principal: Principal): string | null {
    const logs = this.ctx.registry.bundlesOf('log');
    const rt = logs.find((b) => b.bundle.bundle === 'activity') ?? logs[0];
    return rt && mayOnType(principal, rt.entityType, 'create') ? `/farm/log/${rt.bundle.bundle}/new` : null;
  }
}

/** 7 decimals of a degree: about a centimetre, and a third of the bytes of a double's 17 digits. */
function round(n: number): number {
  return Math.round(n * 1e7) / 1e7;
}

function parseBbox(raw: string | null): BBox {
  const parts = (raw ?? '').split(',').map((p) => (p.trim() === '' ? NaN : Number(p)));
  const [w, s, e, n] = parts;
  if (
    parts.length !== 4 ||
    !parts.every(Number.isFinite) ||
    w! < -180 ||
    e! > 180 ||
    s! < -90 ||
    n! > 90 ||
    w! > e! ||
    s! > n!
  )
    throw badParameter('bbox', MAP_M.badBbox);
  return [w!, s!, e!, n!];
}

function parseZoom(raw: string | null): number {
  if (raw === null || !/^\d{1,2}$/.test(raw) || Number(raw) > 24) throw badParameter('zoom', MAP_M.badZoom);
  return Number(raw);
}

/** The layers asked for (all, when the parameter is absent); an unknown name is a 400. An empty list is none. */
function parseLayers(raw: string | null, layers: LayerSpec[]): string[] {
  if (raw === null) return layers.map((l) => l.id);
  const asked = raw
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const known = new Set(layers.map((l) => l.id));
  const unknown = asked.filter((a) => !known.has(a));
  if (unknown.length) throw badParameter('layers', MAP_M.badLayers(unknown.slice(0, 5).join(', ')));
  return [...new Set(asked)];
}

type Position = number[];

/** Douglas–Peucker on one line of positions, within `tolerance` degrees. */
function simplifyLine(points: Position[], tolerance: number): Position[] {
  if (points.length <= 2) return points;
  const keep = new Uint8Array(points.length);
  keep[0] = keep[points.length - 1] = 1;
  const stack: Array<[number, number]> = [[0, points.length - 1]];
  const t2 = tolerance * tolerance;
  while (stack.length) {
    const [a, b] = stack.pop()!;
    const [ax, ay] = points[a]!;
    const [bx, by] = points[b]!;
    const dx = bx! - ax!;
    const dy = by! - ay!;
    const len2 = dx * dx + dy * dy;
    let worst = -1;
    let worstD = t2;
    for (let i = a + 1; i < b; i++) {
      const [px, py] = points[i]!;
      let t = len2 ? ((px! - ax!) * dx + (py! - ay!) * dy) / len2 : 0;
      t = Math.max(0, Math.min(1, t));
      const ex = ax! + t * dx - px!;
      const ey = ay! + t * dy - py!;
      const d = ex * ex + ey * ey;
      if (d > worstD) {
        worstD = d;
        worst = i;
      }
    }
    if (worst >= 0) {
      keep[worst] = 1;
      stack.push([a, worst], [worst, b]);
    }
  }
  return points.filter((_, i) => keep[i]);
}

/** A ring simplified, kept a ring (4 positions at least); the ring as it was when it would not be. */
function simplifyRing(ring: Position[], tolerance: number): Position[] {
  const out = simplifyLine(ring, tolerance);
  return out.length >= 4 ? out : ring;
}

function roundAll(points: Position[]): Position[] {
  return points.map((p) => [round(p[0]!), round(p[1]!)]);
}

/** A stored WKT as GeoJSON, simplified to `tolerance` degrees (a pixel at the view's zoom); null when it does not parse. */
export function simplified(text: string, tolerance: number): object | null {
  let g: { type: string; coordinates?: unknown; geometries?: unknown[] };
  try {
    g = wkx.Geometry.parse(text).toGeoJSON() as typeof g;
  } catch {
    return null;
  }
  const walk = (geo: typeof g): typeof g => {
    switch (geo.type) {
      case 'LineString':
        return { type: geo.type, coordinates: roundAll(simplifyLine(geo.coordinates as Position[], tolerance)) };
      case 'MultiLineString':
        return {
          type: geo.type,
          coordinates: (geo.coordinates as Position[][]).map((l) => roundAll(simplifyLine(l, tolerance))),
        };
      case 'Polygon':
        return {
          type: geo.type,
          coordinates: (geo.coordinates as Position[][]).map((r) => roundAll(simplifyRing(r, tolerance))),
        };
      case 'MultiPolygon':
        return {
          type: geo.type,
          coordinates: (geo.coordinates as Position[][][]).map((p) =>
            p.map((r) => roundAll(simplifyRing(r, tolerance))),
          ),
        };
      case 'GeometryCollection':
        return { type: geo.type, geometries: (geo.geometries as Array<typeof g>).map(walk) };
      default:
        return geo;
    }
  };
  return walk(g);
}
