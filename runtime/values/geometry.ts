/**
 * Geofield values: WKT in, and on output the properties the Drupal geofield module derives from
 * it (geometry type, centroid lat/lon, bounding box, geohash). Parsing uses wkx.
 */
import wkx from 'wkx';

export interface GeofieldValue {
  value: string;
  geo_type: string;
  lat: number;
  lon: number;
  left: number;
  top: number;
  right: number;
  bottom: number;
  geohash: string;
  latlon: string;
}

type Point = [number, number];

function rings(g: any): Point[][] {
  switch (g.constructor.name) {
    case 'Point':
      return [[[g.x, g.y]]];
    case 'LineString':
      return [g.points.map((p: any) => [p.x, p.y])];
    case 'Polygon':
      return [
        g.exteriorRing.map((p: any) => [p.x, p.y]),
        ...g.interiorRings.map((r: any[]) => r.map((p: any) => [p.x, p.y])),
      ];
    case 'MultiPoint':
    case 'MultiLineString':
    case 'MultiPolygon':
    case 'GeometryCollection':
      return (g.points ?? g.lineStrings ?? g.polygons ?? g.geometries).flatMap((x: any) => rings(x));
    default:
      return [];
  }
}

/** Area-weighted centroid for polygons, mean of vertices otherwise (close to geoPHP's centroid). */
function centroid(g: any): Point | null {
  const polygons: any[] =
    g.constructor.name === 'Polygon' ? [g] : g.constructor.name === 'MultiPolygon' ? g.polygons : [];
  let area = 0;
  let cx = 0;
  let cy = 0;
  for (const p of polygons) {
    const ring = p.exteriorRing as Array<{ x: number; y: number }>;
    for (let i = 0; i < ring.length - 1; i++) {
      const a = ring[i]!;
      const b = ring[i + 1]!;
      const cross = a.x * b.y - b.x * a.y;
      area += cross;
      cx += (a.x + b.x) * cross;
      cy += (a.y + b.y) * cross;
    }
  }
  if (area !== 0) return [cx / (3 * area), cy / (3 * area)];
  const pts = rings(g).flat();
  if (!pts.length) return null;
  return [pts.reduce((s, p) => s + p[0], 0) / pts.length, pts.reduce((s, p) => s + p[1], 0) / pts.length];
}

const BASE32 = '0123456789bcdefghjkmnpqrstuvwxyz';

export function geohash(lat: number, lon: number, precision = 12): string {
  let latRange = [-90, 90];
  let lonRange = [-180, 180];
  let hash = '';
  let bit = 0;
  let ch = 0;
  let even = true;
  while (hash.length < precision) {
    const range = even ? lonRange : latRange;
    const value = even ? lon : lat;
    const mid = (range[0]! + range[1]!) / 2;
    if (value >= mid) {
      ch |= 1 << (4 - bit);
      range[0] = mid;
    } else range[1] = mid;
    even = !even;
    if (bit < 4) bit++;
    else {
      hash += BASE32[ch];
      bit = 0;
      ch = 0;
    }
  }
  return hash;
}

/**
 * What makes a parsed geometry no shape a map can draw, or one off the Earth, in a sentence; null
 * when it is fine. Coordinates are longitude then latitude (EPSG:4326, as farmOS stores them).
 */
function shapeProblem(g: any): string | null {
  const name = g.constructor.name;
  if (name === 'GeometryCollection') {
    for (const member of g.geometries) {
      const problem = shapeProblem(member);
      if (problem) return problem;
    }
    return null;
  }
  if (name === 'MultiPoint' || name === 'MultiLineString' || name === 'MultiPolygon') {
    for (const member of g.points ?? g.lineStrings ?? g.polygons) {
      const problem = shapeProblem(member);
      if (problem) return problem;
    }
    return null;
  }
  if (name === 'LineString' && g.points.length < 2) return 'a line needs at least 2 points';
  if (name === 'Polygon') {
    for (const ring of [g.exteriorRing, ...g.interiorRings] as Array<Array<{ x: number; y: number }>>) {
      const first = ring[0];
      const last = ring[ring.length - 1];
      if (!first || !last || first.x !== last.x || first.y !== last.y)
        return "a polygon's ring must be closed: its last point the same as its first";
      if (ring.length < 4) return "a polygon's ring needs at least 4 points (3 corners and the first again)";
    }
  }
  for (const [lon, lat] of rings(g).flat()) {
    if (lat < -90 || lat > 90)
      return `latitude ${lat} is out of range (-90 to 90); WKT puts longitude first, then latitude`;
    if (lon < -180 || lon > 180)
      return `longitude ${lon} is out of range (-180 to 180); WKT puts longitude first, then latitude`;
  }
  return null;
}

function derive(g: any, text: string): GeofieldValue | null {
  const pts = rings(g).flat();
  if (!pts.length || pts.some((p) => !Number.isFinite(p[0]) || !Number.isFinite(p[1]))) return null;
  const xs = pts.map((p) => p[0]);
  const ys = pts.map((p) => p[1]);
  const c = centroid(g)!;
  const lat = c[1];
  const lon = c[0];
  return {
    value: text.trim(),
    geo_type: g.constructor.name,
    lat,
    lon,
    left: Math.min(...xs),
    top: Math.max(...ys),
    right: Math.max(...xs),
    bottom: Math.min(...ys),
    geohash: Math.abs(lat) <= 90 && Math.abs(lon) <= 180 ? geohash(lat, lon) : '',
    latlon: `${lat},${lon}`,
  };
}

