/**
 * A log written as JSON:API by hand, as Tilth writes it: shared by the *rendered* baseline (reads)
 * and the *write* baseline (the answer to a POST or PATCH), so both render the same bytes.
 */
import { bool, geometry, iso, num, str, userRef } from './json-text.ts';
import type { Row, Store } from './log-sql.ts';

// The log type's config entity UUID, as Tilth gives it (a name-based UUID of the bundle).
const LOG_TYPE = { activity: '281efc14-840a-575f-9ab5-135a31faa72f' } as Record<string, string>;
export const JSONAPI =
  '{"jsonapi":{"version":"1.0","meta":{"links":{"self":{"href":"http://jsonapi.org/format/1.0/"}}}}';

export interface Ref {
  uuid: string;
  bundle: string | null;
  tid: number | null;
}

const TARGET_TYPE: Record<string, (bundle: string) => string> = {
  asset: (b) => `asset--${b}`,
  location: (b) => `asset--${b}`,
  equipment: (b) => `asset--${b}`,
  group: (b) => `asset--${b}`,
  quantity: (b) => `quantity--${b}`,
  category: (b) => `taxonomy_term--${b}`,
  owner: () => 'user--user',
  file: () => 'file--file',
  image: () => 'file--file',
};
// The order Tilth writes a log's relationships in (the entity type's fields, then the bundle's).
const MANY = ['asset', 'category', 'file', 'image', 'owner', 'quantity', 'location', 'equipment', 'group'];

function render(BASE: string, r: Row, refs: Map<string, Ref[]>, flags: string[]): string {
  const self = `${BASE}/api/log/${r.bundle}/${r.uuid}`;
  const links = (field: string) =>
    `"links":{"related":{"href":"${self}/${field}"},"self":{"href":"${self}/relationships/${field}"}}`;
  let out = `{"type":"log--${r.bundle}","id":"${r.uuid}","links":{"self":{"href":"${self}"}},"attributes":{`;
  out += `"drupal_internal__id":${r.id},"drupal_internal__revision_id":${num(r.revision_id)},"langcode":"en","revision_created":${iso(r.revision_created)},`;
  out += `"revision_log_message":${str(r.revision_log_message)},"name":${str(r.name)},"timestamp":${iso(r.timestamp)},"status":${str(r.status)},`;
  out += `"created":${iso(r.created)},"changed":${iso(r.changed)},"default_langcode":true,"revision_default":true,"revision_translation_affected":true,`;
  out += `"data":${str(r.data)},"flag":${JSON.stringify(flags)},"notes":${r.notes__value === null ? 'null' : `{"value":${str(r.notes__value)},"format":${str(r.notes__format)}}`},`;
  out += `"geometry":${geometry(r)},"is_movement":${bool(r.is_movement)},"is_group_assignment":${bool(r.is_group_assignment)}},"relationships":{`;
  out += `"log_type":{"data":{"type":"log_type--log_type","id":"${LOG_TYPE[r.bundle]}","meta":{"drupal_internal__target_id":"${r.bundle}"}}},`;
  out += `"revision_user":{"data":${userRef(r.revision_user, r.revision_user_uuid)},${links('revision_user')}},`;
  out += `"uid":{"data":${userRef(r.uid, r.uid_uuid)},${links('uid')}}`;
  for (const field of MANY) {
    const list = refs.get(field) ?? [];
    const data = list.map(
      (x) =>
        `{"type":"${TARGET_TYPE[field]!(x.bundle!)}","id":"${x.uuid}","meta":{"drupal_internal__target_id":${x.tid}}}`,
    );
    out += `,"${field}":{"data":[${data.join(',')}],${links(field)}}`;
  }
  return `${out}}}`;
}

/** The page's logs with their side tables, rendered in order (and the references, for `included`). */
async function renderRows(
  BASE: string,
  store: Pick<Store, 'side'>,
  rows: Row[],
): Promise<{ rendered: string[]; refs: Array<Map<string, Ref[]>> }> {
  const byLog = new Map<number, { refs: Map<string, Ref[]>; flags: string[] }>();
  for (const r of rows) byLog.set(r.id, { refs: new Map(), flags: [] });
  if (rows.length) {
    for (const s of await store.side(rows.map((r) => r.id))) {
      const entry = byLog.get(s.entity_id)!;
      if (s.f === 'file' || s.f === 'image') throw new Error('files are not rendered by this baseline');
      if (s.f === 'flag') entry.flags.push(s.uuid);
      else {
        let list = entry.refs.get(s.f);
        if (!list) entry.refs.set(s.f, (list = []));
        list.push({ uuid: s.uuid, bundle: s.bundle, tid: s.tid });
      }
    }
  }
  return {
    rendered: rows.map((r) => render(BASE, r, byLog.get(r.id)!.refs, byLog.get(r.id)!.flags)),
    refs: rows.map((r) => byLog.get(r.id)!.refs),
  };
}

/** The renderer for logs under `base`, reading side tables through `store`. */
export function logRenderer(base: string, store: Pick<Store, 'side'>) {
  return { renderRows: (rows: Row[]) => renderRows(base, store, rows) };
}
