/**
 * The database's own transaction API (issue 40 §5): every transaction outside storage/ is opened
 * here, never with `knex.transaction`, which the lint forbids outside this folder
 * (eslint.config.js). One door keeps the rules of a write where storage can enforce them.
 *
 * - `write(db, body)`: on SQLite a top-level write joins the group commit's batch
 *   (storage/group-commit.ts): the first write of a batch runs in its transaction, each later one
 *   in a savepoint of its own that a failure rolls back alone, and the write is answered only once
 *   the shared COMMIT is in the synced write-ahead log. Called on a transaction, it is a savepoint
 *   of that transaction (Knex's nested transaction). On PostgreSQL it is a Knex transaction.
 *   `knex.transaction` itself is Knex's, unchanged: a transaction opened with it on SQLite is a
 *   transaction of its own (BEGIN … COMMIT on the one writer connection, waiting its turn), whose
 *   COMMIT is still acknowledged only once on disk (storage/database.ts `_query`).
 * - `Database.read(body)` (storage/database.ts): reads that must agree, in one state of the
 *   database; there it says how each database does it, and why.
 * - `Database.write(body)` is `write` on the database's own Knex.
 *
 * The body of a write must await every statement it starts and must not call `trx.commit()` or
 * `trx.rollback()`: the batch it shares a COMMIT with decides (storage/group-commit.ts). Return,
 * or throw.
 */
import type { Knex } from 'knex';
import { groupCommitOf } from './database.ts';

/** Run `body` in a write transaction (a savepoint when `db` is a transaction already). */
export function write<T>(db: Knex | Knex.Transaction, body: (trx: Knex.Transaction) => Promise<T>): Promise<T> {
  const batch = groupCommitOf(db);
  if (batch) return batch.run(body) as Promise<T>;
  // PostgreSQL, a savepoint within a transaction, or an SQLite database not opened by
  // storage/database.ts (a test's own Knex): Knex's transaction.
  return db.transaction(body);
}
