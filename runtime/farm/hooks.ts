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
    if (!owners.length && ctx.principal.userId !== null) values.set('owner', [{ targetId: ctx.principal.userId, meta: {} } as Reference]);
  }
  if (et === 'asset' && rt.fieldsByName.has('archived')) syncArchived(values, null, ctx.now);
}

/** Adjust an update: `changes` holds the submitted fields, `current` the stored record. */
export function beforeUpdate(rt: ResourceType, changes: Map<string, ItemValue | ItemValue[]>, current: EntityRecord, ctx: SaveContext): void {
  if (rt.entityType.entityType === 'asset' && rt.fieldsByName.has('archived')) syncArchived(changes, current, ctx.now);
  // farmOS's Log::preSave: a log left without an owner gets the current user, on every save.
  if (rt.entityType.entityType === 'log' && rt.fieldsByName.has('owner')) {
    const owners = ((changes.has('owner') ? changes.get('owner') : current.values.get('owner')) as ItemValue[] | undefined) ?? [];
    if (!owners.length && ctx.principal.userId !== null) changes.set('owner', [{ targetId: ctx.principal.userId, meta: {} } as Reference]);
  }
}

/**
 * Keep status and archived consistent (spec: active ⇔ no archived time; archived ⇔ a time).
 * Sending only `archived` archives or restores, as farmOS does; sending `status` wins.
 */
function syncArchived(values: Map<string, ItemValue | ItemValue[]>, current: EntityRecord | null, now: number): void {
  const statusSent = values.has('status');
  const archivedSent = values.has('archived');
  const currentStatus = (current?.values.get('status') as string | undefined) ?? 'active';
  const currentArchived = (current?.values.get('archived') as number | null | undefined) ?? null;
  let status = statusSent ? (values.get('status') as string | null) ?? 'active' : currentStatus;
  if (!statusSent && archivedSent) status = values.get('archived') === null ? 'active' : 'archived';
  if (status === 'active') {
    values.set('status', 'active');
    values.set('archived', null);
  } else {
    values.set('status', 'archived');
    const sent = archivedSent ? (values.get('archived') as number | null) : null;
    values.set('archived', sent ?? (currentStatus === 'archived' ? currentArchived : null) ?? now);
  }
}

/** The name a record gets when saved with a blank name, from the entity type's pattern. */
export function generatedName(rt: ResourceType, id: number): string | null {
  const pattern = rt.entityType.namePattern;
  if (!pattern) return null;
  return pattern.replace('{bundle_label}', rt.bundle.label).replace('{id}', String(id));
}

/** Records to delete along with these: a log's quantities go with it (farmOS's log_quantity rule). */
export async function dependentsOnDelete(db: Db, rt: ResourceType, ids: number[]): Promise<Array<{ entityType: string; ids: number[] }>> {
  if (rt.entityType.entityType !== 'log') return [];
  const field = rt.fieldsByName.get('quantity');
  if (!field || field.storage.kind !== 'table') return [];
  const rows = await db(field.storage.table).whereIn('entity_id', ids).select('target_id');
  const quantities = [...new Set(rows.map((r: { target_id: number }) => Number(r.target_id)))];
  if (!quantities.length) return [];
  // A quantity still referenced by another log stays.
  const shared = await db(field.storage.table).whereIn('target_id', quantities).whereNotIn('entity_id', ids).select('target_id');
  const keep = new Set(shared.map((r: { target_id: number }) => Number(r.target_id)));
  return [{ entityType: 'quantity', ids: quantities.filter((q) => !keep.has(q)) }];
}
