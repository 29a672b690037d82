/**
 * Opens the database: PostgreSQL when DATABASE_URL is set, otherwise an SQLite file under
 * TILTH_DATA_DIR with WAL, foreign keys, a busy timeout and `synchronous` as configured (FULL by
 * default: a write is on disk before it is acknowledged). One Knex instance per process.
 */
import { accessSync, constants, existsSync, mkdirSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import knexFactory, { type Knex } from 'knex';
import BetterSqlite3 from 'better-sqlite3';
import pg from 'pg';
import { ConfigError } from '../config.ts';
import { GroupCommit, type Durability, type Savepoints } from './group-commit.ts';
import { WalSync, WRITER_CHECKPOINT_PAGES } from './wal-sync.ts';
import { POSTGRES, SQLITE, registerDialect, type DialectName, type SqlDialect } from './dialect.ts';

// Counts and bigints come back from PostgreSQL as strings by default; timestamps here are
// Unix seconds and ids are far below 2^53, so read them as numbers.
pg.types.setTypeParser(pg.types.builtins.INT8, (v: string) => Number(v));
pg.types.setTypeParser(pg.types.builtins.NUMERIC, (v: string) => v);

export type Dialect = DialectName;

/**
 * A failed statement's error names its SQL with placeholders, not its values: Knex's default
 * writes the values in, and failures are logged (a full disk, a bug), so every request's data
 * (names, notes, a data stream's key) would reach the operator's log.
 */
const KNEX_ERRORS = {
  compileSqlOnError: false,
  // Knex prints "Acquire connection error" with the driver's stack trace before it throws the same
  // error to the caller, who says it in its own words (one line from the tilth command, a 503 and a
  // log line from the server): the trace only buried that line. Its other warnings still show.
  log: {
    warn: (message: string) => (message.startsWith('Acquire connection error') ? undefined : console.warn(message)),
  },
} as const;

/** How long an SQLite statement waits for another process's lock before SQLITE_BUSY (a 503). */
const BUSY_TIMEOUT_MS = 5000;

export interface Database {
  knex: Knex;
  /** The dialect's name; `sql` is the dialect itself (storage/dialect.ts), chosen here once. */
  dialect: Dialect;
  sql: SqlDialect;
  /**
   * Run `body` in a write transaction: on SQLite a savepoint in the group commit's batch,
   * acknowledged once the shared COMMIT is on disk (storage/transactions.ts `write`).
   */
  write<T>(body: (trx: Knex.Transaction) => Promise<T>): Promise<T>;
  /**
   * Run `body`'s reads against one state of the database, so that several statements agree (a
   * page and its count; a record's row and its side tables) though writes commit meanwhile.
   * Writes in it fail. The body must not wait on the network: it holds a connection.
   * - PostgreSQL: a READ ONLY transaction at REPEATABLE READ, whose snapshot is taken at its
   *   first statement and kept to its end. (Not a plain read on the pool: each statement of
   *   READ COMMITTED sees the commits made since the one before.) Two round trips more than the
   *   same statements outside it, so use it where statements must agree, not for every read.
   * - SQLite: a read transaction on a connection of its own (query_only, two at most, opened on
   *   first use), not the shared read connection, which other requests' reads use meanwhile and
   *   which must always see the latest commit (a client reads back what it just wrote).
   * Not for the change feed's page (storage/change-feed.ts): on PostgreSQL its rows must be read
   * by a statement that sees every commit made before its horizon's statement ended, and a
   * snapshot taken at the horizon's statement would miss those that ended in between for good.
   * Its statements agree without one (the horizon).
   */
  read<T>(body: (db: Knex.Transaction) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

export function openDatabase(options: {
  databaseUrl: string | null;
  dataDir: string;
  sqliteSynchronous?: 'FULL' | 'NORMAL';
}): Database {
  if (options.databaseUrl) {
    const knex = knexFactory({
      client: 'pg',
      ...KNEX_ERRORS,
      connection: options.databaseUrl,
      pool: { min: 0, max: 10 },
    });
    registerDialect(knex, POSTGRES);
    return {
      knex,
      dialect: 'postgres',
      sql: POSTGRES,
      write: (body) => knex.transaction(body),
      read: (body) => knex.transaction(body, { isolationLevel: 'repeatable read', readOnly: true }),
      close: () => knex.destroy(),
    };
  }
  try {
    mkdirSync(options.dataDir, { recursive: true });
    accessSync(options.dataDir, constants.W_OK);
  } catch (error) {
    throw new ConfigError(
      `TILTH_DATA_DIR must be a directory Tilth can write to; ${options.dataDir} is not (${(error as NodeJS.ErrnoException).code}).`,
    );
  }
  const file = join(options.dataDir, 'tilth.sqlite');
  // FULL: a write is on disk before it is acknowledged, synced off the event loop (wal-sync.ts),
  // so SQLite itself runs NORMAL. NORMAL: nothing syncs the log but SQLite's checkpoints.
  const walSync = options.sqliteSynchronous === 'NORMAL' ? null : new WalSync(file);
  const knex = knexFactory({
    client: SqliteClient as unknown as typeof Knex.Client,
    ...KNEX_ERRORS,
    connection: { filename: file },
    useNullAsDefault: true,
    // One connection: better-sqlite3 is synchronous, and SQLite serialises writers anyway.
    pool: {
      min: 1,
      max: 1,
      afterCreate: (
        conn: { pragma(s: string, options?: { simple?: boolean }): unknown; prepare(sql: string): unknown },
        done: (err: Error | null, conn: unknown) => void,
      ) => {
        cachePreparedStatements(conn, knex, 'writer');
        const wal = String(conn.pragma('journal_mode = WAL', { simple: true })).toLowerCase() === 'wal';
        conn.pragma('foreign_keys = ON');
        // Journals of statements and savepoints (group commit's) in memory, not in temporary
        // files: a write copies a page of every index it touches there first (25 for a log), and
        // a file made each insert cost twice as much. In memory SQLite's sorter never spills, so
        // migrations (a CREATE INDEX over every log) switch back to files while they run.
        conn.pragma('temp_store = MEMORY');
        conn.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`);
        // Syncing the log from beside needs a log: a file that cannot be in WAL mode (it never
        // is on the file systems Tilth runs on) keeps SQLite's own FULL.
        if (walSync && wal) {
          (conn as unknown as Writer)[WAL_SYNC] = walSync;
          // Checkpoints are the sync thread's (wal-sync.ts); the writer's own only past this.
          conn.pragma(`wal_autocheckpoint = ${WRITER_CHECKPOINT_PAGES}`);
          // A log that grew (the safety net above, a reader in another process holding it) is
          // cut back to this when it is next started afresh, instead of keeping its size.
          conn.pragma(`journal_size_limit = ${32 * 1024 * 1024}`);
        }
        conn.pragma(`synchronous = ${walSync && !wal ? 'FULL' : 'NORMAL'}`);
        writers.set(
          knex.client.config as object,
          new WriterConnection(conn as unknown as BetterSqlite3.Database, knex),
        );
        done(null, conn);
      },
    },
  });
  registerDialect(knex, SQLITE);
  const reader = new ReadConnection(file, knex);
  const client = knex.client as SqliteClient;
  client.reader = reader;
  client.walSync = walSync ?? undefined;
  const durability: Durability | undefined = walSync
    ? {
        defer: (transaction) => ((transaction.client as Deferrable)[SYNC_DEFERRED] = true),
        sync: () => walSync.sync(),
        failure: () => walSync.failure(),
        checkpoint: () => {
          void walSync.checkpoint();
          return walSync.checkpointRunning();
        },
      }
    : undefined;
  const groupCommit = new GroupCommit(
    (container) => new ImmediateTransaction(client, container, { userParams: {}, doNotRejectOnRollback: true }, null),
    BATCH_SAVEPOINTS,
    durability,
  );
  client.groupCommit = groupCommit;
  const snapshots = new SnapshotReads(file);
  return {
    knex,
    dialect: 'sqlite',
    sql: SQLITE,
    write<T>(body: (trx: Knex.Transaction) => Promise<T>): Promise<T> {
      return groupCommit.run(body) as Promise<T>;
    },
    read: (body) => snapshots.read(body),
    close: async () => {
      groupCommit.close(new Error('The database was closed.'));
      await walSync?.close();
      reader.close();
      await snapshots.close();
      await knex.destroy();
    },
  };
}

/**
 * SQLite's consistent reads (`Database.read`): each in a read transaction of Knex's own on a
 * query-only connection of a small pool beside the writer and the shared reader. In WAL mode a
 * read transaction keeps the state of its first statement to its end, while the writer commits.
 * A plain Knex (its better-sqlite3 dialect as it comes): nothing here is extended.
 */
class SnapshotReads {
  private knex: Knex | null = null;

  constructor(private readonly file: string) {}

  read<T>(body: (db: Knex.Transaction) => Promise<T>): Promise<T> {
    this.knex ??= this.open();
    return this.knex.transaction(body);
  }

  private open(): Knex {
    const knex = knexFactory({
      client: 'better-sqlite3',
      ...KNEX_ERRORS,
      connection: { filename: this.file },
      useNullAsDefault: true,
      pool: {
        min: 0,
        max: 2,
        afterCreate: (conn: BetterSqlite3.Database, done: (err: Error | null, conn: unknown) => void) => {
          conn.pragma('query_only = ON');
          conn.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`);
          cachePreparedStatements(conn, knex, 'snapshot');
          done(null, conn);
        },
      },
    });
    registerDialect(knex, SQLITE);
    return knex;
  }

  async close(): Promise<void> {
    await this.knex?.destroy();
    this.knex = null;
  }
}

/**
 * SQLite's second connection, for reads outside transactions. In WAL mode a reader sees the last
 * committed state while a writer works, so a read never waits in Knex's one-connection pool
 * behind a write transaction, and never sees one's uncommitted rows. It is a plain synchronous
 * better-sqlite3 handle: a statement runs whole within one turn of the event loop. Opened on
 * first use, and refuses writes (query_only).
 */
class ReadConnection {
  private connection: BetterSqlite3.Database | null = null;

  constructor(
    private readonly file: string,
    private readonly knex: Knex,
  ) {}

  /** Rows of a SELECT (storage/sql.ts selectRows). */
  all(sql: string, bindings: readonly unknown[]): unknown[] {
    announce(this.knex, sql, bindings);
    return (this.handle().prepare(sql) as BetterSqlite3.Statement).all(sqliteBindings(bindings));
  }

  /** The connection and its `data_version` when last asked, and how many changes were seen. */
  private seen: { connection: BetterSqlite3.Database | null; version: number; changes: number } = {
    connection: null,
    version: 0,
    changes: 0,
  };

  /**
   * A count that moves whenever another connection has committed since it was last asked (this
   * process's writer, a `tilth` command, another server on the same file): SQLite's
   * `data_version`, which reads the write-ahead log's index, not a table. A reopened connection
   * counts its own data_version from the start, so a new connection counts as a change too.
   */
  dataVersion(): number {
    const connection = this.handle();
    const version = connection.prepare('PRAGMA data_version').pluck().get() as number;
    if (connection !== this.seen.connection || version !== this.seen.version)
      this.seen = { connection, version, changes: this.seen.changes + 1 };
    return this.seen.changes;
  }

  /** The better-sqlite3 handle, opened on first use, its statements cached as the pool's are. */
  handle(): BetterSqlite3.Database {
    if (!this.connection) {
      const connection = new BetterSqlite3(this.file);
      connection.pragma('query_only = ON');
      connection.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`);
      cachePreparedStatements(connection, this.knex, 'reader');
      this.connection = connection;
    }
    return this.connection;
  }

  close(): void {
    this.connection?.close();
    this.connection = null;
  }
}

/** Knex's 'query' event, as for every statement Knex runs, for whoever watches the SQL (tests, debugging). */
function announce(knex: Knex, sql: string, bindings: readonly unknown[]): void {
  if (knex.listenerCount('query')) knex.emit('query', { method: 'raw', sql, bindings });
}

/** Bindings as Knex's better-sqlite3 client binds them: booleans as 0/1, dates as milliseconds, undefined as NULL. */
function sqliteBindings(bindings: readonly unknown[]): unknown[] {
  return bindings.map((b) =>
    typeof b === 'boolean' ? Number(b) : b instanceof Date ? b.valueOf() : b === undefined ? null : b,
  );
}

/** A statement run straight on a connection: its rows, or what it changed. */
export interface DirectConnection {
  all(sql: string, bindings: readonly unknown[]): unknown[];
  run(sql: string, bindings: readonly unknown[]): { changes: number; lastInsertRowid: number | bigint };
}

/** The writer connection, for statements run on it directly, announced as Knex announces its own. */
class WriterConnection implements DirectConnection {
  constructor(
    readonly handle: BetterSqlite3.Database,
    private readonly knex: Knex,
  ) {}

  all(sql: string, bindings: readonly unknown[]): unknown[] {
    announce(this.knex, sql, bindings);
    return this.statement(sql).all(sqliteBindings(bindings));
  }

  run(sql: string, bindings: readonly unknown[]): { changes: number; lastInsertRowid: number | bigint } {
    announce(this.knex, sql, bindings);
    return this.statement(sql).run(sqliteBindings(bindings));
  }

  /**
   * The prepared statement; refused, when it writes, once a sync of the log has failed, as
   * `_query` refuses Knex's (wal-sync.ts): a transaction's BEGIN writes nothing, so a transaction
   * begun after the failure (one of Knex's own) or before it (the next batch) is not stopped there.
   */
  private statement(sql: string): BetterSqlite3.Statement {
    const statement = this.handle.prepare(sql);
    const failure = (this.handle as unknown as Writer)[WAL_SYNC]?.failure();
    if (failure && !statement.readonly) throw failure;
    return statement;
  }
}

/**
 * The writer connection of each SQLite Knex instance, by its client's config (which the clients
 * Knex makes for its transactions share). There is one writer: the pool holds one connection.
 */
const writers = new WeakMap<object, WriterConnection>();

/** The savepoint each later write of a group commit's batch runs in (group-commit.ts). */
const BATCH_SAVEPOINTS: Savepoints = {
  begin: (outer) => batchConnection(outer).run('SAVEPOINT tilth_write', []),
  release: (outer) => batchConnection(outer).run('RELEASE tilth_write', []),
  rollback: (outer) => {
    const connection = batchConnection(outer);
    connection.run('ROLLBACK TO tilth_write', []);
    connection.run('RELEASE tilth_write', []);
  },
};

function batchConnection(outer: Knex.Transaction): DirectConnection {
  const connection = directConnectionOf(outer);
  if (!connection) throw new Error('The write transaction has ended.');
  return connection;
}

/**
 * The connection of a live SQLite transaction, to run statements on directly (storage/sql.ts):
 * better-sqlite3 is synchronous and a transaction's statements run one after another on the one
 * writer connection, so Knex's runner, promise chain and transaction wrapper add nothing but
 * time (a fifth of a write's, profiled). None on PostgreSQL; none outside a transaction, where a
 * write must wait for its sync (`_query` below); none for a transaction that has ended, where
 * Knex's own error is the answer.
 */
export function directConnectionOf(db: Knex | Knex.Transaction): DirectConnection | undefined {
  const client = db.client as { transacting?: boolean; config: object };
  if (!client.transacting || (db as Knex.Transaction).isCompleted()) return undefined;
  const writer = writers.get(client.config);
  return writer?.handle.inTransaction ? writer : undefined;
}

/**
 * The Knex release whose private modules and methods this file extends (its better-sqlite3
 * dialect's client class, with `_query` and `runner` overridden; its SQLite transaction class,
 * which ImmediateTransaction extends; and its `_query` preparing every statement through the
 * connection's `prepare`, which cachePreparedStatements wraps): package.json pins it, and
 * test/unit/knex-version.test.ts fails when the installed one differs, so that an upgrade is a
 * decision with this file read again, not a patch release that quietly breaks group commit.
 */
export const KNEX_EXTENDED_RELEASE = '3.3.0';

// Knex's better-sqlite3 dialect, extended below; Knex exports it only by path.
const BetterSqliteClient = createRequire(import.meta.url)('knex/lib/dialects/better-sqlite3/index.js') as new (
  config: unknown,
) => object;
const READ_METHODS = new Set(['select', 'first', 'pluck']);
const SqliteTransaction = createRequire(import.meta.url)(
  'knex/lib/dialects/sqlite3/execution/sqlite-transaction.js',
) as new (...args: unknown[]) => PromiseLike<unknown>;

/**
 * A transaction that is the database's writer from its BEGIN (group commit's batches): it reads
 * the latest commit, and no other process can commit under it (group-commit.ts says why).
 */
class ImmediateTransaction extends SqliteTransaction {
  /**
   * BEGIN IMMEDIATE, waiting for another process's write lock without blocking the event loop:
   * SQLite's busy timeout sleeps in the calling thread, so here it is off and the BEGIN is tried
   * again on a timer, for as long as the busy timeout would have waited. Meanwhile reads go on,
   * and the writes that arrive queue to join this batch. Failing, it rejects before the body runs.
   */
  async begin(
    this: { trxClient: { query(conn: unknown, sql: string): Promise<unknown> } },
    conn: { pragma(sql: string): unknown },
  ): Promise<unknown> {
    const giveUp = Date.now() + BUSY_TIMEOUT_MS;
    conn.pragma('busy_timeout = 0');
    try {
      for (let wait = 1; ; wait = Math.min(2 * wait, 50)) {
        try {
          return await this.trxClient.query(conn, 'BEGIN IMMEDIATE;');
        } catch (error) {
          if (!/^SQLITE_BUSY/.test(String((error as { code?: unknown }).code)) || Date.now() >= giveUp) throw error;
          await new Promise((resolve) => setTimeout(resolve, wait));
        }
      }
    } finally {
      conn.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`);
    }
  }
}

