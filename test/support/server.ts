/**
 * Starts a real Tilth server for a test: an ephemeral loopback port and a fresh database, SQLite
 * in a temporary directory, or, when DATABASE_URL is set, a new PostgreSQL database created for
 * this server and dropped afterwards. Nothing of our own is mocked.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import knexFactory from 'knex';
import type { Logger } from 'pino';
import BetterSqlite3 from 'better-sqlite3';
import { loadConfig, type Config } from '../../runtime/config.ts';
import { startServer, type RunningServer } from '../../runtime/server.ts';
import { createLogger } from '../../runtime/http/logging.ts';
import { passwordToken } from './http.ts';

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

/** A database for one test server: a temp dir for SQLite, a fresh PostgreSQL database otherwise. */
export async function createTestDatabase(): Promise<{ env: Record<string, string>; drop(): Promise<void> }> {
  const dataDir = mkdtempSync(join(tmpdir(), 'tilth-test-'));
  const url = process.env.DATABASE_URL;
  if (!url) {
    return { env: { TILTH_DATA_DIR: dataDir }, drop: async () => rmSync(dataDir, { recursive: true, force: true }) };
  }
  const name = `tilth_test_${randomBytes(6).toString('hex')}`;
  const admin = knexFactory({ client: 'pg', connection: url, pool: { min: 0, max: 1 } });
  await admin.raw(`CREATE DATABASE ${name}`);
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
  const database = options.database ?? (await createTestDatabase());
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
      if (!options.database) await database.drop();
    },
  };
}

/** A test server and an administrator's token for it, as most API tests start (close the server after). */
export async function startTestServerAsAdmin(options: TestServerOptions = {}): Promise<{ server: TestServer; token: string }> {
  const server = await startTestServer(options);
  try {
    return { server, token: await passwordToken(server.url, ADMIN.name, ADMIN.password) };
  } catch (error) {
    await server.close();
    throw error;
  }
}
