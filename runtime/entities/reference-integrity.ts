/**
 * A record other records reference is not deleted, as in farmOS: farm_entity_install() turns on
 * entity_reference_integrity's enforcement for its entity types, and a JSON:API DELETE of such a
 * record is refused (403). Deleting it used to strip the references silently: a log lost its
 * asset, a plant its plant type, a child term its parent.
 *
 * Which references count is entity_reference_integrity's field map (DependencyFieldMapGenerator):
 * - fields of type entity_reference, stored and queryable, base fields included: a record's
 *   author (`uid`) keeps its user, as its owners do;
 * - not revision metadata (`revision_user`), nor past revisions (its queries read current ones);
 * - not file, image or entity_reference_revisions fields, which are other field types: a file a
 *   log shows, and a quantity a log names, may be deleted, and the log loses them, as in farmOS.
 * A record's reference to itself, and one between records deleted together, does not keep it:
 * nothing that stays loses anything (farmOS's query would count a self-reference; Tilth's
 * parent rules refuse one, so only a plant type naming itself a companion could have one).
 */
import type { EntityRecord, RecordStore, ReferencePlace, Db } from '../storage/records.ts';
import { ApiError } from '../errors.ts';
import { REVISION_METADATA_FIELDS } from '../storage/revisions.ts';

/** The entity types whose integrity farmOS enforces (farm_entity_install, and plan and organization (4.0) since updates). */
const ENFORCED = new Set([
  'asset',
  'data_stream',
  'file',
  'log',
  'organization',
  'plan',
  'quantity',
  'taxonomy_term',
  'user',
]);

/** How many holders' UUIDs a refusal names, per field. */
const NAMED = 3;

/** The records holding references to one record through one field. */
export interface Referrers {
  entityType: string;
  field: string;
  holders: number[];
}

/** The places whose references keep a record of the entity type from being deleted. */
export function protectingPlaces(store: RecordStore, entityType: string): ReferencePlace[] {
  if (!ENFORCED.has(entityType)) return [];
  return store
    .referencesTo(entityType)
    .filter((place) => place.fieldType === 'entity_reference' && !REVISION_METADATA_FIELDS.has(place.field));
}

/**
 * For each of these records of `entityType` that others reference, who does, field by field
 * (sorted by entity type, then field). Records among `ids` do not count, nor those in `goingToo`
 * (records of other types deleted in the same run: `import farmos --prune`).
 */
export async function referrersOf(
  db: Db,
  store: RecordStore,
  entityType: string,
  ids: number[],
  goingToo: ReadonlyMap<string, ReadonlySet<number>> = new Map(),
): Promise<Map<number, Referrers[]>> {
  const found = new Map<number, Referrers[]>();
  const places = [...protectingPlaces(store, entityType)].sort(
    (a, b) => a.entityType.localeCompare(b.entityType) || a.field.localeCompare(b.field),
  );
  for (const place of places) {
    const byTarget = new Map<number, number[]>();
    for (const { target, holder } of await store.referencesAt(db, place, ids)) {
      // Records of the type itself go only if among `ids` (goingToo may still list those kept).
      if (place.entityType !== entityType && goingToo.get(place.entityType)?.has(holder)) continue;
      const list = byTarget.get(target) ?? [];
      if (!byTarget.has(target)) byTarget.set(target, list);
      list.push(holder);
    }
    for (const [target, holders] of byTarget) {
      const list = found.get(target) ?? [];
      if (!found.has(target)) found.set(target, list);
      // One field may be kept in two places (a column in one bundle, a side table in another).
      const same = list.find((r) => r.entityType === place.entityType && r.field === place.field);
      if (same) same.holders = [...new Set([...same.holders, ...holders])].sort((a, b) => a - b);
      else list.push({ entityType: place.entityType, field: place.field, holders });
    }
  }
  return found;
}

/**
 * Of these records of `entityType`, those that may be deleted together (with `goingToo`), and
 * those kept because a record that stays references them, with who does: one a kept record of
 * the same type references is kept too (a pruned parent term whose pruned child a local log
 * names), so the split is made again until nothing more is kept.
 */
export async function splitReferenced(
  db: Db,
  store: RecordStore,
  entityType: string,
  ids: number[],
  goingToo: ReadonlyMap<string, ReadonlySet<number>> = new Map(),
): Promise<{ deletable: number[]; kept: Map<number, Referrers[]> }> {
  let deletable = ids;
  const kept = new Map<number, Referrers[]>();
  for (;;) {
    const referenced = await referrersOf(db, store, entityType, deletable, goingToo);
    if (!referenced.size) return { deletable, kept };
    for (const [id, referrers] of referenced) kept.set(id, referrers);
    deletable = deletable.filter((id) => !referenced.has(id));
  }
}

/** "3 log(s) (asset): <uuid>, <uuid>, <uuid> and 2 more; 1 data_stream(s) (asset): <uuid>" */
export async function describeReferrers(db: Db, store: RecordStore, referrers: Referrers[]): Promise<string> {
  const parts: string[] = [];
  for (const { entityType, field, holders } of referrers) {
    const uuids = await store.uuidsOf(db, entityType, holders.slice(0, NAMED));
    const named = holders
      .slice(0, NAMED)
      .map((id) => uuids.get(id) ?? String(id))
      .join(', ');
    const more = holders.length > NAMED ? ` and ${holders.length - NAMED} more` : '';
    parts.push(`${holders.length} ${entityType}(s) (${field}): ${named}${more}`);
  }
  return parts.join('; ');
}

/** How a record is named in a refusal: its type and label, or its UUID when it has no label. */
export function recordName(record: EntityRecord): string {
  const label = record.values.get(record.rt.entityType.labelField);
  return typeof label === 'string' && label ? `${record.rt.type} "${label}"` : `${record.rt.type} ${record.uuid}`;
}

/**
 * The refusal of deleting a record others reference, or null when none does: what a DELETE
 * answers (403 `referenced`, as farmOS's 403) and what `tilth user delete` says.
 */
export async function referencedRefusal(db: Db, store: RecordStore, record: EntityRecord): Promise<string | null> {
  const referrers = (await referrersOf(db, store, record.rt.entityType.entityType, [record.id])).get(record.id);
  if (!referrers?.length) return null;
  return `${recordName(record)} is referenced by ${await describeReferrers(db, store, referrers)}.`;
}

/** Refuse (403) to delete a record other records reference; see the comment at the top. */
export async function refuseIfReferenced(db: Db, store: RecordStore, record: EntityRecord): Promise<void> {
  const refusal = await referencedRefusal(db, store, record);
  if (refusal)
    throw new ApiError(403, `${refusal} Delete those records or remove their references to it first.`, {
      code: 'referenced',
    });
}
