/**
 * The JSON text the rendered baseline writes values with, as Tilth writes them: shared by the log
 * document (rendered.ts) and P2's included assets and quantities (included.ts).
 */

/** Unix seconds as Drupal's RFC 3339 with an explicit +00:00 (the server's time zone is UTC). */
export function iso(t: unknown): string {
  if (t === null || t === undefined) return 'null';
  return `"${new Date(Number(t) * 1000).toISOString().slice(0, 19)}+00:00"`;
}
export const str = (v: unknown) => (v === null || v === undefined ? 'null' : JSON.stringify(String(v)));
export const bool = (v: unknown) => (v === null || v === undefined ? 'null' : v ? 'true' : 'false');
export const num = (v: unknown) => (v === null || v === undefined ? 'null' : String(Number(v)));

/** A geofield from the row's geometry__* columns (a log's own, or an asset's intrinsic one aliased so). */
export function geometry(r: Record<string, unknown> | undefined): string {
  if (!r || r.geometry__value === null) return 'null';
  return `{"value":${str(r.geometry__value)},"geo_type":${str(r.geometry__geo_type)},"lat":${num(r.geometry__lat)},"lon":${num(r.geometry__lon)},"left":${num(r.geometry__left)},"top":${num(r.geometry__top)},"right":${num(r.geometry__right)},"bottom":${num(r.geometry__bottom)},"geohash":${str(r.geometry__geohash)},"latlon":${str(r.geometry__latlon)}}`;
}

/** A resource identifier with Drupal's target id, or null when the target is gone. */
export const ref = (type: string, uuid: unknown, tid: unknown) =>
  uuid === null || uuid === undefined
    ? 'null'
    : `{"type":"${type}","id":"${uuid}","meta":{"drupal_internal__target_id":${tid}}}`;
export const userRef = (id: unknown, uuid: unknown) => (id === null ? 'null' : ref('user--user', uuid, id));
