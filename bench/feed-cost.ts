/**
 * What the change feed costs a write (issue 25: P4 and P5 may cost at most 10% more with the feed
 * than without it). An A/B of two builds of this tree, both up at once on copies of one farm:
 *
 * - A: this tree as it is.
 * - B: a copy of it (bin, runtime, generated, definitions; node_modules linked) in which
 *   storage/change-feed.ts writes nothing and knows no version: `recordChanges` and
 *   `recordChangedIds` return at once and `versionOf` answers null, so B does none of the feed's
 *   statements (the upserts, a cascade's UUID lookup, the ETag's version read). That is the
 *   write as it was before issue 25.
 *
 * Each round measures POST (P4's bodies) and PATCH (P5's) closed loop on both servers, the order
 * swapped every round (A B, B A, …), each after a warm-up of the same requests. Reported per
 * round: req/s, and the server's CPU time per request (from /proc, which moves less with the
 * machine's other work than req/s does); then the medians and B/A. Server on core 0, load on
 * core 1, as in run.ts.
 *
 *   node --import tsx bench/feed-cost.ts [--scale=S] [--rounds=5] [--seconds=5] [--warmup=3] [--pg[=postgres://…]]
 */
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { prepareFarm, type Scale } from './dataset.ts';
import { ADMIN, PINNED, ROOT, startTilth, type Running } from './processes.ts';
import { admin, copyFarm, databaseUrl } from './postgres.ts';
import { CLOSED_CONNECTIONS, load, writeJson } from './workloads.ts';
import type { LoadResult, LoadSpec } from './load.ts';

const args = new Map(
  process.argv.slice(2).map((a) => {
    const [k, v] = a.replace(/^--/, '').split('=');
    return [k!, v ?? '1'];
  }),
);
const SCALE = (args.get('scale') ?? 'S') as Scale;
const ROUNDS = Number(args.get('rounds') ?? 5);
const SECONDS = Number(args.get('seconds') ?? 5);
const WARMUP = Number(args.get('warmup') ?? 3);
// --connections=1: one request at a time, so a request's latency is its own path (CPU and round
// trips), not a queue behind others; on a machine shared with other work its p50 moves less.
const CONNECTIONS = Number(args.get('connections') ?? CLOSED_CONNECTIONS);
const PG = args.has('pg') ? (args.get('pg') === '1' ? 'postgres://postgres@127.0.0.1:5432' : args.get('pg')!) : null;
const JSONAPI = 'application/vnd.api+json';
const say = (s: string) => process.stdout.write(`${s}\n`);
let stopping = false;
const load1 = () => loadavg()[0]!.toFixed(2);

/** Build B: this tree without the feed's statements. Throws if the source no longer has what is replaced. */
function buildWithoutFeed(): string {
  const dir = mkdtempSync(join(tmpdir(), 'tilth-nofeed-'));
  for (const part of ['bin', 'runtime', 'generated', 'definitions', 'package.json', 'tsconfig.json'])
    cpSync(join(ROOT, part), join(dir, part), { recursive: true });
  symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'));
  const file = join(dir, 'runtime', 'storage', 'change-feed.ts');
  let source = readFileSync(file, 'utf8');
  for (const [signature, body] of [
    [
      'export async function recordChanges(db: Db, entityType: string, records: readonly ChangedRecord[], deleted: boolean, now = Math.floor(Date.now() / 1000)): Promise<void> {',
      'return;',
    ],
    [
      'export async function recordChangedIds(db: Db, entityType: string, table: string, ids: readonly number[]): Promise<void> {',
      'return;',
    ],
    [
      'export async function versionOf(db: Db, entityType: string, id: number, lock = false): Promise<number | null> {',
      'return null;',
    ],
  ] as const) {
    if (!source.includes(signature))
      throw new Error(`bench/feed-cost.ts: change-feed.ts no longer has "${signature}": update the A/B`);
    source = source.replace(signature, `${signature}\n  ${body}`);
  }
  writeFileSync(file, source);
  return dir;
}

/** CPU seconds the process has used (user + system), from /proc. */
function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