/** The writer connection's sync of the log (absent with TILTH_SQLITE_SYNCHRONOUS=NORMAL). */
const WAL_SYNC = Symbol('WAL sync');
/**
 * Set on the client Knex makes for a group commit's batch transaction (its statements run with
 * it as `this`): that COMMIT does not wait for the sync, the batch does. Other transactions and
 * writes outside one use other clients, so they always wait.
 */
const SYNC_DEFERRED = Symbol('sync deferred');
interface Deferrable {
  [SYNC_DEFERRED]?: boolean;
}
interface Writer {
  inTransaction: boolean;
  prepare(sql: string): { readonly: boolean };
  [WAL_SYNC]?: WalSync;
}

/** Syncs of SQLite's log so far, the seconds they took and the checkpoints made (the metrics); none on PostgreSQL or with NORMAL. */
export function walSyncStats(
  db: Knex,
): { count: number; seconds: number; checkpoints: number; checkpointFailures: number } | undefined {
  return (db.client as { walSync?: WalSync }).walSync;
}

/** Writes waiting to share a commit (SQLite's group commit); 0 on PostgreSQL. */
export function queuedWrites(db: Knex): number {
  return (db.client as { groupCommit?: GroupCommit }).groupCommit?.queued ?? 0;
}

/**
 * The group commit a write on `db` joins (storage/transactions.ts `write`): that of the SQLite
 * database storage/database.ts opened, when `db` is its Knex instance; none on PostgreSQL, for a
 * transaction (a write there is a savepoint of it) or for a Knex made elsewhere.
 */
