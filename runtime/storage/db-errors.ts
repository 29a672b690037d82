/**
 * Database errors that a correct request can still meet under concurrency (two writers racing for
 * one UUID, a record deleted while another request references it, a busy SQLite file, a statement
 * prepared for a schema that changed), turned into the JSON:API errors a client can act on instead
 * of a 500; and a full disk, which is the operator's to fix (507, logged).
 */
import { ApiError, ValidationError, conflict, insufficientStorage } from '../errors.ts';
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

/** accounts/names.ts's words for a taken name, for the save that lost a race to the unique index. */
const TAKEN =
  'it is already taken: another account has it as its name or e-mail address (compared without regard to case).';

/** The account field whose unique index (core migration 0007) a violation names, if any. */
function accountFieldTaken(e: DriverError): 'name' | 'mail' | null {
  for (const [field, index] of Object.entries(ACCOUNT_UNIQUE_INDEXES) as Array<['name' | 'mail', string]>) {
    if (e.constraint === index || (e.message ?? '').includes(index)) return field;
  }
  return null;
}

export function fromDatabaseError(error: unknown): ApiError | null {
  if (!error || typeof error !== 'object') return null;
  const e = error as DriverError;
  const code = String(e.code ?? '');
  // PostgreSQL SQLSTATE codes; better-sqlite3's SqliteError codes.
  if (code === '23505' || code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY') {
    const taken = accountFieldTaken(e);
    if (taken)
      return new ValidationError([{ field: { kind: 'attribute', name: taken }, detail: `${taken}: ${TAKEN}` }]);
    return conflict(
      'Conflict: another request created the same resource at the same time. Fetch it, or retry with another id.',
    );
  }
  if (code === '23503' || code === 'SQLITE_CONSTRAINT_FOREIGNKEY') {
    return conflict(
      'Conflict: a related resource was deleted while this request was being handled. Retry the request.',
    );
  }
  if (code === '40001' || code === '40P01') {
    return conflict('Conflict: this write collided with another one. Retry the request.');
  }
  // SQLITE_BUSY and its extended codes (SQLITE_BUSY_SNAPSHOT…); a write that waited too long for the others.
  if (
    /^SQLITE_(?:BUSY|LOCKED)/.test(code) ||
    error instanceof WriteQueueTimeout ||
    /Knex: Timeout acquiring a connection/.test(e.message ?? '')
  ) {
    return new ApiError(503, 'The database is busy. Retry in a moment.', { headers: { 'Retry-After': '1' } });
  }
  // A statement prepared for a schema that changed under the server: its retry runs unprepared.
  if (isStalePrepared(error)) {
    return new ApiError(503, "The database's schema changed while this request ran. Retry it.", {
      headers: { 'Retry-After': '1' },
    });
  }
  // A full disk (or a database at its size limit): the statement was undone, and so is the
  // request's transaction. Not the client's fault and not a bug: the operator must make room.
  if (code === 'SQLITE_FULL' || code === '53100') {
    return insufficientStorage();
  }
  // The disk did not take the log (wal-sync.ts): a 500, logged, and worded for the person asking.
  if (error instanceof WalSyncFailed) {
    return new ApiError(
      500,
      'The server could not make this write safe on its disk, so it may not be kept; writes are refused until the operator checks the disk and restarts Tilth.',
    );
  }
  return null;
}