interface Figure {
  rps: number;
  cpuMs: number;
  p50: number;
  p99: number;
  bad: number;
}

/** One measured run: a warm-up (not counted), then `SECONDS` of the same requests, with the server's CPU per request. */
async function measure(server: Running, spec: Omit<LoadSpec, 'seconds' | 'connections'>): Promise<Figure> {
  if (WARMUP > 0) await load({ ...spec, seconds: WARMUP, connections: CONNECTIONS });
  const before = cpuSeconds(server.child.pid!);
  const r: LoadResult = await load({ ...spec, seconds: SECONDS, connections: CONNECTIONS });
  const cpu = cpuSeconds(server.child.pid!) - before;
  return {
    rps: r.rps,
    cpuMs: (cpu * 1000) / Math.max(1, r.requests),
    p50: r.p50,
    p99: r.p99,
    bad: r.errors + r.non2xx,
  };
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

async function token(url: string): Promise<string> {
  const res = await fetch(`${url}/oauth/token`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'password',
      username: ADMIN.name,
      password: ADMIN.password,
      client_id: 'farm',
    }),
  });
  if (!res.ok) throw new Error(`password grant: ${res.status}`);
  return ((await res.json()) as { access_token: string }).access_token;
}

/** P4's and P5's requests, from the farm (as bench/run.ts makes them). */
function requests(file: string, work: string) {
  const db = new Database(file, { readonly: true });
  const animals = db.prepare(`SELECT uuid FROM asset WHERE bundle = 'animal' LIMIT 200`).pluck().all() as string[];
  const field = db.prepare(`SELECT uuid FROM asset WHERE bundle = 'land' LIMIT 1`).pluck().get() as string;
  const quantities = db.prepare(`SELECT uuid FROM quantity LIMIT 500`).pluck().all() as string[];
  const logs = db.prepare(`SELECT uuid FROM log WHERE bundle = 'activity' LIMIT 1000`).pluck().all() as string[];
  db.close();
  const posts = quantities.map((q, i) =>
    JSON.stringify({
      data: {
        type: 'log--activity',
        attributes: { name: `Feed A/B ${i}`, status: 'done', timestamp: '2025-06-01T08:00:00+00:00' },
        relationships: {
          asset: {
            data: [
              { type: 'asset--animal', id: animals[(2 * i) % animals.length] },
              { type: 'asset--animal', id: animals[(2 * i + 1) % animals.length] },
            ],
          },
          location: { data: [{ type: 'asset--land', id: field }] },
          quantity: { data: [{ type: 'quantity--standard', id: q }] },
        },
      },
    }),
  );
  return {
    posts: writeJson(work, 'posts.json', posts),
    patches: writeJson(
      work,
      'patches.json',
      logs.map((u) => `/api/log/activity/${u}`),
    ),
    assets: animals.map((id) => ({ type: 'asset--animal', id })),
  };
}