export function groupCommitOf(db: Knex | Knex.Transaction): GroupCommit | undefined {
  // Knex makes a client of its own for each transaction, which carries no group commit.
  const client = db.client as { groupCommit?: GroupCommit; transacting?: boolean };
  return client.transacting ? undefined : client.groupCommit;
}

/**
 * Knex's better-sqlite3 client, with the SELECTs of query builders outside a transaction run on
 * the read connection: Knex's runner uses a connection set on it instead of taking one from the
 * pool. A transaction's client (Knex makes one per transaction, `transacting`) and every write,
 * raw statement and schema change keep the pool's one connection.
 */
class SqliteClient extends BetterSqliteClient {
  reader?: ReadConnection;
  /** Set on the pool's client only (not on the copies Knex makes for transactions). */
  groupCommit?: GroupCommit;
  walSync?: WalSync;

  /**
   * A statement that committed (a COMMIT, or a write outside a transaction) settles only once the
   * log is on disk, so what is acknowledged survives a power cut (wal-sync.ts). Group commit's
   * batches wait for it themselves, after their COMMIT, so that the next batch runs meanwhile.
   */
  async _query(connection: Writer, obj: { sql: string }): Promise<unknown> {
    const own = (BetterSqliteClient.prototype as unknown as { _query(c: unknown, o: unknown): Promise<unknown> })
      ._query;
    const wal = connection[WAL_SYNC];
    if (!wal) return own.call(this, connection, obj);
    // After a failed sync the disk is not trusted: no more writes (wal-sync.ts).
    const failure = wal.failure();
    const inTransaction = connection.inTransaction;
    // Whether the statement writes matters outside a transaction (it commits) or after a failure;
    // a batch's own statements are not asked (a savepoint's text, never cached, is not prepared twice).
    const writes = (failure !== null || !inTransaction) && !connection.prepare(obj.sql).readonly;
    if (failure && writes) throw failure;
    // A write outside a batch (a statement on its own, or a transaction of Knex's own) begins
    // after a running checkpoint, as batches do, so that the log it copied is started afresh.
    if (!inTransaction && (writes || /^\s*BEGIN/i.test(obj.sql))) {
      const checkpoint = wal.checkpointRunning();
      if (checkpoint) await checkpoint;
    }
    const result = await own.call(this, connection, obj);
    if (connection.inTransaction || (this as Deferrable)[SYNC_DEFERRED]) return result;
    const committed = inTransaction ? !/^\s*ROLLBACK/i.test(obj.sql) : writes;
    if (committed) {
      await wal.sync();
      // And asks for one when due: batches are not the only writes (tokens, sign-in requests).
      void wal.checkpoint();
    }
    return result;
  }

