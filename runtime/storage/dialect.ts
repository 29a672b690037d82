/**
 * What differs between SQLite and PostgreSQL, in one object per dialect, chosen once when the
 * database is opened (storage/database.ts), as the rate limiters are (access/rate-limiter.ts):
 * lists of ids or strings bound as one parameter, row locks by strength, transaction locks,
 * comparison without regard to case, and the change feed's statements (storage/change-feed-*.ts).
 * Code that holds a `Database` reads `db.sql`; code that holds a Knex or a transaction asks
 * `dialectOf(db)`.
 */
import type { Knex } from 'knex';
import type { Db } from './records.ts';
import type { FeedCursor } from './change-feed.ts';
import { sqliteFeed } from './change-feed-sqlite.ts';
import { postgresFeed } from './change-feed-postgres.ts';

export type DialectName = 'sqlite' | 'postgres';

/**
 * How strongly a row is locked (PostgreSQL's row-level lock modes; SQLite has one writer, and
 * locks nothing):
 * - 'NO KEY UPDATE', as an UPDATE of the row takes: two of them wait for each other, but it does
 *   not wait on the KEY SHARE locks that references to the row take (a log being saved holds one
 *   on every asset it names). For a row about to be changed, or to make its writers take turns.
 * - 'UPDATE', as a DELETE (or an UPDATE of a key) takes: it also waits for, and then keeps out,
 *   the KEY SHARE lock a new reference takes. Only for rows about to be deleted, whose references
 *   must stop changing, or whose key is about to change.
 * Use the weaker one unless the stronger one is needed: a row locked FOR UPDATE waits on every
 * save naming it.
 */
export type RowLock = 'NO KEY UPDATE' | 'UPDATE';

/** The change feed's statements in one dialect (storage/change-feed.ts is the API and says how the feed is read). */
export interface FeedDialect {
  /**
   * Upsert `rows` feed rows, each bound as (entity type, entity id, bundle, uuid, deleted, changed);
   * the positions they were given where the statement tells them (PostgreSQL), else null.
   */
  upsert(
    db: Db,
    rows: number,
    bindings: readonly Knex.RawBinding[],
  ): Promise<Array<{ entity_id: number; position: number | string }> | null>;
  /** The horizon, and the rows (at most `limit` + 1) after `cursor` up to it of these kinds (`entity_type bundle`), in commit order. */
  read(
    db: Db,
    cursor: FeedCursor,
    kinds: readonly string[],
    limit: number,
    now: number,
  ): Promise<{ horizon: FeedCursor; rows: Array<Record<string, unknown>> }>;
  /** Whether a cursor lies past the horizon (issued by a database that had written more than this one). */
  ahead(cursor: FeedCursor, horizon: FeedCursor): boolean;
  /** The statement that fills the feed for one entity table's records it has no row of; binds (entity type, deleted, changed, entity type). */
  fillSql(table: string): string;
}

export interface SqlDialect {
  readonly name: DialectName;
  /**
   * `<column> IN <the ids bound as one parameter>` (SQLite's json_each, PostgreSQL's = ANY of an
   * array); `<column> = ?` for a single id (`single`). Two texts, not one: SQLite answers `= ?` for one record
   * (a log's ten side tables) in a fifteenth of the time it takes to walk a one-element json_each.
   */
  inIdList(column: string, options?: { single?: boolean }): string;
  /** The one parameter `inIdList` binds (the id itself when there is one). */
  idListParameter(ids: readonly number[]): string | number;
  /** `<column> IN <the strings bound as one parameter>` (as inIdList, for text such as UUIDs). */
  inTextList(column: string): string;
  /** The one parameter `inTextList` binds. */
  textListParameter(values: readonly string[]): string;
  /**
   * A SELECT of rows bound as one parameter (`jsonRowsParameter`: a JSON array of arrays, a row's
   * values in `types`' order), for `INSERT INTO t (columns) <this>`: one text whatever the number
   * of rows, where a multi-row VALUES list makes a new text (a new prepared statement) for each.
   */
  jsonRows(types: readonly JsonRowType[]): string;
  /** The one parameter `jsonRows` binds. */
  jsonRowsParameter(rows: ReadonlyArray<ReadonlyArray<number | string | null>>): string;
  /** Whether a transaction must lock rows to keep other writers out (PostgreSQL); SQLite runs one write transaction at a time. */
  readonly locksRows: boolean;
  /** ` FOR <strength>` to end a SELECT that locks its rows until the transaction ends; '' where rows are not locked. */
  rowLock(strength: RowLock): string;
  /** Take the transaction-scoped lock `key` (a PostgreSQL advisory lock), held until `db`'s transaction ends; nothing on SQLite. */
  transactionLock(db: Db, key: number): Promise<void>;
  /**
   * A comparison without regard to case, as farmOS compares (`=`, `<>`, `IN`, `NOT IN`): `lower()`
   * on both sides on PostgreSQL, SQLite's NOCASE collation (ASCII letters only), each matching
   * `caselessIndexColumn`. `left` is the column's SQL (a `??` placeholder, maybe with `+`), `count`
   * the number of `?` values on the right; `unindexed` writes the column `+…`, so that no index
   * serves the comparison.
   */
  caselessCondition(left: string, op: string, count: number, options?: { unindexed?: boolean }): string;
  /** An index column without regard to case (a `??` placeholder for the column's name). */
  readonly caselessIndexColumn: string;
  /** `<column> LIKE ?` without regard to case, `\` escaping the pattern. */
  caselessLike(column: string): string;
  /**
   * Whether the branches of a UNION must agree on each column's type (PostgreSQL): then a side
   * table's row is read as one JSON object (storage/record-sql.ts sideTablesSql), not as columns.
   */
  readonly unionOfOneType: boolean;
  /** `<expression>`'s values of a group joined into one string by `separator` (a constant). */
  stringAggregate(expression: string, separator: string): string;
  /**
   * Whether an index scan is ranged by one lower and one upper bound per column, so that a
   * filter's bound on a column may be chosen over a keyset cursor's (SQLite): then the filter's are
   * written `+column` (jsonapi/collection/compile.ts, `range`).
   */
  readonly rangesOneBoundPerColumn: boolean;
  /** Whether NULL sorts before other values in this direction. */
  nullsFirst(direction: 'ASC' | 'DESC'): boolean;
  /** The change feed's statements. */
  readonly feed: FeedDialect;
}

