/**
 * Opens the database: PostgreSQL when DATABASE_URL is set, otherwise an SQLite file under
 * TILTH_DATA_DIR with WAL, foreign keys and a busy timeout. One Knex instance per process.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import knexFactory, { type Knex } from 'knex';
import pg from 'pg';

// Counts and bigints come back from PostgreSQL as strings by default; timestamps here are
// Unix seconds and ids are far below 2^53, so read them as numbers.
pg.types.setTypeParser(pg.types.builtins.INT8, (v: string) => Number(v));
pg.types.setTypeParser(pg.types.builtins.NUMERIC, (v: string) => v);

export type Dialect = 'sqlite' | 'postgres';

export interface Database {
  knex: Knex;
  dialect: Dialect;
  close(): Promise<void>;
}

export function openDatabase(options: { databaseUrl: string | null; dataDir: string }): Database {
  if (options.databaseUrl) {
    const knex = knexFactory({
      client: 'pg',
      connection: options.databaseUrl,
      pool: { min: 0, max: 10 },
    });
    return { knex, dialect: 'postgres', close: () => knex.destroy() };
  }
  mkdirSync(options.dataDir, { recursive: true });
  const knex = knexFactory({
    client: 'better-sqlite3',
    connection: { filename: join(options.dataDir, 'tilth.sqlite') },
    useNullAsDefault: true,
    // One connection: better-sqlite3 is synchronous, and SQLite serialises writers anyway.
    pool: {
      min: 1,
      max: 1,
      afterCreate: (conn: { pragma(s: string): unknown; prepare(sql: string): unknown }, done: (err: Error | null, conn: unknown) => void) => {
        cachePreparedStatements(conn);
        conn.pragma('journal_mode = WAL');
        conn.pragma('foreign_keys = ON');
        conn.pragma('busy_timeout = 5000');
        conn.pragma('synchronous = NORMAL');
        done(null, conn);
      },
    },
  });
  return { knex, dialect: 'sqlite', close: () => knex.destroy() };
}

/**
 * Knex prepares every query afresh; on SQLite that is a large share of a request's time. The
 * same SQL text (with new bindings) reuses its statement: better-sqlite3 statements are reusable,
 * and the single connection runs one statement at a time.
 */
function cachePreparedStatements(conn: { prepare(sql: string): unknown }): void {
  const prepare = conn.prepare.bind(conn);
  const cache = new Map<string, unknown>();
  conn.prepare = (sql: string) => {
    let statement = cache.get(sql);
    if (statement === undefined) {
      statement = prepare(sql);
      if (cache.size >= 1000) cache.delete(cache.keys().next().value!);
      cache.set(sql, statement);
    }
    return statement;
  };
}
