/**
 * farmOS's save-time behaviour, by entity type (never by bundle): log names, log owners,
 * the asset status/archived pair, and the quantities that go with a deleted log.
 * Sources: farmos-behaviour.md §1.4, §1.9.
 */
import type { ResourceType } from '../model/registry.ts';
import type { Principal } from '../access/principal.ts';
import type { Db, EntityRecord, ItemValue, Reference } from '../storage/records.ts';

export interface SaveContext {
  db: Db;
  principal: Principal;
  now: number;
}

/** Fill in values a new record gets from its surroundings. `values` is complete (defaults applied). */
export function beforeCreate(rt: ResourceType, values: Map<string, ItemValue | ItemValue[]>, ctx: SaveContext): void {
  const et = rt.entityType.entityType;
  if (et === 'log' && rt.fieldsByName.has('owner')) {
    const owners = (values.get('owner') as ItemValue[] | undefined) ?? [];
    if (!owners.length && ctx.principal.userId !== null)
      values.set('owner', [{ targetId: ctx.principal.userId, meta: {} } as Reference]);
  }
  if (et === 'asset' && rt.fieldsByName.has('archived')) syncArchivedOnCreate(values, ctx.now);
}

/** Adjust an update: `changes` holds the submitted fields, `current` the stored record. */
export function beforeUpdate(
  rt: ResourceType,
  changes: Map<string, ItemValue | ItemValue[]>,
  current: EntityRecord,
  ctx: SaveContext,
): void {
  if (rt.entityType.entityType === 'asset' && rt.fieldsByName.has('archived'))
    syncArchivedOnUpdate(changes, current, ctx.now);
  // farmOS's Log::preSave: a log left without an owner gets the current user, on every save.
  if (rt.entityType.entityType === 'log' && rt.fieldsByName.has('owner')) {
    const owners =
      ((changes.has('owner') ? changes.get('owner') : current.values.get('owner')) as ItemValue[] | undefined) ?? [];
    if (!owners.length && ctx.principal.userId !== null)
      changes.set('owner', [{ targetId: ctx.principal.userId, meta: {} } as Reference]);
  }
}

/**
 * A new asset's status and archived time, made consistent as the contract's states require
 * (active ⇔ no archived time; archived ⇔ a time). farmOS does nothing on create (its
 * AssetStorage::doPreSave acts on updates only) and would store an archived asset without a time,
 * or an active one with a time (farmOS.js sends `archived` = now with status active); Tilth does
 * not (README, "Where Tilth differs from farmOS"). Sending `status` wins; sending only `archived`
 * archives at that time.
 */
function syncArchivedOnCreate(values: Map<string, ItemValue | ItemValue[]>, now: number): void {
  // A status sent as null is refused as farmOS refuses it (the field is required), not made active.
  if (sentNull(values, 'status')) return;
  const archivedSent = values.has('archived');
  let status = values.has('status') ? (values.get('status') as string) : 'active';
  if (!values.has('status') && archivedSent && values.get('archived') !== null) status = 'archived';
  values.set('status', status === 'archived' ? 'archived' : 'active');
  values.set(
    'archived',
    status === 'archived' ? ((archivedSent ? (values.get('archived') as number | null) : null) ?? now) : null,
  );
}

/**
 * An update, as farmOS 3.x's AssetStorage::doPreSave keeps status and archived in step, on the
 * values after the update (what was sent over what is stored):
 * - status unchanged, not archived, an archived time → archived;
 * - status unchanged, archived, no archived time → active;
 * - status changed to archived without a time → archived now;
 * - status changed from archived → the time cleared.
 */
function syncArchivedOnUpdate(changes: Map<string, ItemValue | ItemValue[]>, current: EntityRecord, now: number): void {
  // A status sent as null is refused (required), never read as active: an archived asset stays archived.
  if (sentNull(changes, 'status')) return;
  const oldState = (current.values.get('status') as string | undefined) ?? 'active';
  const newState = changes.has('status') ? (changes.get('status') as string) : oldState;
  let archived = (changes.has('archived') ? changes.get('archived') : current.values.get('archived')) as
    number | null | undefined;
  archived ??= null;
  let status = newState;
  if (newState === oldState) {
    if (oldState !== 'archived' && archived !== null) status = 'archived';
    if (oldState === 'archived' && archived === null) status = 'active';
  } else if (newState === 'archived' && archived === null) {
    archived = now;
  } else if (oldState === 'archived') {
    archived = null;
  }
  if (changes.has('status') || status !== oldState) changes.set('status', status);
  if (changes.has('archived') || archived !== ((current.values.get('archived') as number | null | undefined) ?? null))
    changes.set('archived', archived);
}

function sentNull(values: ReadonlyMap<string, ItemValue | ItemValue[]>, name: string): boolean {
  return values.has(name) && values.get(name) === null;
}

/** The name a record gets when saved with a blank name, from the entity type's pattern. */
export function generatedName(rt: ResourceType, id: number): string | null {
  const pattern = rt.entityType.namePattern;
  if (!pattern) return null;
  return pattern.replace('{bundle_label}', rt.bundle.label).replace('{id}', String(id));
}

/** The log quantity field's side table, when these records have one. */
function quantityTable(rt: ResourceType): string | null {
  if (rt.entityType.entityType !== 'log') return null;
  const field = rt.fieldsByName.get('quantity');
  return field?.storage.kind === 'table' ? field.storage.table : null;
}

/** The quantities these logs name: the ones their deletion may delete with them (dependentsOnDelete). */
export async function quantitiesOf(db: Db, rt: ResourceType, ids: number[]): Promise<number[]> {
  const table = quantityTable(rt);
  if (!table) return [];
  const rows = await db(table).whereIn('entity_id', ids).select('target_id');
  return [...new Set(rows.map((r: { target_id: number }) => Number(r.target_id)))];
}

/**
 * Records to delete along with these: a log's quantities go with it (farmOS's log_quantity rule),
 * unless another log names them too. On PostgreSQL the quantities are locked before this is asked
 * (entities/deletion-locks.ts), so that no save can give one to another log after the check.
 */
export async function dependentsOnDelete(
  db: Db,
  rt: ResourceType,
  ids: number[],
): Promise<Array<{ entityType: string; ids: number[] }>> {
  const table = quantityTable(rt);
  const quantities = await quantitiesOf(db, rt, ids);
  if (!table || !quantities.length) return [];
  // A quantity still referenced by another log stays.
  const shared = await db(table).whereIn('target_id', quantities).whereNotIn('entity_id', ids).select('target_id');
  const keep = new Set(shared.map((r: { target_id: number }) => Number(r.target_id)));
  return [{ entityType: 'quantity', ids: quantities.filter((q) => !keep.has(q)) }];
}