  runner(builder: { _method?: string }): { connection?: unknown } {
    const runner = (
      BetterSqliteClient.prototype as unknown as { runner(b: unknown): { connection?: unknown } }
    ).runner.call(this, builder);
    if (this.reader && !(this as { transacting?: boolean }).transacting && READ_METHODS.has(builder._method ?? ''))
      runner.connection = this.reader.handle();
    return runner;
  }
}

/** The read connection of an SQLite database's Knex instance; none for PostgreSQL or a transaction. */
export function readConnectionOf(db: Knex | Knex.Transaction): ReadConnection | undefined {
  // A transaction's client is Knex's copy of the client, which carries no reader.
  const client = db.client as { reader?: ReadConnection; transacting?: boolean };
  return client.transacting ? undefined : client.reader;
}

/**
 * Open a database that must already exist, for every command but serve and migrate: they alone
 * may create one. Refuses (naming the setting that points there) a missing or empty one, so that
 * a command run with the wrong settings does not quietly make a second, empty farm.
 */
export async function openExistingDatabase(options: {
  databaseUrl: string | null;
  dataDir: string;
  sqliteSynchronous?: 'FULL' | 'NORMAL';
}): Promise<Database> {
  const file = join(options.dataDir, 'tilth.sqlite');
  const where = options.databaseUrl ? 'the database DATABASE_URL names' : `${file} (TILTH_DATA_DIR=${options.dataDir})`;
  const fix =
    'Start the server once (npm start) or run `npx tilth migrate` to create it, or point the setting at the database the server uses.';
  if (!options.databaseUrl && (!existsSync(file) || statSync(file).size === 0))
    throw new ConfigError(`There is no Tilth database at ${where}. ${fix}`);
  const db = openDatabase(options);
  try {
    if (!(await db.knex.schema.hasTable('knex_migrations')))
      throw new ConfigError(`${where} holds no Tilth data. ${fix}`);
  } catch (error) {
    await db.close();
    throw error;
  }
  return db;
}

