/**
 * `include=a,b.c`: loads related records level by level, one batch per entity type and level
 * (never per record), and returns each included resource once. Targets the caller may not view
 * are left out, as Drupal leaves them out of `included`.
 */
import type { Principal } from '../access/principal.ts';
import type { ModelRegistry, ResourceType } from '../model/registry.ts';
import { mayOnType, mayOnRecord } from '../access/policy.ts';
import type { Db, EntityRecord, ItemValue, Reference } from '../storage/records.ts';
import { badParameter } from '../errors.ts';
import type { RecordLoader } from '../farm/loader.ts';
import { isConfigEntityType } from '../model/config-entities.ts';

/**
 * Whether `segment` of records of these types points at configuration entities (a bundle's
 * `log_type`, `vid`…, a user's `roles`): those are served from the config catalogue, not loaded,
 * and nothing follows them on a path.
 */
export function isConfigSegment(types: ResourceType[], segment: string): boolean {
  return types.some(
    (t) =>
      t.entityType.bundleKey === segment ||
      (t.fieldsByName.get(segment)?.target && isConfigEntityType(t.fieldsByName.get(segment)!.target!.entityType)),
  );
}

/** Check include paths against the model before any query runs. */
export function validateIncludes(registry: ModelRegistry, rt: ResourceType, paths: string[][]): void {
  for (const path of paths) {
    let current: ResourceType[] = [rt];
    path.forEach((segment, i) => {
      if (isConfigSegment(current, segment)) {
        if (i < path.length - 1)
          throw badParameter(
            'include',
            `"${segment}" points at configuration resources; nothing can follow it in an include path.`,
          );
        current = [];
        return;
      }
      const fields = current
        .map((t) => t.fieldsByName.get(segment))
        .filter((f) => f && f.kind === 'relationship' && !f.internal);
      if (!fields.length) {
        const possible = [...new Set(current.flatMap((t) => t.relationships.map((f) => f.name)))].sort();
        const where = i === 0 ? '' : ` (at "${path.slice(0, i + 1).join('.')}")`;
        throw badParameter(
          'include',
          `"${segment}" is not a valid relationship field name${where}. Possible values: ${possible.join(', ')}.`,
        );
      }
      current = [...new Set(fields.flatMap((f) => registry.targetsOf(f!)))];
    });
  }
}

/**
 * The included records, and the records at the end of each path prefix (by the prefix joined
 * with dots, '' for the primary data), from which configuration includes are read. `fieldsets`:
 * the fields to read per type (query/fields.ts fieldsetsToRead), null for all; `at`: the moment
 * computed fields are computed for, as the primary data's were.
 */
export async function loadIncluded(
  db: Db,
  loader: RecordLoader,
  primary: EntityRecord[],
  paths: string[][],
  principal: Principal,
  fieldsets: Map<string, Set<string>> | null = null,
  at?: number,
): Promise<{ records: EntityRecord[]; levels: Map<string, EntityRecord[]> }> {
  const included = new Map<string, EntityRecord>();
  const primaryKeys = new Set(primary.map((r) => `${r.rt.entityType.entityType}:${r.id}`));
  // Paths sharing a prefix share the loads of that prefix.
  const levels = new Map<string, EntityRecord[]>([['', primary]]);
  const sorted = [...paths].sort((a, b) => a.length - b.length);
  for (const path of sorted) {
    for (let i = 0; i < path.length; i++) {
      const key = path.slice(0, i + 1).join('.');
      if (levels.has(key)) continue;
      const parents = levels.get(path.slice(0, i).join('.')) ?? [];
      const segment = path[i]!;
      if (isConfigSegment([...new Set(parents.map((p) => p.rt))], segment)) break;
      const wanted = new Map<string, Set<number>>();
      for (const record of parents) {
        const field = record.rt.fieldsByName.get(segment);
        if (!field || field.kind !== 'relationship') continue;
        const value = record.values.get(field.name);
        for (const item of (Array.isArray(value) ? value : value ? [value] : []) as ItemValue[]) {
          const ref = item as Reference;
          if (!ref?.uuid) continue;
          const et = field.target!.entityType;
          if (!wanted.has(et)) wanted.set(et, new Set());
          wanted.get(et)!.add(ref.targetId);
        }
      }
      const children: EntityRecord[] = [];
      for (const [entityType, ids] of wanted) {
        const et = loader.registry.model.entityTypes[entityType]!;
        if (!mayOnType(principal, et, 'view')) continue;
        const records = await loader.load(db, entityType, [...ids], fieldsets, at);
        for (const r of records) {
          if (!mayOnRecord(principal, et, 'view', r)) continue;
          children.push(r);
          const k = `${entityType}:${r.id}`;
          if (!primaryKeys.has(k) && !included.has(k)) included.set(k, r);
        }
      }
      levels.set(key, children);
    }
  }
  return { records: [...included.values()], levels };
}
