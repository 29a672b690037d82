/**
 * What a deletion locks on PostgreSQL before it writes records other than its own (SQLite has one
 * writer: nothing to do there). Every deletion goes through here, by deleteUnderLocks at the
 * end: a DELETE of the API (EntityService.delete), `tilth user delete` (cli/users.ts) and the
 * importer's --prune (EntityService.deleteMany, from farmos-import/run.ts), both of which may run
 * beside a server on the same database. A deletion
 * of records of one entity type writes:
 *
 * - its holders, the records that refer to it (RecordStore.holdersOf): those whose references keep
 *   it (entities/reference-integrity.ts) refuse the deletion, which checks them after step 2
 *   below, when no save can add one; the references that do not (a log's file or quantity, a
 *   revision's user; all of them with `tilth user delete --clear-references`) go, a single one set
 *   to NULL in their row, or move to another user (`--reassign-to`), and each holder gets a
 *   change-feed row;
 * - through EntityService.delete only (the `farm` argument; the importer rebuilds placements in
 *   transactions of their own at its end, and prunes quantities as records of their own):
 *   - for an asset, the assets whose placement rows it rewrites (Placements.assetsWrittenOnDelete):
 *     its members and the assets placed in it;
 *   - for a log, its quantities, deleted with it unless another log names them (dependentsOnDelete).
 *
 * Unlocked, a save of one of them beside the deletion deadlocked with it (a 409 to one of the
 * two) or was undone by it (test/api/delete-locks.test.ts; for the commands,
 * test/cli/user-delete.test.ts and test/cli/prune-locks.test.ts: a log assigned to the user saved
 * with If-Match held its change-feed row and waited for its owner rows, which the deletion had
 * removed before it waited for that feed row):
 * - a group's deletion cleared its members' membership rows, then waited to lock the members to
 *   rebuild them, while a movement of those members held them and waited on those rows; and an
 *   asset assigned to the group as it was deleted stayed where the group had been moved, as the
 *   deletion had listed the group's members before that assignment committed;
 * - a location's deletion removed the location rows of the logs naming it, then waited for their
 *   change-feed rows, while a PATCH of such a log with If-Match held its feed row and waited to
 *   replace those location rows (or a PATCH naming the location again waited for the deletion,
 *   which waited for the PATCH's own removal of the rows);
 * - a quantity given to another log while its log was deleted went with the deleted log: the
 *   check that no other log names it ran before that save committed, and the quantity's delete
 *   then took that log's new reference with it.
 *
 * The order, so that no new deadlock cycle appears, is the global one (storage/locks.ts, which
 * defines it and sorts by it): the records' own rows first, in ascending ids
 * (the caller's: the route's findForUpdate, as every save locks its own record first, or
 * lockRows), then the others by entity type: logs,
 * quantities, files, assets, then any other type, each in ascending ids (lockRows). A log's save
 * takes its own row, then the files it makes permanent (entities/file-usage.ts, an UPDATE of
 * their rows), then the assets its placements rebuild and its birth children (ascending,
 * Placements.rebuild and EntityService.applyBirths); an asset's save, its row, then its files: so
 * logs, then files, then assets here too. Quantities, terms and users lock nothing else when
 * saved, so their place is free; quantities go before assets, as a log's deletion locks its
 * quantities before the assets it moves.
 *
 * In three steps:
 * 1. The holders found now are locked: a save of one of them runs to its end first, or waits.
 * 2. The records' rows are locked FOR UPDATE, as their DELETE will: a save that is adding a reference
 *    to it (a new holder, a new member of a group) holds a KEY SHARE lock on it, so this waits
 *    for that save to commit, and no save can add one after. Taken after step 1: a save of a
 *    holder that names the record again (farmOS clients send whole records back) holds the
 *    holder and takes a KEY SHARE lock on the record, and must not be kept waiting for this
 *    lock while this deletion waits for the holder.
 * 3. Everything the deletion writes is found again, now complete, and locked: the holders that
 *    appeared meanwhile, the members and placed assets, and a log's quantities, FOR UPDATE (a save
 *    giving a quantity to another log takes a KEY SHARE lock on it; FOR NO KEY UPDATE would let
 *    that through after dependentsOnDelete found the quantity unshared). The holders found here
 *    are returned, for RecordStore.delete to use instead of finding them a third time: no save
 *    can add one after step 2, nor change one after this step.
 *
 * Left as they were (one of the two requests gets a 409 it can retry, nothing half written): an
 * asset deleted while a log naming it among its assets is saved (each has locked its own record
 * and needs the other's, here as before); a record that step 3 finds new, held by a save that
 * waits for this deletion; a save giving a log two of the deleted log's quantities in the other
 * order than step 3 locks them (a reference's KEY SHARE locks come in the order sent); a prune of
 * several records beside an API DELETE of one of them whose holder is another pruned record. When
 * the importer's prune is the one broken off, the import stops with the error and its next run
 * prunes again.
 */
