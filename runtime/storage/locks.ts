/**
 * The global lock order, and row locks, one function per strength (what the strengths mean:
 * storage/dialect.ts RowLock).
 * On PostgreSQL they lock rows until the transaction ends; SQLite runs one write transaction at a
 * time, and they do nothing there.
 *
 * - `lockToChange` (FOR NO KEY UPDATE): a row about to be changed, or whose writers must take
 *   turns. The weakest lock that makes two writers of one row wait for each other, and the one to
 *   use unless the row is about to go: it does not wait on the KEY SHARE locks that references to
 *   the row take, so a save that names the row (a log naming an asset) is not held up by it, nor
 *   it by that save.
 * - `lockToDelete` (FOR UPDATE): a row about to be deleted, whose references must stop changing
 *   (entities/deletion-locks.ts), or whose key is about to change.
 */
import type { Db } from './records.ts';
import { dialectOf, type RowLock } from './dialect.ts';
import { quoteName, selectRows } from './sql.ts';

/** Ids locked in one statement. */
const IDS_PER_STATEMENT = 5000;

/**
 * Lock these rows of `table` (by id) until the transaction ends, in ascending ids: two
 * transactions locking overlapping sets cannot deadlock over them.
 */
export async function lockRows(
  db: Db,
  table: string,
  ids: Iterable<number>,
  strength: RowLock = 'NO KEY UPDATE',
): Promise<void> {
  const dialect = dialectOf(db);
  if (!dialect.locksRows) return;
  const sorted = [...new Set(ids)].sort((a, b) => a - b);
  for (let i = 0; i < sorted.length; i += IDS_PER_STATEMENT) {
    const part = sorted.slice(i, i + IDS_PER_STATEMENT);
    const sql = `SELECT id FROM ${quoteName(table)} WHERE ${dialect.inIdList('id', { single: part.length === 1 })} ORDER BY id${dialect.rowLock(strength)}`;
    await selectRows(db, sql, [dialect.idListParameter(part)]);
  }
}

/** Lock rows about to be changed (FOR NO KEY UPDATE), by id, in ascending ids. */
export function lockToChange(db: Db, table: string, ids: Iterable<number>): Promise<void> {
  return lockRows(db, table, ids, 'NO KEY UPDATE');
}

/** Lock rows about to be deleted (FOR UPDATE), by id, in ascending ids. */
export function lockToDelete(db: Db, table: string, ids: Iterable<number>): Promise<void> {
  return lockRows(db, table, ids, 'UPDATE');
}

/** `lockToChange` for the row (if any) whose `column` (unique) holds `value`: a record by its UUID, a session by its hash. */
export async function lockToChangeWhere(db: Db, table: string, column: string, value: string | number): Promise<void> {
  const dialect = dialectOf(db);
  if (!dialect.locksRows) return;
  await selectRows(
    db,
    `SELECT 1 AS locked FROM ${quoteName(table)} WHERE ${quoteName(column)} = ?${dialect.rowLock('NO KEY UPDATE')}`,
    [value],
  );
}

/*
 * THE GLOBAL LOCK ORDER (PostgreSQL). Two transactions that take locks in one order cannot
 * deadlock over them, so every write takes its locks in this order, and cites it:
 *
 * 1. The record's own row: a route's findForUpdate (jsonapi/handlers/record-access.ts), or
 *    lockRows for the records a command or the importer deletes.
 * 2. The rows of the other records it writes, by entity type in ENTITY_LOCK_ORDER, each type's in
 *    ascending ids (lockInOrder): for a save, the files it makes permanent (entities/file-usage.ts);
 *    for a deletion, its holders, then what else it writes (entities/deletion-locks.ts).
 * 3. (No lock now.) Revision numbers come from a sequence per entity type, which locks nothing
 *    (storage/revision-numbers.ts); the counter row it replaced was locked here until commit.
 * 4. The record's change-feed row (storage/change-feed.ts: versionOf with a lock, the upsert).
 * 5. The assets whose placements or inventories it rebuilds and a birth log's children, in one
 *    ascending pass (farm/placements.ts rebuild, farm/inventory.ts apply, EntityService
 *    applyBirths), each asset's feed row after its row: assets come last in ENTITY_LOCK_ORDER, so
 *    this keeps to it.
 *
 * The one transaction lock (accounts/names.ts's, an advisory lock) is taken by account saves
 * only, when they check names: after step 1, before step 2.
 */

/**
 * Entity types in the order their rows are locked; any other type follows, by name. A log's save
 * locks the files it makes permanent, then the assets it moves; an asset's save, its files; a
 * log's deletion, its quantities before the assets it moves. Quantities, terms and users lock
 * nothing else when saved, so their place is free.
 */
export const ENTITY_LOCK_ORDER: readonly string[] = ['log', 'quantity', 'file', 'asset'];

function rank(entityType: string): number {
  const i = ENTITY_LOCK_ORDER.indexOf(entityType);
  return i < 0 ? ENTITY_LOCK_ORDER.length : i;
}

/** Records to lock (entity type → ids) in the global order: type by type (ENTITY_LOCK_ORDER, then by name), each type's ids ascending. */
export function inLockOrder(
  records: ReadonlyMap<string, Iterable<number>>,
): Array<{ entityType: string; ids: number[] }> {
  return [...records.keys()]
    .sort((a, b) => rank(a) - rank(b) || a.localeCompare(b))
    .map((entityType) => ({ entityType, ids: [...new Set(records.get(entityType)!)].sort((a, b) => a - b) }))
    .filter((t) => t.ids.length > 0);
}

/** Lock these records in the global order (inLockOrder), each type at its strength (NO KEY UPDATE unless told). */
export async function lockInOrder(
  db: Db,
  tableOf: (entityType: string) => string,
  records: ReadonlyMap<string, Iterable<number>>,
  strengths: ReadonlyMap<string, RowLock> = new Map(),
): Promise<void> {
  for (const { entityType, ids } of inLockOrder(records))
    await lockRows(db, tableOf(entityType), ids, strengths.get(entityType));
}