/**
 * Knex prepares every query afresh; on SQLite that is a large share of a request's time. The
 * same SQL text (with new bindings) reuses its statement: better-sqlite3 statements are reusable,
 * and the single connection runs one statement at a time.
 *
 * What is kept is bounded by its SQL text as well as by count, least recently used first out
 * (issue 41 Part F). Statements whose text grows with the number of ids they name (Knex's
 * `whereIn`, a multi-row INSERT: an asset's placements rebuilt over its logs) make a new text for
 * each count, each compiled program as large as its text or more; under a stream of writes to
 * the same animals (their histories growing by a log each time) a thousand of them, kept per
 * connection, were most of what grew in the server's memory.
 */
const ONE_OFF = /^(?:SAVEPOINT|RELEASE SAVEPOINT|ROLLBACK TO SAVEPOINT) trx\d/;
/** Most statements kept per connection. */
const KEPT_STATEMENTS = 1000;
/** Most SQL text (characters) of the statements kept per connection. */
export const KEPT_SQL_CHARS = 1024 * 1024;

/** The statements one connection keeps: how many and their SQL text's length (the metrics). */
interface StatementCache {
  statements: number;
  sqlChars: number;
}

/** Per Knex instance (its client's config), the cache of its writer's connection and of its reader's (the current one of each). */
const statementCaches = new WeakMap<object, Map<'writer' | 'reader' | 'snapshot', StatementCache>>();

