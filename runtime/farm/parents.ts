/**
 * Parent hierarchies of assets and taxonomy terms (their `parent` field): a record may not list
 * the same parent twice, nor be its own ancestor, directly or through its parents' parents, as
 * farmOS's constraints refuse (a 422 naming the field). The chain is walked a level at a time, one
 * indexed query per level, never record by record.
 */
import type { ResourceType } from '../model/registry.ts';
import type { Db, ItemValue, Reference } from '../storage/records.ts';
import type { Violation } from '../errors.ts';

/** A chain deeper than this is treated as a loop (no farm nests its fields a hundred deep). */
const MAX_DEPTH = 100;

/** Problems with the parents a record will have; `id` is null for a new record. */
export async function parentViolations(
  db: Db,
  rt: ResourceType,
  id: number | null,
  values: ReadonlyMap<string, ItemValue | ItemValue[]>,
): Promise<Violation[]> {
  const field = rt.fieldsByName.get('parent');
  if (
    !field ||
    field.target?.entityType !== rt.entityType.entityType ||
    field.storage.kind !== 'table' ||
    !values.has('parent')
  )
    return [];
  const parents = ((values.get('parent') as Reference[] | null) ?? []).filter(Boolean).map((r) => r.targetId);
  const seen = new Set<number>();
  for (const p of parents) {
    if (seen.has(p)) return [{ field, detail: 'parent: the same parent is listed twice.' }];
    seen.add(p);
  }
  if (id === null) return []; // a new record has no descendants yet
  if (seen.has(id)) return [{ field, detail: 'parent: a record cannot be its own parent.' }];
  const { table } = field.storage;
  let frontier = [...seen];
  const visited = new Set(frontier);
  for (let depth = 0; frontier.length && depth < MAX_DEPTH; depth++) {
    const rows = (await db(table).whereIn('entity_id', frontier).select('target_id')) as Array<{ target_id: number }>;
    frontier = [];
    for (const { target_id } of rows) {
      const ancestor = Number(target_id);
      if (ancestor === id)
        return [
          { field, detail: 'parent: one of these parents descends from this record, so the parent chain would loop.' },
        ];
      if (!visited.has(ancestor)) {
        visited.add(ancestor);
        frontier.push(ancestor);
      }
    }
  }
  return frontier.length ? [{ field, detail: `parent: the parent chain is more than ${MAX_DEPTH} levels deep.` }] : [];
}
