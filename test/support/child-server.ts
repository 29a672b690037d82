/**
 * A Tilth server in a process of its own, started exactly as `npx tilth serve --migrate` starts it,
 * for the tests that load it from outside or kill it (SIGKILL) and start it again on the same
 * database. The load generator then runs in the test's process, not the server's.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { ROOT } from './project.ts';
import { ADMIN, createTestDatabase } from './server.ts';
import { passwordToken } from './http.ts';
import { freePort, stopProcess } from './processes.ts';

export { freePort };

export interface ChildServer {
  url: string;
  process: ChildProcess;
  /** SIGKILL: no shutdown code runs, as in a power cut of the process. */
  kill(): Promise<void>;
  /** SIGTERM and wait for the process to end. */
  stop(): Promise<void>;
  /** What it wrote to stdout and stderr: all of it with `keepOutput`, else the first 20,000 characters. */
  output(): string;
}

/**
 * Start `tilth serve --migrate` on `databaseEnv` (from createTestDatabase) and wait until it
 * listens. `keepOutput` keeps all it writes (for the tests that search its log), not only its start;
 * `root` runs another copy of the project (a scratch project made with `withCode`).
 */
export async function startChildServer(
  databaseEnv: Record<string, string>,
  env: Record<string, string> = {},
  options: { keepOutput?: boolean; root?: string } = {},
): Promise<ChildServer> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const child = spawn(process.execPath, ['bin/tilth.js', 'serve', '--migrate'], {
    cwd: options.root ?? ROOT,
    env: {
      ...process.env,
      PORT: String(port),
      HOST: '127.0.0.1',
      TILTH_BASE_URL: url,
      TILTH_ADMIN_USER: ADMIN.name,
      TILTH_ADMIN_PASSWORD: ADMIN.password,
      TILTH_LOG_LEVEL: 'silent',
      // Load tests sign in and out often; the limits are tested elsewhere.
      TILTH_RATE_LIMIT_PER_ADDRESS: '1000000',
      ...databaseEnv,
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let output = '';
  // Kept for the error message if it fails to start; bounded, since a long run logs a lot.
  const keep = (chunk: Buffer) => {
    if (options.keepOutput || output.length < 20_000) output += chunk.toString();
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  let exitCode: number | null | undefined;
  child.once('exit', (code) => (exitCode = code));
  // Ready when its health check says so, as a load balancer would see it.
  for (const deadline = Date.now() + 60_000; ;) {
    if (exitCode !== undefined) throw new Error(`the server exited with ${exitCode} before it listened:\n${output}`);
    if (Date.now() > deadline) throw new Error(`the server did not start within 60 s:\n${output}`);
    const healthy = await fetch(`${url}/health`).then(
      (r) => r.ok,
      () => false,
    );
    if (healthy) break;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return {
    url,
    process: child,
    async kill() {
      child.kill('SIGKILL');
      await exited;
    },
    stop: () => stopProcess(child, exited),
    output: () => output,
  };
}

/** A child server on a fresh (migrated) database, and an administrator's token for it (stop the server and drop the database after). */
export async function startChildServerAsAdmin(): Promise<{
  database: Awaited<ReturnType<typeof createTestDatabase>>;
  server: ChildServer;
  token: string;
}> {
  const database = await createTestDatabase({ migrated: true });
  let server: ChildServer | undefined;
  try {
    server = await startChildServer(database.env);
    return { database, server, token: await passwordToken(server.url, ADMIN.name, ADMIN.password) };
  } catch (error) {
    await server?.stop();
    await database.drop();
    throw error;
  }
}
