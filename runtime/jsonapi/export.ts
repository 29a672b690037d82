/**
 * Exports of a collection in formats spreadsheets and maps read: CSV (one row per record, related
 * records as names and UUIDs, as farmOS's CSV export writes them), GeoJSON and KML (the records
 * that have a geometry). Chosen with `_format=csv|geojson|kml` or the Accept header. The same
 * filters, sorts and access checks apply as to the JSON:API collection, but the 50-record page
 * limit does not: the export is streamed in batches that follow the keyset cursor, written as
 * the client reads, so memory stays flat whatever the size.
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
import { viewCondition } from '../access/policy.ts';
import { badParameter } from '../errors.ts';
import { quoted } from './coerce.ts';

export type ExportFormat = 'csv' | 'geojson' | 'kml';

const MEDIA_TYPES: Record<ExportFormat, string> = {
  csv: 'text/csv; charset=utf-8',
  geojson: 'application/geo+json',
  kml: 'application/vnd.google-earth.kml+xml',
};

/** Records read and written per batch. */
const BATCH = 200;

/** The export format a request asks for, or null for a JSON:API document. */
export function exportFormat(req: Request, query: JsonApiQuery): ExportFormat | null {
  const format = query.params._format;
  if (format !== undefined) {
    if (format === 'csv' || format === 'geojson' || format === 'kml') return format;
    if (format === 'json' || format === 'api_json') return null;
    throw badParameter('_format', `The _format ${quoted(format)} is not known here: use csv, geojson or kml, or leave it out for JSON:API.`);
  }
  const accept = req.headers.accept ?? '';
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

function csvCell(text: string): string {
  // A leading = + - @ would make a spreadsheet run a formula: neutralise it (OWASP CSV injection).
  const safe = /^[=+\-@\t\r]/.test(text) ? `'${text}` : text;
  return /[",\n\r]/.test(safe) ? `"${safe.replace(/"/g, '""')}"` : safe;
}

const xml = (s: string) => s.replace(/[<>&'"]/g, (c) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;', "'": '&apos;', '"': '&quot;' })[c]!);

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

function geometryOf(resource: ResourceObject): { type: string; coordinates?: unknown } | null {
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
  if (!res.write(chunk)) await new Promise<void>((resolve, reject) => {
    res.once('drain', resolve);
    res.once('close', () => reject(new Error('the client went away')));
  });
}

export async function sendExport(s: JsonApiServices, compiler: QueryCompiler, res: Response, rt: ResourceType, query: JsonApiQuery, principal: Principal, format: ExportFormat): Promise<void> {
  // The first batch is fetched before anything is sent, so that a bad query is still a clean error.
  let page = { offset: 0, limit: BATCH } as { offset: number; limit: number; cursor?: string };
  const at = query.asOf ?? undefined;
  let batch = await fetchPage(s.knex, compiler, rt, query.filter, query.sort, page, principal, at);
  const columns = new Map<string, 'attribute' | 'relationship'>();
  let headed = false;
  let features = 0;
  const filename = `${rt.entityType.entityType}-${rt.bundle.bundle}.${format}`;
  res.status(200).type(MEDIA_TYPES[format]).set('Content-Disposition', `attachment; filename="${filename}"`).set('Cache-Control', 'private, no-store');
  for (;;) {
    const records = await s.loader.load(s.knex, rt.entityType.entityType, batch.ids, fieldsetsToRead(query.fields, query.include), at, [rt.bundle.bundle]);
    const resources = records.map((r) => s.serializer.resourceObject(r, principal, query.fields.get(rt.type)));
    const labels = await relatedLabels(s, resources, principal);
    const name = (ref: { type: string; id: string }) => labels.get(ref.id) ?? '';
    let out = '';
    if (!headed) {
      // The columns: what the first batch shows (the fields the caller may see), in field order.
      for (const r of resources) {
        for (const k of Object.keys(r.attributes)) columns.set(k, 'attribute');
        for (const k of Object.keys(r.relationships)) columns.set(k, 'relationship');
      }
      if (!columns.size) for (const f of rt.bundle.fields) if (!f.internal) columns.set(f.name, f.kind);
      out +=
        format === 'csv'
          ? `${['id', 'type', ...[...columns].flatMap(([k, kind]) => (kind === 'relationship' ? [k, `${k}.id`] : [k]))].map(csvCell).join(',')}\r\n`
          : format === 'geojson'
            ? '{"type":"FeatureCollection","features":['
            : `<?xml version="1.0" encoding="UTF-8"?>\n<kml xmlns="http://www.opengis.net/kml/2.2"><Document><name>${xml(`${s.ctx.config.farmName}: ${rt.bundle.label}`)}</name>\n`;
      headed = true;
    }
    for (const r of resources) {
      const related = (k: string) => [(r.relationships[k] as { data?: unknown } | undefined)?.data ?? []].flat().filter(Boolean) as Array<{ type: string; id: string }>;
      if (format === 'csv') {
        const cells = [r.id, r.type];
        for (const [k, kind] of columns) {
          if (kind === 'relationship') cells.push(related(k).map(name).join(', '), related(k).map((x) => x.id).join(', '));
          else cells.push(flatten(r.attributes[k]));
        }
        out += `${cells.map(csvCell).join(',')}\r\n`;
        continue;
      }
      const geometry = geometryOf(r);
      if (!geometry) continue;
      const properties: Record<string, string> = { type: r.type };
      for (const [k, v] of Object.entries(r.attributes)) if (k !== 'geometry' && k !== 'intrinsic_geometry') properties[k] = flatten(v);
      for (const k of Object.keys(r.relationships)) if (related(k).length) properties[k] = related(k).map(name).join(', ');
      if (format === 'geojson') out += `${features ? ',' : ''}${JSON.stringify({ type: 'Feature', id: r.id, geometry, properties })}`;
      else
        out += `<Placemark id="${xml(r.id)}"><name>${xml(properties.name ?? properties.label ?? r.id)}</name><ExtendedData>${Object.entries(properties)
          .map(([k, v]) => `<Data name="${xml(k)}"><value>${xml(v)}</value></Data>`)
          .join('')}</ExtendedData>${kmlGeometry(geometry)}</Placemark>\n`;
      features++;
    }
    if (out) await write(res, out);
    if (!batch.hasMore) break;
    page = { offset: page.offset + page.limit, limit: BATCH, ...(batch.nextCursor ? { cursor: batch.nextCursor } : {}) };
    batch = await fetchPage(s.knex, compiler, rt, query.filter, query.sort, page, principal, at);
  }
  res.end(format === 'csv' ? '' : format === 'geojson' ? ']}\n' : '</Document></kml>\n');
}

/** The labels of the records a batch refers to, one query per entity type, hiding what the caller may not see. */
async function relatedLabels(s: JsonApiServices, resources: ResourceObject[], principal: Principal): Promise<Map<string, string>> {
  const byType = new Map<string, Set<string>>();
  for (const r of resources) {
    for (const rel of Object.values(r.relationships)) {
      for (const ref of [(rel as { data?: unknown }).data ?? []].flat() as Array<{ type: string; id: string }>) {
        const entityType = ref.type.split('--')[0]!;
        if (!s.ctx.registry.model.entityTypes[entityType] || ref.id === 'missing') continue;
        byType.set(entityType, (byType.get(entityType) ?? new Set()).add(ref.id));
      }
    }
  }
  const labels = new Map<string, string>();
  for (const [entityType, uuids] of byType) {
    const et = s.ctx.registry.model.entityTypes[entityType]!;
    const qb = s.knex(`${et.table} as e`).whereIn('e.uuid', [...uuids]).select('e.uuid', `e.${et.labelField} as label`);
    viewCondition(principal, et, 'e')?.(qb);
    for (const row of (await qb) as Array<{ uuid: string; label: string | null }>) labels.set(row.uuid, row.label ?? '');
  }
  return labels;
}
