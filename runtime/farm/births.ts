/**
 * Birth logs (farmOS's farm_birth), for bundles whose definition says `births: true`: the assets a
 * birth log references are the children. Saving it gives each child the log's timestamp as its
 * birthdate, and its mother as its parent when it has no parent yet, with a revision message saying
 * so; a new birth log may not name a child that already has one (a 422 naming the child), while an
 * existing one is not checked, as farmOS's UniqueBirthLogConstraintValidator checks new logs only. This file says what changes; entities/service.ts
 * saves the children as any other update, with their own revisions.
 */
import type { ModelRegistry, ResourceType } from '../model/registry.ts';
import type { Db, EntityRecord, ItemValue, Reference } from '../storage/records.ts';
import type { Violation } from '../errors.ts';
import { REVISION_LOG_MESSAGE } from '../storage/revisions.ts';

const refs = (value: ItemValue | ItemValue[] | undefined): Reference[] =>
  ((Array.isArray(value) ? value : value ? [value] : []) as Reference[]).filter((r) => r && r.targetId);

/** The children of a birth log as it will be saved (`values` complete), or none for other logs. */
export function childrenOf(rt: ResourceType, values: ReadonlyMap<string, ItemValue | ItemValue[]>): number[] {
  if (!rt.bundle.births) return [];
  return [...new Set(refs(values.get('asset')).map((r) => r.targetId))];
}

/** Children that another birth log already names: one violation each. */
export async function secondBirths(
  db: Db,
  registry: ModelRegistry,
  rt: ResourceType,
  logId: number | null,
  children: number[],
): Promise<Violation[]> {
  if (!children.length) return [];
  const assetField = rt.fieldsByName.get('asset');
  if (assetField?.storage.kind !== 'table') return [];
  const birthBundles = registry
    .bundlesOf('log')
    .filter((b) => b.bundle.births)
    .map((b) => b.bundle.bundle);
  const logTable = rt.entityType.table;
  const assetTable = registry.model.entityTypes.asset!.table;
  const rows = (await db(`${assetField.storage.table} as la`)
    .join(`${logTable} as l`, 'l.id', 'la.entity_id')
    .join(`${assetTable} as a`, 'a.id', 'la.target_id')
    .whereIn('la.target_id', children)
    .whereIn('l.bundle', birthBundles)
    .whereNot('l.id', logId ?? -1)
    .select('a.name as child', 'l.name as log')) as Array<{ child: string; log: string }>;
  return rows.map((r) => ({
    field: assetField,
    detail: `asset: ${r.child} already has a birth log (${r.log}); an animal is born once.`,
  }));
}

/**
 * What each child takes from the birth log: its birthdate, and its mother as parent when it has
 * none; and, as farmOS's farm_birth LogEventSubscriber writes it, the revision message of the
 * child's save saying so. farmOS's message links the names to its UI pages; Tilth has no such
 * pages, so the same sentences are plain text.
 */
export function childChanges(
  log: ReadonlyMap<string, ItemValue | ItemValue[]>,
  children: EntityRecord[],
  motherName: string | null,
): Array<{ child: EntityRecord; changes: Map<string, ItemValue | ItemValue[]> }> {
  const timestamp = log.get('timestamp') as number | null | undefined;
  const mother = refs(log.get('mother'))[0];
  const out: Array<{ child: EntityRecord; changes: Map<string, ItemValue | ItemValue[]> }> = [];
  for (const child of children) {
    const changes = new Map<string, ItemValue | ItemValue[]>();
    const messages: string[] = [];
    const childName = String(child.values.get(child.rt.entityType.labelField) ?? '');
    if (
      child.rt.fieldsByName.has('birthdate') &&
      timestamp !== null &&
      timestamp !== undefined &&
      child.values.get('birthdate') !== timestamp
    ) {
      changes.set('birthdate', timestamp);
      messages.push(`${childName} date of birth was updated to match their birth log.`);
    }
    const parentField = child.rt.fieldsByName.get('parent');
    if (parentField && mother && mother.targetId !== child.id && !refs(child.values.get('parent')).length) {
      changes.set(
        'parent',
        parentField.multiple ? [{ targetId: mother.targetId, meta: {} }] : { targetId: mother.targetId, meta: {} },
      );
      messages.push(`${motherName ?? ''} added as a parent of ${childName}.`);
    }
    if (changes.size) {
      if (child.rt.fieldsByName.has(REVISION_LOG_MESSAGE))
        changes.set(REVISION_LOG_MESSAGE, [...messages, `Birth log saved: ${String(log.get('name') ?? '')}`].join(' '));
      out.push({ child, changes });
    }
  }
  return out;
}
