/**
 * Several server processes over one database (issue 26). On PostgreSQL the work a server does
 * before it serves (migrations, the first administrator, the default clients, pending rebuilds,
 * the upload sweep) runs under one advisory lock, so processes started together do it once, one
 * after the other: the later ones wait, then find it done. On SQLite one process serves a file:
 * a second one is refused, naming the first, since what the processes would have to share (rate
 * limits, the caches that watch for commits) lives in each process's memory.
 */
import BetterSqlite3 from 'better-sqlite3';
import { join } from 'node:path';
import type { Database } from './database.ts';

/** The advisory lock key of start-up work (any constant other locks do not use; names.ts's is another). */
const START_LOCK = 7_404_211_909;

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
