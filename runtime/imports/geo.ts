/**
 * Shapes from a map file: the features of a GeoJSON file (a FeatureCollection, a Feature or a
 * bare geometry) or the placemarks of a KML file, each as a name and WKT, the form Tilth's
 * geometry fields take.
 */
import wkx from 'wkx';
import { XMLParser } from 'fast-xml-parser';

export interface Shape {
  /** Where it came from, for messages: "feature 3" or "placemark 3". */
  where: string;
  name: string | null;
  wkt: string;
  description: string | null;
}

export class GeoFileError extends Error {}

function nameFrom(properties: Record<string, unknown> | null | undefined): string | null {
  for (const key of ['name', 'Name', 'NAME', 'title', 'label']) {
    const v = properties?.[key];
    if (typeof v === 'string' && v.trim()) return v.trim();
  }
  return null;
}

export function shapesFromGeoJson(text: string): Shape[] {
  let doc: any;
  try {
    doc = JSON.parse(text);
  } catch (error) {
    throw new GeoFileError(`it is not valid JSON: ${(error as Error).message}`);
  }
  const features: any[] =
    doc?.type === 'FeatureCollection'
      ? (doc.features ?? [])
      : doc?.type === 'Feature'
        ? [doc]
        : doc?.type
          ? [{ type: 'Feature', geometry: doc, properties: {} }]
          : [];
  if (!features.length) throw new GeoFileError('it holds no GeoJSON features.');
  return features.map((f, i) => {
    const where = `feature ${i + 1}`;
    if (!f?.geometry) throw new GeoFileError(`${where} has no geometry.`);
    let wkt: string;
    try {
      wkt = wkx.Geometry.parseGeoJSON(f.geometry).toWkt();
    } catch (error) {
      throw new GeoFileError(`${where}: its geometry is not valid GeoJSON (${(error as Error).message}).`);
    }
    const description = typeof f.properties?.description === 'string' ? f.properties.description : null;
    return { where, name: nameFrom(f.properties), wkt, description };
  });
}

/** "lon,lat[,alt] lon,lat …" → [[lon, lat], …] */
function coordinates(text: unknown, where: string): number[][] {
  const points = String(text ?? '')
    .trim()
    .split(/\s+/)
    .filter(Boolean)
    .map((p) => p.split(',').slice(0, 2).map(Number));
  if (!points.length || points.some((p) => p.length < 2 || p.some((n) => !Number.isFinite(n))))
    throw new GeoFileError(`${where}: its coordinates are not "longitude,latitude" pairs.`);
  return points;
}

const list = <T>(v: T | T[] | undefined): T[] => (v === undefined ? [] : Array.isArray(v) ? v : [v]);

function kmlGeometries(node: any, where: string): object[] {
  const out: object[] = [];
  for (const p of list(node.Point)) out.push({ type: 'Point', coordinates: coordinates(p.coordinates, where)[0] });
  for (const l of list(node.LineString))
    out.push({ type: 'LineString', coordinates: coordinates(l.coordinates, where) });
  for (const poly of list(node.Polygon)) {
    const outer = coordinates(poly.outerBoundaryIs?.LinearRing?.coordinates, where);
    const inner = list(poly.innerBoundaryIs).map((b: any) => coordinates(b.LinearRing?.coordinates, where));
    out.push({ type: 'Polygon', coordinates: [outer, ...inner] });
  }
  for (const multi of list(node.MultiGeometry)) out.push(...kmlGeometries(multi, where));
  return out;
}

export function shapesFromKml(text: string): Shape[] {
  let doc: any;
  try {
    doc = new XMLParser({
      ignoreAttributes: true,
      removeNSPrefix: true,
      parseTagValue: false,
      processEntities: true,
    }).parse(text);
  } catch (error) {
    throw new GeoFileError(`it is not valid XML: ${(error as Error).message}`);
  }
  const placemarks: any[] = [];
  const walk = (node: any) => {
    if (!node || typeof node !== 'object') return;
    for (const [key, value] of Object.entries(node)) {
      if (key === 'Placemark') placemarks.push(...list(value));
      else for (const child of list(value)) walk(child);
    }
  };
  walk(doc?.kml ?? doc);
  if (!placemarks.length) throw new GeoFileError('it holds no KML placemarks.');
  return placemarks.map((p, i) => {
    const where = `placemark ${i + 1}`;
    const geometries = kmlGeometries(p, where);
    if (!geometries.length) throw new GeoFileError(`${where} has no Point, LineString or Polygon.`);
    const geometry = geometries.length === 1 ? geometries[0] : { type: 'GeometryCollection', geometries };
    const name = typeof p.name === 'string' && p.name.trim() ? p.name.trim() : null;
    return {
      where,
      name,
      wkt: wkx.Geometry.parseGeoJSON(geometry).toWkt(),
      description: typeof p.description === 'string' ? p.description : null,
    };
  });
}