/** A column's type in `jsonRows`. */
export type JsonRowType = 'integer' | 'bigint' | 'text';

function placeholders(count: number): string {
  return Array.from({ length: count }, () => '?').join(', ');
}

export const SQLITE: SqlDialect = {
  name: 'sqlite',
  inIdList: (column, { single = false } = {}) =>
    single ? `${column} = ?` : `${column} IN (SELECT value FROM json_each(?))`,
  idListParameter: (ids) => (ids.length === 1 ? ids[0]! : `[${ids.join(',')}]`),
  inTextList: (column) => `${column} IN (SELECT value FROM json_each(?))`,
  textListParameter: (values) => JSON.stringify(values),
  // SQLite's columns take the value as it is (an integer stays an integer, JSON null is NULL).
  jsonRows: (types) => `SELECT ${types.map((_, i) => `json_extract(value, '$[${i}]')`).join(', ')} FROM json_each(?)`,
  jsonRowsParameter: (rows) => JSON.stringify(rows),
  locksRows: false,
  rowLock: () => '',
  transactionLock: async () => undefined,
  caselessCondition: (left, op, count, { unindexed = false } = {}) => {
    const column = `${unindexed ? '+' : ''}${left}`;
    if (op === 'IN' || op === 'NOT IN') return `${column} COLLATE NOCASE ${op} (${placeholders(count)})`;
    return `${column} ${op} ? COLLATE NOCASE`;
  },
  caselessIndexColumn: '?? COLLATE NOCASE',
  caselessLike: (column) => `${column} LIKE ? ESCAPE '\\'`,
  unionOfOneType: false,
  rangesOneBoundPerColumn: true,
  stringAggregate: (expression, separator) => `group_concat(${expression}, '${separator}')`,
  nullsFirst: (direction) => direction === 'ASC',
  // A getter: the feed's files import this one's importers (a cycle Node resolves once loaded).
  get feed() {
    return sqliteFeed;
  },
};

export const POSTGRES: SqlDialect = {
  name: 'postgres',
  inIdList: (column, { single = false } = {}) => (single ? `${column} = ?` : `${column} = ANY(?::bigint[])`),
  idListParameter: (ids) => (ids.length === 1 ? ids[0]! : `{${ids.join(',')}}`),
  inTextList: (column) => `${column} = ANY(?::text[])`,
  textListParameter: (values) => `{${values.map((v) => `"${v.replace(/[\\"]/g, (c) => `\\${c}`)}"`).join(',')}}`,
  jsonRows: (types) =>
    `SELECT ${types.map((type, i) => `(value->>${i})::${type}`).join(', ')} FROM json_array_elements(?::json)`,
  jsonRowsParameter: (rows) => JSON.stringify(rows),
  locksRows: true,
  rowLock: (strength) => ` FOR ${strength}`,
  transactionLock: async (db, key) => {
    await db.raw('SELECT pg_advisory_xact_lock(?)', [key]);
  },
  caselessCondition: (left, op, count, { unindexed = false } = {}) => {
    const column = `${unindexed ? '+' : ''}lower(${left})`;
    if (op === 'IN' || op === 'NOT IN')
      return `${column} ${op} (${Array.from({ length: count }, () => 'lower(?)').join(', ')})`;
    return `${column} ${op} lower(?)`;
  },
  caselessIndexColumn: 'lower(??)',
  caselessLike: (column) => `${column} ILIKE ? ESCAPE '\\'`,
  unionOfOneType: true,
  rangesOneBoundPerColumn: false,
  stringAggregate: (expression, separator) => `string_agg(${expression}, '${separator}')`,
  nullsFirst: (direction) => direction === 'DESC',
  get feed() {
    return postgresFeed;
  },
};

export const DIALECTS: Readonly<Record<DialectName, SqlDialect>> = { sqlite: SQLITE, postgres: POSTGRES };

/** The dialect of each database opened (by its Knex client's settings, which its transactions share). */
const chosen = new WeakMap<object, SqlDialect>();

/** Record the dialect of a Knex instance once, when it is made (storage/database.ts). */
export function registerDialect(knex: Knex, dialect: SqlDialect): void {
  chosen.set(knex.client.config as object, dialect);
}

/**
 * The dialect of a Knex instance or one of its transactions. Every database storage/database.ts
 * opens has it recorded; a Knex made elsewhere (a test's, a migration run by Knex's own migrator
 * on such a one) is told by its client's name, the one place that reads it.
 */
export function dialectOf(db: Db): SqlDialect {
  const config = db.client.config as { client?: unknown };
  return chosen.get(config) ?? (config.client === 'pg' ? POSTGRES : SQLITE);
}