async function main(): Promise<void> {
  say(
    `feed-cost: farm-${SCALE} on ${PG ? 'PostgreSQL' : 'SQLite'}, ${ROUNDS} rounds, ${CONNECTIONS} connection(s), ${SECONDS} s per figure after ${WARMUP} s of warm-up, ${PINNED ? 'server on core 0, load on core 1' : 'NOT pinned'}; load average ${loadavg()
      .map((x) => x.toFixed(2))
      .join(', ')}`,
  );
  const withoutFeed = buildWithoutFeed();
  const dirs: string[] = [];
  const databases: string[] = [];
  const servers: Running[] = [];
  try {
    const farms: Array<{ dir: string; env: Record<string, string> }> = [];
    for (const name of ['a', 'b']) {
      const dir = mkdtempSync(join(tmpdir(), `tilth-feedcost-${name}-`));
      dirs.push(dir);
      await prepareFarm(ROOT, dir, SCALE, 1, async (d) => (await startTilth(d)).stop(), say);
      let env: Record<string, string> = {};
      if (PG) {
        const db = `tilth_feedcost_${name}_${process.pid}`;
        await admin(PG, `CREATE DATABASE ${db}`);
        databases.push(db);
        env = { DATABASE_URL: databaseUrl(PG, db) };
        await (await startTilth(dir, env)).stop();
        await copyFarm(join(dir, 'tilth.sqlite'), env.DATABASE_URL!);
      }
      farms.push({ dir, env });
    }
    const work = join(dirs[0]!, 'feedcost');
    mkdirSync(work);
    const req = requests(join(dirs[0]!, 'tilth.sqlite'), work);
    const a = await startTilth(farms[0]!.dir, farms[0]!.env);
    servers.push(a);
    const b = await startTilth(farms[1]!.dir, farms[1]!.env, undefined, withoutFeed);
    servers.push(b);
    const builds = [
      { name: 'A (feed)', server: a, auth: await token(a.url) },
      { name: 'B (no feed)', server: b, auth: await token(b.url) },
    ];
    const results: Record<string, Record<string, Figure[]>> = { POST: { A: [], B: [] }, PATCH: { A: [], B: [] } };
    for (let round = 0; round < ROUNDS; round++) {
      const order = round % 2 ? [builds[1]!, builds[0]!] : [builds[0]!, builds[1]!];
      for (const kind of ['POST', 'PATCH'] as const) {
        for (const build of order) {
          const headers = { Authorization: `Bearer ${build.auth}`, Accept: JSONAPI, 'Content-Type': JSONAPI };
          const spec: Omit<LoadSpec, 'seconds' | 'connections'> =
            kind === 'POST'
              ? {
                  url: `${build.server.url}/api/log/activity`,
                  method: 'POST',
                  headers,
                  mode: 'postLog',
                  list: req.posts,
                }
              : { url: build.server.url, headers, mode: 'patchLog', list: req.patches, assets: req.assets };
          if (stopping) throw new Error('feed-cost: stopped');
          const f = await measure(build.server, spec);
          results[kind]![build.name[0]!]!.push(f);
          say(
            `round ${round + 1} ${kind} ${build.name}: ${Math.round(f.rps)} req/s, ${f.cpuMs.toFixed(2)} ms CPU a request, p50 ${f.p50} ms, p99 ${f.p99} ms${f.bad ? `, ${f.bad} errors or non-2xx` : ''}; load average ${load1()}`,
          );
        }
      }
    }
    for (const kind of ['POST', 'PATCH'] as const) {
      const [A, B] = [results[kind]!.A!, results[kind]!.B!];
      const ra = median(A.map((f) => f.rps));
      const rb = median(B.map((f) => f.rps));
      const ca = median(A.map((f) => f.cpuMs));
      const cb = median(B.map((f) => f.cpuMs));
      const pairs = A.map((f, i) => B[i]!.rps / f.rps);
      const cpuPairs = A.map((f, i) => f.cpuMs / B[i]!.cpuMs);
      const p50Pairs = A.map((f, i) => f.p50 / Math.max(0.01, B[i]!.p50));
      say(
        `${kind}: p50 medians A ${median(A.map((f) => f.p50))} ms, B ${median(B.map((f) => f.p50))} ms; median of rounds A/B ${median(p50Pairs).toFixed(3)}`,
      );
      say(
        `${kind}: medians A ${Math.round(ra)} req/s and ${ca.toFixed(2)} ms CPU, B ${Math.round(rb)} req/s and ${cb.toFixed(2)} ms CPU; ` +
          `the feed costs ${((rb / ra - 1) * 100).toFixed(1)}% in req/s (median of rounds B/A ${median(pairs).toFixed(3)}), ${((ca / cb - 1) * 100).toFixed(1)}% in CPU a request (median of rounds A/B ${median(cpuPairs).toFixed(3)})`,
      );
    }
    say(
      `load average at the end ${loadavg()
        .map((x) => x.toFixed(2))
        .join(', ')}`,
    );
  } finally {
    for (const s of servers) await s.stop();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
    rmSync(withoutFeed, { recursive: true, force: true });
    if (PG) for (const db of databases) await admin(PG, `DROP DATABASE IF EXISTS ${db}`);
  }
}

// Ctrl-C or a kill ends the run after the figure being measured, and main's finally stops the
// servers and removes their copies.
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => (stopping = true));
await main();
