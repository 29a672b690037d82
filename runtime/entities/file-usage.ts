/** Drupal's file usage: files referenced by a saved record stop being temporary (files/storage.ts sweeps temporary ones). */
import type { ResourceType } from '../model/registry.ts';
import { noteChangedIds } from '../storage/unit-of-work.ts';
import type { Db, ItemValue, Reference } from '../storage/records.ts';

export async function markFilesPermanent(
  db: Db,
  rt: ResourceType,
  values: ReadonlyMap<string, ItemValue | ItemValue[]>,
  fileTable: string,
): Promise<void> {
  const ids: number[] = [];
  for (const field of rt.bundle.fields) {
    if ((field.type !== 'file' && field.type !== 'image') || !values.has(field.name)) continue;
    const v = values.get(field.name);
    for (const ref of (Array.isArray(v) ? v : v ? [v] : []) as Reference[]) if (ref) ids.push(ref.targetId);
  }
  if (!ids.length) return;
  const changed = await db(fileTable).whereIn('id', ids).where('status', false).update({ status: true });
  // A file's status shows: the change feed lists the files whose status changed (here, some of them).
  if (changed) await noteChangedIds(db, 'file', fileTable, ids);
}
