/**
 * Starts a real Tilth server for a test: an ephemeral loopback port and a fresh database, SQLite
 * in a temporary directory, or, when DATABASE_URL is set, a new PostgreSQL database created for
 * this server and dropped afterwards. Nothing of our own is mocked.
 *
 * Running the migrations took about a second of each server's start on PostgreSQL (a third of one
 * on SQLite), hundreds of times a run. So `npm test` (scripts/run-tests.js) names a template for
 * the run: a database in TILTH_TEST_PG_TEMPLATE, a directory in TILTH_TEST_SQLITE_TEMPLATE. The
 * first server that needs it migrates it, once, with the migrations of this checkout, and every
 * server with the default generated/ and no site folder then starts on a copy of it (CREATE
 * DATABASE … TEMPLATE, a tenth of a second; a copy of the SQLite file); the server still runs its
 * own `migrate` at start, which finds nothing pending. The runner removes the templates at the end.
 */
import { copyFileSync, existsSync, mkdtempSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import knexFactory, { type Knex } from 'knex';
import type { Logger } from 'pino';
import BetterSqlite3 from 'better-sqlite3';
import { loadConfig, type Config } from '../../runtime/config.ts';
import { startServer, type RunningServer } from '../../runtime/server.ts';
import { createLogger } from '../../runtime/http/logging.ts';
import { DEFAULT_GENERATED_DIR, loadGenerated } from '../../runtime/generated.ts';
import { migrateLatest } from '../../runtime/storage/migrations.ts';
import { openDatabase } from '../../runtime/storage/database.ts';
import { passwordToken } from './http.ts';
import { ROOT } from './project.ts';

export const ADMIN = { name: 'admin', password: 'admin-password-for-tests' };

export interface TestServer extends RunningServer {
  config: Config;
  dialect: 'sqlite' | 'postgres';
}

/**
 * A connection of its own to a test server's SQLite file, as a `tilth` command run beside the
 * server, or a second server, would open one (it waits up to 5 s for the server's write lock).
 */
export function connectionBeside(server: TestServer): BetterSqlite3.Database {
  const other = new BetterSqlite3(join(server.config.dataDir, 'tilth.sqlite'));
  other.pragma('busy_timeout = 5000');
  return other;
}

async function migrateDefault(knex: Knex): Promise<void> {
  await migrateLatest(knex, (await loadGenerated(DEFAULT_GENERATED_DIR, null)).migrations);
}

/** The run's migrated SQLite file (see the top of this file), made by the first caller; null when the run names no directory. */
let sqliteTemplate: Promise<string | null> | null = null;
function migratedSqliteTemplate(): Promise<string | null> {
  const dir = process.env.TILTH_TEST_SQLITE_TEMPLATE;
  if (!dir) return Promise.resolve(null);
  return (sqliteTemplate ??= (async () => {
    const file = join(dir, 'tilth.sqlite');
    if (existsSync(file)) return file;
    // Both test processes may build it at once: each in a directory of its own, then renamed into
    // place whole (a rename replaces atomically), closed first so that its log is in the file.
    const own = mkdtempSync(join(dir, 'building-'));
    const db = openDatabase({ databaseUrl: null, dataDir: own });
    try {
      await migrateDefault(db.knex);
    } finally {
      await db.close();
    }
    renameSync(join(own, 'tilth.sqlite'), file);
    rmSync(own, { recursive: true, force: true });
    return file;
  })());
}

/** The run's migrated template database (see the top of this file), made by the first caller; null when the run names none. */
let template: Promise<string | null> | null = null;
function migratedTemplate(url: string): Promise<string | null> {
  const name = process.env.TILTH_TEST_PG_TEMPLATE;
  if (!name) return Promise.resolve(null);
  if (!/^[a-z0-9_]+$/.test(name))
    throw new Error(`TILTH_TEST_PG_TEMPLATE must be a plain database name, not ${JSON.stringify(name)}`);
  return (template ??= (async () => {
    const admin = knexFactory({ client: 'pg', connection: url, pool: { min: 1, max: 1 } });
    try {
      // One connection: the advisory lock is its session's. The two test processes may both ask
      // first: one builds, the other waits and finds it made.
      await admin.raw('SELECT pg_advisory_lock(hashtext(?))', [name]);
      const made = await admin.raw('SELECT 1 FROM pg_database WHERE datname = ?', [name]);
      if (!made.rows.length) {
        // Built under another name and renamed when whole: a process killed while migrating
        // leaves no half-migrated template behind its name.
        const building = `${name}_building`;
        await admin.raw(`DROP DATABASE IF EXISTS ${building} WITH (FORCE)`);
        await admin.raw(`CREATE DATABASE ${building}`);
        const dbUrl = new URL(url);
        dbUrl.pathname = `/${building}`;
        const knex = knexFactory({ client: 'pg', connection: dbUrl.toString(), pool: { min: 0, max: 1 } });
        try {
          await migrateDefault(knex);
        } finally {
          await knex.destroy();
        }
        await admin.raw(`ALTER DATABASE ${building} RENAME TO ${name}`);
      }
      await admin.raw('SELECT pg_advisory_unlock(hashtext(?))', [name]);
      return name;
    } finally {
      await admin.destroy();
    }
  })());
}

/**
 * A database for one test server: a temp dir for SQLite, a fresh PostgreSQL database otherwise.
 * `migrated`: a copy of the run's migrated template when there is one (what `migrate` with the
 * default generated/ and no site folder makes), else empty as always.
 */
export async function createTestDatabase(
  options: { migrated?: boolean } = {},
): Promise<{ env: Record<string, string>; drop(): Promise<void> }> {
  const dataDir = mkdtempSync(join(tmpdir(), 'tilth-test-'));
  const url = process.env.DATABASE_URL;
  if (!url) {
    const from = options.migrated ? await migratedSqliteTemplate() : null;
    if (from) copyFileSync(from, join(dataDir, 'tilth.sqlite'));
    return { env: { TILTH_DATA_DIR: dataDir }, drop: async () => rmSync(dataDir, { recursive: true, force: true }) };
  }
  const from = options.migrated ? await migratedTemplate(url) : null;
  const name = `tilth_test_${randomBytes(6).toString('hex')}`;
  const admin = knexFactory({ client: 'pg', connection: url, pool: { min: 0, max: 1 } });
  await admin.raw(from ? `CREATE DATABASE ${name} TEMPLATE ${from}` : `CREATE DATABASE ${name}`);
  await admin.destroy();
  const dbUrl = new URL(url);
  dbUrl.pathname = `/${name}`;
  return {
    env: { TILTH_DATA_DIR: dataDir, DATABASE_URL: dbUrl.toString() },
    drop: async () => {
      const again = knexFactory({ client: 'pg', connection: url, pool: { min: 0, max: 1 } });
      try {
        await again.raw(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await again.destroy();
      }
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

function dropLater(database: { drop(): Promise<void> }): void {
  database.drop().catch((error: unknown) => {
    console.error("Could not drop a test server's database:", error);
    process.exitCode = 1;
  });
}

export interface TestServerOptions {
  env?: Record<string, string>;
  generatedDir?: string;
  /** Reuse a database (e.g. to restart a server); the caller drops it. */
  database?: { env: Record<string, string>; drop(): Promise<void> };
  migrate?: boolean;
  /** Where the server's log lines go (default: a logger at TILTH_LOG_LEVEL, silent in tests). */
  logger?: Logger;
}

/** Start a server on 127.0.0.1 with an ephemeral port. Always `await server.close()` (use t.after). */
export async function startTestServer(options: TestServerOptions = {}): Promise<TestServer> {
  // The template holds what the default generated/ migrates to: not another generated/, nor a site's series.
  const defaultMigrations =
    (options.migrate ?? true) &&
    !options.generatedDir &&
    !options.env?.TILTH_SITE_DIR &&
    !process.env.TILTH_SITE_DIR &&
    !existsSync(join(ROOT, 'site'));
  const database = options.database ?? (await createTestDatabase({ migrated: defaultMigrations }));
  const env: Record<string, string> = {
    PORT: '0',
    HOST: '127.0.0.1',
    TILTH_ADMIN_USER: ADMIN.name,
    TILTH_ADMIN_PASSWORD: ADMIN.password,
    TILTH_FARM_NAME: 'Test Farm',
    // The suite's hashing cost (scripts/run-tests.js), which a server hands to every hash it makes.
    ...(process.env.TILTH_PASSWORD_HASH ? { TILTH_PASSWORD_HASH: process.env.TILTH_PASSWORD_HASH } : {}),
    ...database.env,
    ...options.env,
  };
  // The base URL must name the real port, which is known only after listening: listen first on a
  // free port found by the OS, then use it.
  const probe = await import('node:net').then(
    (net) =>
      new Promise<number>((resolve, reject) => {
        const s = net.createServer();
        s.listen(0, '127.0.0.1', () => {
          const port = (s.address() as { port: number }).port;
          s.close(() => resolve(port));
        });
        s.on('error', reject);
      }),
  );
  env.PORT = String(probe);
  env.TILTH_BASE_URL = env.TILTH_BASE_URL ?? `http://127.0.0.1:${probe}`;
  let running: RunningServer;
  let config: Config;
  try {
    config = loadConfig(env);
    running = await startServer({
      config,
      migrate: options.migrate ?? true,
      generatedDir: options.generatedDir,
      logger: options.logger ?? createLogger(process.env.TILTH_LOG_LEVEL ?? 'silent'),
    });
  } catch (error) {
    if (!options.database) await database.drop();
    throw error;
  }
  return {
    ...running,
    url: config.baseUrl,
    config,
    dialect: running.ctx.db.dialect,
    close: async () => {
      await running.close();
      // Nothing uses the database once the server is closed: it is dropped while the test goes on
      // (the open connection keeps the test's process until then), and a failure fails the file.
      if (!options.database) dropLater(database);
    },
  };
}

/** A test server and an administrator's token for it, as most API tests start (close the server after). */
export async function startTestServerAsAdmin(
  options: TestServerOptions = {},
): Promise<{ server: TestServer; token: string }> {
  const server = await startTestServer(options);
  try {
    return { server, token: await passwordToken(server.url, ADMIN.name, ADMIN.password) };
  } catch (error) {
    await server.close();
    throw error;
  }
}