function parse(text: string): any {
  try {
    return wkx.Geometry.parse(text.trim());
  } catch {
    return null;
  }
}

/**
 * Parse WKT into a geofield value with its derived properties; null if it is not valid WKT. Takes
 * what parses, as stored values are read back; new values go through `checkWkt`.
 */
export function parseWkt(text: string): GeofieldValue | null {
  const g = parse(text);
  return g ? derive(g, text) : null;
}

/** Whether two WKT texts draw the same shape, written alike or not (spaces, number forms); false if either does not parse. */
export function sameShape(a: string, b: string): boolean {
  const [ga, gb] = [parse(a), parse(b)];
  return Boolean(ga && gb && ga.toWkt() === gb.toWkt());
}

/**
 * A value sent to be stored: WKT that parses, and a shape a map can draw on the Earth (closed
 * polygon rings of at least 4 points, lines of at least 2, latitudes within ±90°, longitudes
 * within ±180°), with its derived properties; or why not, in a sentence.
 */
export function checkWkt(text: string): { ok: true; value: GeofieldValue } | { ok: false; problem: string } {
  const g = parse(text);
  const value = g ? derive(g, text) : null;
  if (!value) return { ok: false, problem: 'is not valid WKT (e.g. POINT (-72.5 42.3))' };
  const problem = shapeProblem(g);
  return problem ? { ok: false, problem: `is not a shape on the map: ${problem}` } : { ok: true, value };
}

/**
 * A coordinate in WKT: the shortest decimal that reads back as the same number, never in exponent
 * form (`5.5`, `6`, `-75.1234567`). farmOS writes WKT through geoPHP, by GEOS where its PHP
 * extension is installed (farmOS's Docker image) and by PHP's float conversion otherwise (14
 * significant digits); both agree with this for coordinates of up to 14 significant digits, and
 * Tilth loses nothing past them.
 */
export function wktNumber(v: number): string {
  if (Object.is(v, -0)) return '-0';
  const s = String(v);
  if (!/e/i.test(s)) return s;
  const [mantissa, exponent] = s.split(/e/i) as [string, string];
  const negative = mantissa.startsWith('-');
  const digits = mantissa.replace(/^-/, '').replace('.', '');
  const point =
    (mantissa.replace(/^-/, '').indexOf('.') < 0 ? digits.length : mantissa.replace(/^-/, '').indexOf('.')) +
    Number(exponent);
  const body =
    point <= 0
      ? `0.${'0'.repeat(-point)}${digits}`
      : point >= digits.length
        ? `${digits}${'0'.repeat(point - digits.length)}`
        : `${digits.slice(0, point)}.${digits.slice(point)}`;
  return `${negative ? '-' : ''}${body}`;
}

/** The name geoPHP gives a geometry's type. */
function geoPhpType(g: any): string {
  return g.constructor.name as string;
}

/** geoPHP's WKT::extractData: the inside of a geometry's WKT, or '' when it is empty. */
function extractData(g: any): string {
  switch (geoPhpType(g)) {
    case 'Point':
      return g.x === undefined || g.y === undefined ? '' : `${wktNumber(g.x)} ${wktNumber(g.y)}`;
    case 'LineString':
      return g.points.map(extractData).join(', ');
    case 'Polygon':
      return [g.exteriorRing, ...g.interiorRings]
        .filter((r: any[]) => r.length)
        .map((r: any[]) => `(${r.map(extractData).join(', ')})`)
        .join(', ');
    case 'MultiPoint':
      return g.points.map((p: any) => `(${extractData(p)})`).join(', ');
    case 'MultiLineString':
      return g.lineStrings.map((l: any) => `(${extractData(l)})`).join(', ');
    case 'MultiPolygon':
      return g.polygons.map((p: any) => `(${extractData(p)})`).join(', ');
    case 'GeometryCollection':
      return g.geometries.map((c: any) => `${geoPhpType(c).toUpperCase()} (${extractData(c)})`).join(', ');
    default:
      return '';
  }
}

/** geoPHP's WKT writer (without GEOS): `TYPE (data)`, or `TYPE EMPTY`; two dimensions only. */
function writeWkt(g: any): string {
  const data = extractData(g);
  return data ? `${geoPhpType(g).toUpperCase()} (${data})` : `${geoPhpType(g).toUpperCase()} EMPTY`;
}

/**
 * farmOS's WktTrait::combineWkt, which gives a log the geometry of its locations: each geometry
 * read and written again by geoPHP; the parts of a GEOMETRYCOLLECTION, MULTIPOINT or
 * MULTIPOLYGON taken out one level; and the lot wrapped in one GEOMETRYCOLLECTION when there
 * were several geometries or any such multi-geometry. (farmOS's list spells MultiLineString
 * "MultiLineSting", so a MULTILINESTRING is kept whole, as there.) '' when there is nothing.
 */
export function combineWkt(wkts: string[]): string {
  let collection = wkts.length > 1;
  const parts: string[] = [];
  for (const wkt of wkts) {
    if (!wkt) continue;
    let g: any;
    try {
      g = wkx.Geometry.parse(wkt.trim());
    } catch {
      continue;
    }
    const type = geoPhpType(g);
    if (type === 'GeometryCollection' || type === 'MultiPoint' || type === 'MultiPolygon') {
      for (const part of g.geometries ?? g.points ?? g.polygons) parts.push(writeWkt(part));
      collection = true;
    } else {
      parts.push(writeWkt(g));
    }
  }
  const joined = parts.join(',');
  if (!joined) return '';
  return collection ? `GEOMETRYCOLLECTION (${joined})` : joined;
}
