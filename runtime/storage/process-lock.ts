/**
 * Several server processes over one database (issue 26). On PostgreSQL the work a server does
 * before it serves (migrations, the first administrator, the default clients, pending rebuilds,
 * the upload sweep) runs under one advisory lock, so processes started together do it once, one
 * after the other: the later ones wait, then find it done. On SQLite one process serves a file:
 * a second one is refused, naming the first, since what the processes would have to share (rate
 * limits, the caches that watch for commits) lives in each process's memory.
 *
 * Processes over one PostgreSQL database must also agree on the settings that shape what they
 * store and answer (the base URL the `farm` client's redirect URIs and every link are made of, the
 * modules, the farm's name): each running process holds a shared advisory lock on a connection of
 * its own for as long as it runs, and a process that starts while others hold it compares its
 * settings with theirs, recorded in tilth_state, and refuses to start naming any that differ.
 * When none runs, the starting process's settings become the recorded ones: changing a setting
 * means restarting every process, not one at a time.
 */
import BetterSqlite3 from 'better-sqlite3';
import pg from 'pg';
import { join } from 'node:path';
import type { Database } from './database.ts';
import { ConfigError } from '../config.ts';

/** The advisory lock key of start-up work (any constant other locks do not use; names.ts's is another). */
const START_LOCK = 7_404_211_909;
/** Held shared by every running process (see above). */
const RUNNING_LOCK = 7_404_211_910;
const SETTINGS_STATE = 'shared_settings';

/** The settings processes over one database must share, by the environment variable that sets each. */
export type SharedSettings = Record<string, string>;

/**
 * Join the processes serving this PostgreSQL database, or refuse to if `settings` differ from
 * theirs (a ConfigError naming each). Call under the start lock (withStartLock), before migrating:
 * a process with the wrong settings must change nothing. When no other process runs, its settings
 * become the recorded ones with `record()`, after migrating (the table may not exist before).
 * `leave()` on close; the connection it holds ends with the process anyway.
 */
export async function joinRunningProcesses(
  databaseUrl: string,
  db: Database,
  settings: SharedSettings,
): Promise<{ record(): Promise<void>; leave(): Promise<void> }> {
  const client = new pg.Client({ connectionString: databaseUrl, application_name: 'tilth (running)' });
  await client.connect();
  let alone: boolean;
  try {
    alone = (await client.query('SELECT pg_try_advisory_lock($1) AS got', [RUNNING_LOCK])).rows[0].got as boolean;
    if (alone) {
      await client.query('SELECT pg_advisory_unlock($1)', [RUNNING_LOCK]);
    } else {
      // Others run, so the database is migrated at least as far as their code: tilth_state exists.
      const row = await db.knex('tilth_state').where('name', SETTINGS_STATE).first('value');
      const theirs = (row ? JSON.parse(row.value) : {}) as SharedSettings;
      const differing = Object.keys(settings).filter((name) => name in theirs && theirs[name] !== settings[name]);
      if (differing.length) {
        throw new ConfigError(
          `This process's settings differ from those of the Tilth processes already serving this database: ` +
            differing.map((name) => `${name} is "${settings[name]}" here but "${theirs[name]}" there`).join('; ') +
            '. Every process over one database must have the same; to change one, stop them all and start them again with the new value.',
        );
      }
    }
    await client.query('SELECT pg_advisory_lock_shared($1)', [RUNNING_LOCK]);
  } catch (error) {
    await client.end().catch(() => {});
    throw error;
  }
  client.on('error', () => {
    // The database went away: this connection's lock went with it; requests will report the outage.
  });
  return {
    record: async () => {
      if (alone)
        await db
          .knex('tilth_state')
          .insert({ name: SETTINGS_STATE, value: JSON.stringify(settings) })
          .onConflict('name')
          .merge();
    },
    leave: () => client.end(),
  };
}

interface PgConnection {
  query(sql: string, values?: unknown[]): Promise<{ rows: Array<Record<string, unknown>> }>;
}
interface PoolClient {
  acquireConnection(): Promise<PgConnection>;
  releaseConnection(connection: PgConnection): Promise<void>;
}

/**
 * Run `work` while holding the start lock (PostgreSQL); on SQLite, run it. The lock is a session
 * lock held on one connection of the pool; `work` uses the others. A process that dies holding it
 * loses it with its connection.
 */
export async function withStartLock<T>(db: Database, work: () => Promise<T>): Promise<T> {
  if (db.dialect !== 'postgres') return work();
  const client = db.knex.client as unknown as PoolClient;
  const connection = await client.acquireConnection();
  try {
    await connection.query('SELECT pg_advisory_lock($1)', [START_LOCK]);
    try {
      return await work();
    } finally {
      await connection.query('SELECT pg_advisory_unlock($1)', [START_LOCK]);
    }
  } finally {
    await client.releaseConnection(connection);
  }
}

/** Another process serves this SQLite database. */
export class SqliteInUseError extends Error {
  constructor(dataDir: string) {
    super(
      `Another Tilth process is already serving the SQLite database in ${dataDir}. Several processes over one SQLite file are not supported ` +
        '(each would keep its own rate limits and caches): stop the other one, or, to run several, use PostgreSQL (DATABASE_URL; README, "Scaling out").',
    );
    this.name = 'SqliteInUseError';
  }
}

/**
 * Claim the SQLite data directory for this server until `release` (or until the process ends, in
 * any way: the operating system drops the lock). The claim is an exclusive lock on a small file
 * of its own beside the database, so `tilth` commands run beside the server are not affected.
 */
export function claimSqliteDirectory(dataDir: string): { release(): void } {
  const lock = new BetterSqlite3(join(dataDir, 'tilth.serving'));
  try {
    lock.pragma('busy_timeout = 0');
    lock.pragma('locking_mode = EXCLUSIVE');
    // A write takes the exclusive lock, which EXCLUSIVE locking mode keeps until the connection closes.
    lock.exec('CREATE TABLE IF NOT EXISTS serving (pid INTEGER); DELETE FROM serving;');
    lock.prepare('INSERT INTO serving (pid) VALUES (?)').run(process.pid);
  } catch (error) {
    lock.close();
    if (/^SQLITE_BUSY/.test(String((error as { code?: unknown }).code))) throw new SqliteInUseError(dataDir);
    throw error;
  }
  return { release: () => lock.close() };
}
