/**
 * Some stored fields of some logs, read directly for computed fields: no access check, since
 * computed fields see every log, as farmOS's do (an asset's location shows even when the movement
 * log is one the reader may not open).
 */
import type { ModelRegistry } from '../model/registry.ts';
import { RecordStore, type Db, type ItemValue } from '../storage/records.ts';

export async function logValues(db: Db, registry: ModelRegistry, ids: number[], names: readonly string[]): Promise<Map<number, Map<string, ItemValue | ItemValue[]>>> {
  const out = new Map<number, Map<string, ItemValue | ItemValue[]>>();
  if (!ids.length) return out;
  const records = await new RecordStore(registry).load(db, 'log', ids, (rt) => rt.bundle.fields.filter((f) => names.includes(f.name)));
  for (const r of records) out.set(r.id, r.values);
  return out;
}
