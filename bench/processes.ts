/**
 * The processes of a run. Tilth starts exactly as production starts it (`node bin/tilth.js serve
 * --migrate`, configured by its environment); the baselines start the same way from their own
 * files. Each server is pinned to core 0 with taskset (where it exists) and the load generator to
 * core 1, so the figures measure the server, not the server and autocannon sharing one thread.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { freePort, stopProcess } from '../test/support/processes.ts';

export { freePort };

export const ROOT = join(import.meta.dirname, '..');
export const ADMIN = { name: 'admin', password: 'bench-password-0' };

const HAS_TASKSET = spawnSync('taskset', ['--version']).status === 0;
export const CORES = Number(spawnSync('nproc').stdout?.toString().trim() || '1');
/** Two cores or more: the servers on core 0 and the load on core 1. */
export const PINNED = HAS_TASKSET && CORES > 1;
export const SERVER_CORE = '0';
export const LOAD_CORE = '1';

/** Where the processes of a scale-out run go (`--processes=N`): a core for each server and one or more for the load, or nowhere in particular. */
export interface Placement {
  /** Server i's core, or null when unpinned. */
  servers: Array<string | null>;
  /** The load generators' cores (a taskset list, e.g. "2-3"), or null when unpinned. */
  load: string | null;
  /** Said in the output and the results. */
  description: string;
}

/**
 * N servers each on a core of its own and the load generators on the cores left, when the
 * machine has N + 1 cores or more; otherwise nothing is pinned (N servers and the load would
 * share cores however they were pinned) and the description says so plainly.
 */
export function placeProcesses(n: number): Placement {
  if (HAS_TASKSET && CORES >= n + 1) {
    const servers = Array.from({ length: n }, (_, i) => String(i));
    return {
      servers,
      load: CORES - 1 > n ? `${n}-${CORES - 1}` : String(n),
      description: `pinned: server processes on cores 0–${n - 1}, load generators on core(s) ${n}–${CORES - 1}`,
    };
  }
  const why = HAS_TASKSET
    ? `this machine has ${CORES} core(s): ${n} server process(es) and the load generator need ${n + 1}`
    : 'no taskset here';
  return {
    servers: Array.from({ length: n }, () => null),
    load: null,
    description: `NOT pinned (${why}); every process, servers and load, shares the cores as the OS schedules them`,
  };
}

/** `node args…` in `cwd`, pinned to `core` when pinning is available and `core` is not null. */
export function spawnNode(
  core: string | null,
  args: string[],
  env: Record<string, string | undefined>,
  cwd = ROOT,
): ChildProcess {
  const [cmd, argv] =
    PINNED && core !== null ? ['taskset', ['-c', core, process.execPath, ...args]] : [process.execPath, args];
  return spawn(cmd as string, argv as string[], {
    cwd,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

export interface Running {
  url: string;
  child: ChildProcess;
  stop(): Promise<void>;
}

/** Wait until `url/health` (or `url/` for a baseline) answers 200, as a load balancer would see it. */
async function waitReady(child: ChildProcess, probe: string, output: () => string): Promise<void> {
  let exit: number | null | undefined;
  child.once('exit', (code) => (exit = code));
  for (const deadline = Date.now() + 120_000; ;) {
    if (exit !== undefined)
      throw new Error(`${probe}: the process exited with ${exit} before it was ready:\n${output()}`);
    if (Date.now() > deadline) throw new Error(`${probe}: not ready within 120 s:\n${output()}`);
    if (
      await fetch(probe).then(
        (r) => r.ok,
        () => false,
      )
    )
      return;
    // Often enough that the start row (run.ts, startFigure) is not rounded up by a tenth of a second.
    await new Promise((r) => setTimeout(r, 20));
  }
}

function running(child: ChildProcess, url: string): Running {
  const exited = new Promise<void>((resolve) =>
    child.exitCode !== null ? resolve() : child.once('exit', () => resolve()),
  );
  return {
    url,
    child,
    stop: () => stopProcess(child, exited),
  };
}

function capture(child: ChildProcess): () => string {
  let out = '';
  const keep = (c: Buffer) => {
    if (out.length < 20_000) out += c.toString();
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  return () => out;
}

/**
 * Tilth on `dataDir` (or DATABASE_URL in `env`), started as production starts it, on `core` (null:
 * unpinned), from the tree at `root` (another build for an A/B: bench/feed-cost.ts).
 */
export async function startTilth(
  dataDir: string,
  env: Record<string, string> = {},
  core: string | null = SERVER_CORE,
  root = ROOT,
): Promise<Running> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  // BENCH_SERVER_NODE_ARGS: Node flags for Tilth's process only, e.g. "--cpu-prof --cpu-prof-dir=/tmp/cpu"
  // (Node refuses --cpu-prof in NODE_OPTIONS); the profile is written when the server stops.
  const nodeArgs = (process.env.BENCH_SERVER_NODE_ARGS ?? '').split(' ').filter(Boolean);
  const child = spawnNode(
    core,
    [...nodeArgs, 'bin/tilth.js', 'serve', '--migrate'],
    {
      PORT: String(port),
      HOST: '127.0.0.1',
      TILTH_BASE_URL: url,
      TILTH_DATA_DIR: dataDir,
      TILTH_ADMIN_USER: ADMIN.name,
      TILTH_ADMIN_PASSWORD: ADMIN.password,
      TILTH_LOG_LEVEL: 'silent',
      // The benchmark signs in thousands of times a second from one address; limits are tested elsewhere.
      TILTH_RATE_LIMIT_PER_ADDRESS: '1000000',
      TILTH_RATE_LIMIT_PER_USERNAME: '1000000',
      ...env,
    },
    root,
  );
  const output = capture(child);
  await waitReady(child, `${url}/health`, output);
  return running(child, url);
}

/** A baseline server (bench/baselines/<name>.ts) in its own pinned process; it prints nothing until it listens. */
export async function startBaseline(file: string, env: Record<string, string>): Promise<Running> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const child = spawnNode(SERVER_CORE, ['--import', 'tsx', join('bench', 'baselines', file)], {
    PORT: String(port),
    ...env,
  });
  const output = capture(child);
  await waitReady(child, `${url}/ready`, output);
  return running(child, url);
}
