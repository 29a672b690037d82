/**
 * Some stored fields of some logs, read directly for computed fields: no access check, since
 * computed fields see every log, as farmOS's do (an asset's location shows even when the movement
 * log is one the reader may not open).
 */
import type { FieldDescriptor } from '../model/descriptor.ts';
import type { ResourceType } from '../model/registry.ts';
import type { Db, ItemValue, RecordStore } from '../storage/records.ts';

/** Some fields of logs by id: each log's values, keyed by the log's id. */
export type LogValuesReader = (db: Db, ids: number[]) => Promise<Map<number, Map<string, ItemValue | ItemValue[]>>>;

/**
 * A reader of the fields `names` of logs by id, compiled once: the caller keeps it, so the
 * statement's text and the columns it reads are worked out at the first read, not at every one
 * (a page of 50 animals reads the geometry of their movement logs at every request). Only the
 * columns of those fields are read, for every log bundle, instead of all of the log table's.
 */
export function logValuesReader(store: RecordStore, names: readonly string[]): LogValuesReader {
  const chosen = new WeakMap<ResourceType, FieldDescriptor[]>();
  const fields = (rt: ResourceType) => {
    let list = chosen.get(rt);
    if (!list) chosen.set(rt, (list = rt.bundle.fields.filter((f) => names.includes(f.name))));
    return list;
  };
  const bundles = store.registry.bundlesOf('log').map((rt) => rt.bundle.bundle);
  return async (db, ids) => {
    const out = new Map<number, Map<string, ItemValue | ItemValue[]>>();
    if (!ids.length) return out;
    for (const r of await store.load(db, 'log', ids, fields, bundles)) out.set(r.id, r.values);
    return out;
  };
}