/** The statements kept by this database's SQLite connections (writer and reader): how many, and their SQL text's length; none on PostgreSQL. */
export function keptStatements(db: Knex): StatementCache | undefined {
  const caches = statementCaches.get(db.client.config as object);
  if (!caches) return undefined;
  return [...caches.values()].reduce(
    (sum, c) => ({ statements: sum.statements + c.statements, sqlChars: sum.sqlChars + c.sqlChars }),
    { statements: 0, sqlChars: 0 },
  );
}

function cachePreparedStatements(
  conn: { prepare(sql: string): unknown },
  knex: Knex,
  role: 'writer' | 'reader' | 'snapshot',
): void {
  const prepare = conn.prepare.bind(conn);
  const cache = new Map<string, unknown>();
  const stats: StatementCache = { statements: 0, sqlChars: 0 };
  const key = knex.client.config as object;
  if (!statementCaches.has(key)) statementCaches.set(key, new Map());
  // A connection opened again replaces the one before it in the figures.
  statementCaches.get(key)!.set(role, stats);
  conn.prepare = (sql: string) => {
    let statement = cache.get(sql);
    if (statement !== undefined) {
      // Most recently used last: the first in the map is the first out.
      cache.delete(sql);
      cache.set(sql, statement);
      return statement;
    }
    statement = prepare(sql);
    // Knex names each savepoint afresh (`SAVEPOINT trx123`): never run twice, so not kept,
    // where they would push out the statements that are.
    if (ONE_OFF.test(sql) || sql.length > KEPT_SQL_CHARS) return statement;
    while (cache.size >= KEPT_STATEMENTS || stats.sqlChars + sql.length > KEPT_SQL_CHARS) {
      const oldest = cache.keys().next().value!;
      cache.delete(oldest);
      stats.sqlChars -= oldest.length;
    }
    cache.set(sql, statement);
    stats.sqlChars += sql.length;
    stats.statements = cache.size;
    return statement;
  };
}
