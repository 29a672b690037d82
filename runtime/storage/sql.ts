/**
 * Raw SQL on the hot read paths. The statements that run on every request (a record by UUID, a
 * page of records with their side tables, the targets of references) have a fixed shape per
 * entity type, so their text is built once and kept, instead of a Knex query builder assembling
 * and compiling it on each request. A list of ids is one bound parameter (SQLite's json_each,
 * PostgreSQL's = ANY of an array), and a single id is `= ?`, so the text takes one of two forms
 * whatever the list's length and SQLite's statement cache (storage/database.ts) prepares each once.
 */
import { createHash } from 'node:crypto';
import type { Knex } from 'knex';
import type { Db } from './records.ts';
import { directConnectionOf, readConnectionOf } from './database.ts';
import { dialectOf } from './dialect.ts';
import { BoundedMemo } from '../values/bounded-memo.ts';

/** A table or column name from the definitions, quoted the same on SQLite and PostgreSQL. */
export function quoteName(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

/** Whether `db` is PostgreSQL; prefer asking `dialectOf(db)` (storage/dialect.ts) what differs. */
export function isPostgres(db: Db): boolean {
  return dialectOf(db).name === 'postgres';
}

/**
 * A number that changes whenever any connection has committed a change to the database since it
 * was last asked (SQLite's data_version, on the read connection), or undefined where there is no
 * such cheap signal: on PostgreSQL, and inside a transaction. What is kept in memory because it
 * was read from the database is still true while this number stays the same.
 */
export function changeCounter(db: Db): number | undefined {
  return readConnectionOf(db)?.dataVersion();
}

/** Most distinct statements prepared on PostgreSQL; later ones are parsed and planned on each run. */
const MAX_PREPARED = 300;
const preparedNames = new Map<string, string>();
/** False once a prepared statement turned out stale (isStalePrepared): then nothing is prepared. */
let preparing = true;

/**
 * On PostgreSQL, the statements of selectRows are prepared once per connection (pg's named
 * statements, named by a hash of their text), as their text is built once per shape: a UNION ALL
 * of ten side tables costs more to parse and plan than to run. Clients can make new texts
 * (filters, sparse fieldsets) and each connection keeps what it prepared until it closes, so only
 * the first MAX_PREPARED distinct texts are named. If one turns out stale, preparing stops.
 */
function preparedName(sql: string): string | undefined {
  if (!preparing) return undefined;
  let name = preparedNames.get(sql);
  if (name === undefined && preparedNames.size < MAX_PREPARED) {
    name = `tilth_${createHash('sha256').update(sql).digest('hex').slice(0, 24)}`;
    preparedNames.set(sql, name);
  }
  return name;
}

/**
 * A prepared statement that no longer fits its session: gone from it (26000: a pooler such as
 * PgBouncer in transaction mode hands each statement to another session), or planned for a schema
 * that has since changed (a migration run beside the server: "cached plan must not change result
 * type").
 */
export function isStalePrepared(error: unknown): boolean {
  const e = error as { code?: unknown; message?: unknown } | null;
  return (
    e?.code === '26000' || (e?.code === '0A000' && /cached plan must not change result type/.test(String(e.message)))
  );
}

/** Rows of a raw SELECT, on either database. */
export async function selectRows<T = Record<string, unknown>>(
  db: Db,
  sql: string,
  bindings: readonly Knex.RawBinding[],
): Promise<T[]> {
  // Outside a transaction on SQLite: the read connection, without a trip through the pool.
  const reader = readConnectionOf(db);
  if (reader) return reader.all(sql, bindings) as T[];
  // In a transaction on SQLite: its connection, without Knex's runner.
  const direct = directConnectionOf(db);
  if (direct) return direct.all(sql, bindings) as T[];
  if (!isPostgres(db)) return (await db.raw(sql, bindings)) as T[];
  const name = preparedName(sql);
  if (name) {
    try {
      return ((await db.raw(sql, bindings).options({ name })) as { rows: T[] }).rows;
    } catch (error) {
      if (!isStalePrepared(error)) throw error;
      // From now on this process prepares nothing. A transaction is aborted by the error, so its
      // request fails (a 503, storage/db-errors.ts) and its retry runs unprepared.
      preparing = false;
      if ((db as Knex.Transaction).isTransaction) throw error;
    }
  }
  return ((await db.raw(sql, bindings)) as { rows: T[] }).rows;
}

/**
 * Run a raw INSERT, UPDATE or DELETE, on either database; how many rows it changed. Its text, like
 * selectRows', is built once per shape by the caller (SqlMemo), not by a query builder per call.
 */
export async function execute(db: Db, sql: string, bindings: readonly Knex.RawBinding[]): Promise<number> {
  const direct = directConnectionOf(db);
  if (direct) return direct.run(sql, bindings).changes;
  // pg answers with its result's rowCount; Knex's better-sqlite3 client with the run's changes.
  const result = (await db.raw(sql, bindings)) as { rowCount?: number | null; changes?: number };
  return Number(result.rowCount ?? result.changes ?? 0);
}

/** The rows a raw write's RETURNING clause gives, on either database (never on the read connection). */
export async function returningRows<T = Record<string, unknown>>(
  db: Db,
  sql: string,
  bindings: readonly Knex.RawBinding[],
): Promise<T[]> {
  const direct = directConnectionOf(db);
  if (direct) return direct.all(sql, bindings) as T[];
  const result = (await db.raw(sql, bindings)) as T[] | { rows: T[] };
  return Array.isArray(result) ? result : result.rows;
}

/**
 * Insert one row (`INSERT INTO table (columns) VALUES (?, …)`, the text built once per shape by
 * the caller) and return its id. SQLite gives the new row's id without RETURNING, which would make
 * it journal every page the row touches (a statement journal, as for a statement that may change
 * many rows); PostgreSQL is asked with `RETURNING id`.
 */
export async function insertReturningId(db: Db, sql: string, bindings: readonly Knex.RawBinding[]): Promise<number> {
  const direct = directConnectionOf(db);
  if (direct) return Number(direct.run(sql, bindings).lastInsertRowid);
  if (isPostgres(db))
    return Number(((await db.raw(`${sql} RETURNING id`, bindings)) as { rows: Array<{ id: number }> }).rows[0]!.id);
  // Outside a transaction on SQLite, through Knex (which waits for the sync): the run's info.
  return Number(((await db.raw(sql, bindings)) as unknown as { lastInsertRowid: number | bigint }).lastInsertRowid);
}

/**
 * A memo of built SQL text with a bound on its size: the keys come from requests (sparse
 * fieldsets pick side tables), so a client must not be able to grow it without end.
 */
export class SqlMemo extends BoundedMemo<string> {
  constructor(limit = 500) {
    super(limit);
  }
}
