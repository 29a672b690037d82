/**
 * Database errors that a correct request can still meet under concurrency (two writers racing for
 * one UUID, a record deleted while another request references it, a busy SQLite file, a statement
 * prepared for a schema that changed), and a full disk or a log the disk did not take, which are
 * the operator's to fix: classified here as a `DatabaseFailure` (errors.ts), so that each face
 * answers them in its own (jsonapi/errors.ts `databaseApiError` for the API and the web pages,
 * oauth/oauth-errors.ts for the token endpoints) instead of a 500. No HTTP status here.
 */
import type { DatabaseFailure } from '../errors.ts';
import { ACCOUNT_UNIQUE_INDEXES } from './core-migrations/0007_account_uniqueness.ts';
import { WriteQueueTimeout } from './group-commit.ts';
import { isStalePrepared } from './sql.ts';
import { WalSyncFailed } from './wal-sync.ts';

interface DriverError {
  code?: string;
  errno?: number;
  message?: string;
  /** PostgreSQL's name of the violated constraint or index. */
  constraint?: string;
}

/** The account field whose unique index (core migration 0007) a violation names, if any. */
function accountFieldTaken(e: DriverError): 'name' | 'mail' | null {
  for (const [field, index] of Object.entries(ACCOUNT_UNIQUE_INDEXES) as Array<['name' | 'mail', string]>) {
    if (e.constraint === index || (e.message ?? '').includes(index)) return field;
  }
  return null;
}

/** The failure a database error stands for, or null when it is none of these (a bug, for the face to log). */
export function classifyDatabaseError(error: unknown): DatabaseFailure | null {
  if (!error || typeof error !== 'object') return null;
  const e = error as DriverError;
  const code = String(e.code ?? '');
  // PostgreSQL SQLSTATE codes; better-sqlite3's SqliteError codes.
  if (code === '23505' || code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY') {
    const taken = accountFieldTaken(e);
    return taken ? { kind: 'taken', field: taken } : { kind: 'duplicate' };
  }
  if (code === '23503' || code === 'SQLITE_CONSTRAINT_FOREIGNKEY') return { kind: 'reference-gone' };
  if (code === '40001' || code === '40P01') return { kind: 'collision' };
  // SQLITE_BUSY and its extended codes (SQLITE_BUSY_SNAPSHOT…); a write that waited too long for the others.
  if (
    /^SQLITE_(?:BUSY|LOCKED)/.test(code) ||
    error instanceof WriteQueueTimeout ||
    /Knex: Timeout acquiring a connection/.test(e.message ?? '')
  ) {
    return { kind: 'busy' };
  }
  // A statement prepared for a schema that changed under the server: its retry runs unprepared.
  if (isStalePrepared(error)) return { kind: 'schema-changed' };
  // A full disk (or a database at its size limit): the statement was undone, and so is the
  // request's transaction. Not the client's fault and not a bug: the operator must make room.
  if (code === 'SQLITE_FULL' || code === '53100') return { kind: 'disk-full' };
  // The disk did not take the log (wal-sync.ts).
  if (error instanceof WalSyncFailed) return { kind: 'wal-sync-failed' };
  return null;
}
