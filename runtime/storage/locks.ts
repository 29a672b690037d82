/**
 * Row locks, one function per strength (what the strengths mean: storage/dialect.ts RowLock).
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
export async function lockRows(db: Db, table: string, ids: Iterable<number>, strength: RowLock = 'NO KEY UPDATE'): Promise<void> {
  const dialect = dialectOf(db);
  if (!dialect.locksRows) return;
  const sorted = [...new Set(ids)].sort((a, b) => a - b);
  for (let i = 0; i < sorted.length; i += IDS_PER_STATEMENT) {
    const part = sorted.slice(i, i + IDS_PER_STATEMENT);
    const sql = `SELECT id FROM ${quoteName(table)} WHERE ${dialect.inIdList('id', part.length === 1)} ORDER BY id${dialect.rowLock(strength)}`;
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
  await selectRows(db, `SELECT 1 AS locked FROM ${quoteName(table)} WHERE ${quoteName(column)} = ?${dialect.rowLock('NO KEY UPDATE')}`, [value]);
}
