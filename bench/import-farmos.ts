/**
 * `node --import tsx bench/import-farmos.ts [--scale=S|M] [--pg] [--cpu-prof]`: issue 24's figures.
 * A bench farm (bench/dataset.ts) served by one Tilth on SQLite is imported with `tilth import
 * farmos --no-verify` into a fresh farm (SQLite, or PostgreSQL with --pg), then imported again
 * unchanged: the import rate (records a second) and the second run's share of the first. The
 * machine's load average is printed with the figures: they mean little on a busy machine.
 * --cpu-prof writes the importer's CPU profile of the first run under bench/results/.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { prepareFarm, type Scale } from './dataset.ts';
import { ADMIN, ROOT, startTilth } from './processes.ts';

const args = new Map(
  process.argv.slice(2).map((a) => {
    const [k, v] = a.replace(/^--/, '').split('=');
    return [k!, v ?? '1'];
  }),
);
const SCALE = (args.get('scale') ?? 'S') as Scale;
const PG = args.has('pg') ? 'postgres://postgres@127.0.0.1:5432' : null;
const say = (s: string) => process.stdout.write(`${s}\n`);

function importer(
  url: string,
  token: string,
  env: Record<string, string>,
  nodeArgs: string[] = [],
): Promise<{ ms: number; done: Record<string, unknown>; status: number | null; stderr: string }> {
  const started = Date.now();
  const child = spawn(
    process.execPath,
    [...nodeArgs, 'bin/tilth.js', 'import', 'farmos', '--url', url, `--token=${token}`, '--json', '--no-verify'],
    { cwd: ROOT, env: { ...process.env, TILTH_LOG_LEVEL: 'silent', ...env }, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let out = '';
  let err = '';
  child.stdout.on('data', (c) => (out += c));
  child.stderr.on('data', (c) => (err += c));
  return new Promise((resolve) =>
    child.on('close', (status) => {
      const done =
        out
          .split('\n')
          .filter((l) => l.startsWith('{'))
          .map((l) => JSON.parse(l))
          .find((e) => e.event === 'done') ?? {};
      resolve({ ms: Date.now() - started, done, status, stderr: err });
    }),
  );
}

const dir = mkdtempSync(join(tmpdir(), 'tilth-bench-import-'));
const sourceDir = join(dir, 'source');
const targetDir = join(dir, 'target');
mkdirSync(sourceDir);
mkdirSync(targetDir);
const pgName = `bench_import_${process.pid}`;
try {
  await prepareFarm(ROOT, sourceDir, SCALE, 1, async (d) => (await startTilth(d)).stop(), say);
  const lite = new Database(join(sourceDir, 'tilth.sqlite'), { readonly: true });
  const records = ['users', 'taxonomy_term', 'files', 'data_stream', 'asset', 'quantity', 'log'].reduce(
    (n, t) => n + Number((lite.prepare(`SELECT count(*) AS n FROM "${t}"`).get() as { n: number }).n),
    0,
  );
  lite.close();
  const source = await startTilth(sourceDir, {}, null);
  const res = await fetch(`${source.url}/oauth/token`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'password',
      username: ADMIN.name,
      password: ADMIN.password,
      client_id: 'farm',
    }),
  });
  const { access_token: token } = (await res.json()) as { access_token: string };
  const env: Record<string, string> = { TILTH_DATA_DIR: targetDir, DATABASE_URL: '' };
  if (PG) {
    const admin = new pg.Client({ connectionString: `${PG}/postgres` });
    await admin.connect();
    await admin.query(`CREATE DATABASE ${pgName}`);
    await admin.end();
    env.DATABASE_URL = `${PG}/${pgName}`;
  }
  // The target's schema first, as `serve --migrate` makes it.
  await (await startTilth(targetDir, { DATABASE_URL: env.DATABASE_URL! }, null)).stop();
  const profDir = join(ROOT, 'bench', 'results', `import-prof-${Date.now()}`);
  const load1 = loadavg()[0]!.toFixed(1);
  const first = await importer(
    source.url,
    token,
    env,
    args.has('cpu-prof') ? ['--cpu-prof', `--cpu-prof-dir=${profDir}`] : [],
  );
  if (first.status !== 0) throw new Error(`first run: ${first.status} ${first.stderr}`);
  const load2 = loadavg()[0]!.toFixed(1);
  const second = await importer(source.url, token, env);
  if (second.status !== 0) throw new Error(`second run: ${second.status} ${second.stderr}`);
  await source.stop();
  const rate = Math.round((records * 1000) / first.ms);
  say(
    `farm-${SCALE} (${records} records) into ${PG ? 'PostgreSQL' : 'SQLite'}: first run ${(first.ms / 1000).toFixed(1)} s (${rate} records/s; created ${first.done.created}, load average ${load1}), second run ${(second.ms / 1000).toFixed(1)} s (created ${second.done.created}, updated ${second.done.updated}; ${Math.round((second.ms / first.ms) * 1000) / 10}% of the first, load average ${load2}); ${process.env.TILTH_IMPORT_NOTE ?? ''}`,
  );
  if (args.has('cpu-prof')) say(`profile: ${profDir}`);
} finally {
  rmSync(dir, { recursive: true, force: true });
  if (PG) {
    const admin = new pg.Client({ connectionString: `${PG}/postgres` });
    await admin.connect();
    await admin.query(`DROP DATABASE IF EXISTS ${pgName} WITH (FORCE)`);
    await admin.end();
  }
}