import type { RecordStore, RowLock } from '../storage/records.ts';
import { lockRows, type Db } from '../storage/records.ts';
import { lockInOrder as lockInGlobalOrder } from '../storage/locks.ts';
import { dialectOf } from '../storage/dialect.ts';
import type { Placements } from '../farm/placements.ts';
import type { ResourceType } from '../model/registry.ts';
import { quantitiesOf } from '../farm/hooks.ts';
import { inUnitOfWork } from '../storage/unit-of-work.ts';

/** Lock these records in the global order (storage/locks.ts): type by type, each type's in ascending ids. */
function lockInOrder(
  db: Db,
  store: RecordStore,
  records: Map<string, Set<number>>,
  strengths: ReadonlyMap<string, RowLock> = new Map(),
): Promise<void> {
  return lockInGlobalOrder(db, (entityType) => store.entityType(entityType).table, records, strengths);
}

function add(records: Map<string, Set<number>>, entityType: string, ids: Iterable<number>): void {
  const set = records.get(entityType) ?? new Set<number>();
  for (const id of ids) set.add(id);
  if (set.size) records.set(entityType, set);
}

/** What EntityService.delete writes besides what RecordStore.delete does: an asset's placements, a log's quantities. */
export interface FarmDeletion {
  placements: Placements;
  rt: ResourceType;
}

/**
 * Lock what deleting these records of `entityType` writes besides the records themselves, their
 * own rows locked by the caller first (see the comment at the top); with `farm`, what
 * EntityService.delete writes too. Returns the holders, found once the records are locked, for
 * RecordStore.delete; undefined on SQLite, where nothing is locked and the delete finds them.
 */
export async function lockForDeletion(
  db: Db,
  store: RecordStore,
  entityType: string,
  ids: number[],
  farm?: FarmDeletion,
): Promise<Map<string, Set<number>> | undefined> {
  if (!dialectOf(db).locksRows || !ids.length) return undefined;
  await lockInOrder(db, store, await store.holdersOf(db, entityType, ids));
  await lockRows(db, store.entityType(entityType).table, ids, 'UPDATE');
  const holders = await store.holdersOf(db, entityType, ids);
  const written = new Map([...holders].map(([type, found]) => [type, new Set(found)]));
  const strengths = new Map<string, RowLock>();
  if (farm && entityType === 'asset')
    for (const id of ids) add(written, 'asset', await farm.placements.assetsWrittenOnDelete(db, id));
  if (farm && entityType === 'log') {
    add(written, 'quantity', await quantitiesOf(db, farm.rt, ids));
    strengths.set('quantity', 'UPDATE');
  }
  await lockInOrder(db, store, written, strengths);
  return holders;
}

/** How deleteUnderLocks deletes: what it locks besides, what it checks and does before the delete. */
export interface Deletion {
  /** What EntityService.delete writes besides (an asset's placements, a log's quantities). */
  farm?: FarmDeletion;
  /** The records' own rows are locked already (the API's findForUpdate). */
  ownLocked?: boolean;
  /** Other records of the same type to lock with them (the user `tilth user delete` gives the references to). */
  alsoLock?: readonly number[];
  /**
   * With everything locked: the records that go (the check of the references that keep them);
   * every one by default. Throws to refuse the deletion.
   */
  going?: (ids: number[]) => Promise<number[]>;
  /** With everything locked and checked, before the rows go: what else the deletion writes (references moved). */
  before?: (going: number[]) => Promise<void>;
}

/**
 * Delete records of one entity type under the locks described at the top, in one unit of work
 * (storage/unit-of-work.ts: each record's feed row once, last): their rows locked, then what the
 * deletion writes (lockForDeletion), then `going` says which go, then RecordStore.delete, with the
 * holders found once (again, for the ones going, when some are kept). The one copy of this
 * sequence: EntityService.delete and deleteMany (the importer's --prune), `tilth user delete`.
 * Returns the ids deleted.
 */
export function deleteUnderLocks(
  db: Db,
  store: RecordStore,
  entityType: string,
  ids: number[],
  d: Deletion = {},
): Promise<number[]> {
  return inUnitOfWork(db, async () => {
    if (!d.ownLocked) await lockRows(db, store.entityType(entityType).table, [...ids, ...(d.alsoLock ?? [])]);
    const holders = await lockForDeletion(db, store, entityType, ids, d.farm);
    const going = d.going ? await d.going(ids) : ids;
    await d.before?.(going);
    // The holders of the records kept are not changed: found again for those deleted.
    await store.delete(
      db,
      entityType,
      going,
      holders && going.length < ids.length ? await store.holdersOf(db, entityType, going) : holders,
    );
    return going;
  });
}
