/**
 * The database's own transaction API (issue 40 §5): every transaction outside storage/ is opened
 * here, never with `knex.transaction`, which the lint forbids outside this folder
 * (eslint.config.js). One door keeps the rules of a write where storage can enforce them: on
 * SQLite a top-level write joins the group commit's batch as a savepoint (storage/group-commit.ts,
 * storage/database.ts) and is acknowledged only once the write-ahead log is synced; inside a
 * transaction, `write` on the transaction is a savepoint of its own, which a failure rolls back
 * alone.
 *
 * The body must await every statement it starts and must not call `trx.commit()` or
 * `trx.rollback()`: the batch it shares a COMMIT with decides (storage/database.ts).
 */
import type { Knex } from 'knex';

/** Run `body` in a write transaction (a savepoint when `db` is a transaction already). */
export function write<T>(db: Knex | Knex.Transaction, body: (trx: Knex.Transaction) => Promise<T>): Promise<T> {
  // The one call of Knex's transaction outside storage/database.ts's own.
  return db.transaction(body);
}
