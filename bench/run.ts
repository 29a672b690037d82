/**
 * `npm run bench` — issue 10's benchmark. `npm run bench -- --quick` for a short run (farm-S,
 * 2 s per figure, G as farm-S against farm-M; under three minutes once the farms are cached).
 *
 * Tilth runs as production runs it (`node bin/tilth.js serve --migrate`) in its own process on
 * core 0; the baselines (bench/baselines/) run on the same core in theirs; autocannon runs in a
 * third process on core 1 (bench/load.ts). Every read figure is a ratio to a baseline measured in
 * the same run. Results: a table on stdout and bench/results/<time>.{json,md} (git-ignored); the
 * last line is `bench: N of M targets met`.
 *
 * Options: --quick, --scale=S|M|L (the main farm; full default L), --big=M|L (G's large farm;
 * full default L), --seconds=N, --seed=N, --pg[=postgres://user@host:port] (P1, P3, P4 on
 * PostgreSQL too, on a database made and dropped for the run), --pg-scale=S|M (default S quick, M full),
 * --only=P0,P3 (only those workloads, after the checks; an A/B of one change in a minute or two),
 * --processes=N (with --pg: P1, P3 and P4 also through N Tilth processes over the one PostgreSQL
 * database against one of them, issue 26; the load spread by one load generator per process),
 * --soak[=seconds] (the memory soak of issue 28: mixed reads and writes for 600 s or the seconds
 * given, Tilth's resident memory in the first and last minute; --soak-sample=N seconds between
 * samples, default 5). Rows MEM (memory) and STA (start) are measured in every run; --only=MEM,START
 * for them alone. --synchronous=NORMAL runs the main server with TILTH_SQLITE_SYNCHRONOUS=NORMAL and
 * the write baseline with `synchronous=NORMAL` (default FULL, Tilth's default): the price of
 * durability is P4 and P5 of the two runs side by side (issue 41 Part F). Rows U1–U5 are the web
 * interface's (issue 38, bench/web.ts): its pages against the API's answers, and in Chromium
 * (Debian's /usr/bin/chromium, or CHROMIUM) what a first visit transfers and how soon a page shows.
 * Rows C1 (bench/chart.ts) and M1–M3 (bench/map.ts) bring their own server and farm and run last;
 * `--only` naming none but them skips the main farm.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { prepareFarm, prng, type Scale } from './dataset.ts';
import { ADMIN, PINNED, ROOT, placeProcesses, startBaseline, startTilth, type Running } from './processes.ts';
import { admin, copyFarm, databaseUrl } from './postgres.ts';
import { headerDifferences, recordHeaders, type HeaderList } from './baselines/headers.ts';
import {
  CLOSED_CONNECTIONS,
  RATE_CONNECTIONS,
  clean,
  firstDifference,
  fmt,
  load,
  p1Path,
  ratio,
  sumLoads,
  writeJson,
  type Row,
} from './workloads.ts';
import type { LoadResult, LoadSpec } from './load.ts';
import { checkWrites } from './write-check.ts';
// helper `views`: row C1.
import { chartRow } from './chart.ts';
// helper `mapbench`: rows M1–M3.
import { mapRows } from './map.ts';
import {
  SESSION_COOKIE,
  animalLabels,
  apiListPath,
  browserJob,
  checkWebEdit,
  editForms,
  listedRelationships,
  logsOnListPage,
  medianTiming,
  transferred,
  webListPath,
  webSignIn,
} from './web.ts';

const args = new Map(
  process.argv.slice(2).map((a) => {
    const [k, v] = a.replace(/^--/, '').split('=');
    return [k!, v ?? '1'];
  }),
);
const QUICK = args.has('quick');
const SEED = Number(args.get('seed') ?? 1);
const SECONDS = Number(args.get('seconds') ?? (QUICK ? 2 : 10));
const MAIN = (args.get('scale') ?? (QUICK ? 'S' : 'L')) as Scale;
const SMALL: Scale = 'S';
const BIG = (args.get('big') ?? (QUICK ? 'M' : 'L')) as Scale;
const JSONAPI = 'application/vnd.api+json';
// PostgreSQL leg (P1, P3, P4 against the pg baseline): --pg, or --pg=postgres://user@host:port.
const PG = args.has('pg') ? (args.get('pg') === '1' ? 'postgres://postgres@127.0.0.1:5432' : args.get('pg')!) : null;
const PG_SCALE = (args.get('pg-scale') ?? (QUICK ? 'S' : 'M')) as Scale;
// --processes=N (N ≥ 2, with --pg): the PostgreSQL leg also measures N processes against one.
const PROCESSES = Number(args.get('processes') ?? 1);
if (!Number.isInteger(PROCESSES) || PROCESSES < 1)
  throw new Error(`--processes must be a whole number of at least 1, not ${args.get('processes')}`);
// --only=P0,P3: only those workloads (ids as in the table; G and PG too), after the checks.
const ONLY = args.has('only')
  ? new Set(
      args
        .get('only')!
        .split(',')
        .map((id) => id.trim().toUpperCase()),
    )
  : null;
const runs = (id: string) => !ONLY || ONLY.has(id);
// --soak[=seconds]: also the memory soak (issue 28), 600 s unless given; --soak-sample=N seconds between RSS samples.
// --synchronous=NORMAL: SQLite's commits not synced (Tilth's TILTH_SQLITE_SYNCHRONOUS, the write baseline's pragma).
const SYNCHRONOUS = (args.get('synchronous') ?? 'FULL').toUpperCase();
if (SYNCHRONOUS !== 'FULL' && SYNCHRONOUS !== 'NORMAL')
  throw new Error(`--synchronous must be FULL or NORMAL, not ${SYNCHRONOUS}`);
const SYNC_ENV: Record<string, string> = SYNCHRONOUS === 'FULL' ? {} : { TILTH_SQLITE_SYNCHRONOUS: SYNCHRONOUS };
const SOAK = process.argv.includes('--soak') ? 600 : args.has('soak') ? Number(args.get('soak')) : 0;
const SOAK_SAMPLE = Number(args.get('soak-sample') ?? 5);
if (!(SOAK >= 0) || !(SOAK_SAMPLE > 0)) throw new Error('--soak and --soak-sample take a number of seconds');

const say = (s: string) => process.stdout.write(`${s}\n`);
const rows: Row[] = [];
const add = (row: Row) => {
  rows.push(row);
  const mark = row.met === null ? ' ' : row.met === 'n/a' ? '?' : row.met ? '✓' : '✗';
  say(`${mark} ${row.id.padEnd(4)} ${row.what}: ${row.figure}${row.target ? `  [target ${row.target}]` : ''}`);
};

/** A successful answer's body and headers. */
async function answer(url: string, init: RequestInit = {}): Promise<{ bytes: Buffer; headers: Headers }> {
  const res = await fetch(url, init);
  if (!res.ok) throw new Error(`${init.method ?? 'GET'} ${url}: ${res.status} ${(await res.text()).slice(0, 300)}`);
  return { bytes: Buffer.from(await res.arrayBuffer()), headers: res.headers };
}

async function body(url: string, init: RequestInit = {}): Promise<Buffer> {
  return (await answer(url, init)).bytes;
}

/**
 * Whether a baseline answers `path` as Tilth does: the same bytes and the same headers (but those
 * made per response, baselines/headers.ts). Adds a check row saying where they differ.
 */
async function sameAnswer(
  what: string,
  tilth: string,
  baseline: { name: string; url: string },
  path: string,
  headers?: Record<string, string>,
): Promise<boolean> {
  const a = await answer(`${tilth}${path}`, { headers });
  const res = await fetch(`${baseline.url}${path}`, { headers });
  const b = Buffer.from(await res.arrayBuffer());
  const at = firstDifference(a.bytes, b);
  const differences = headerDifferences(a.headers, res.headers);
  const context = (x: Buffer) => JSON.stringify(x.subarray(Math.max(0, at - 60), at + 60).toString());
  const figure = [
    at < 0
      ? `identical bytes (${a.bytes.length})`
      : `bytes DIFFER at ${at} (Tilth ${a.bytes.length}, ${baseline.name} ${b.length}): Tilth ${context(a.bytes)}, ${baseline.name} ${context(b)}`,
    differences.length
      ? `headers DIFFER: ${differences.join('; ')}`
      : `the same ${recordHeaders(a.headers).length} headers`,
  ].join('; ');
  const same = at < 0 && differences.length === 0;
  add({ id: 'chk', what: `${baseline.name} = Tilth's answer, ${what}`, figure, target: 'identical', met: same });
  return same;
}

/**
 * Whether the write baseline answers and writes as Tilth does, for one POST of P4 and one PATCH of
 * P5 (write-check.ts). Adds a check row.
 */
async function sameWrites(
  where: string,
  db: { file: string | null; url: string | null },
  tilth: string,
  writer: string,
  headers: Record<string, string>,
  postBody: string,
  patchPath: string,
  asset: { type: string; id: string },
): Promise<boolean> {
  const id = patchPath.slice(patchPath.lastIndexOf('/') + 1);
  const patchBody = JSON.stringify({
    data: {
      type: 'log--activity',
      id,
      attributes: { name: 'Renamed by the check' },
      relationships: { asset: { data: [asset] } },
    },
  });
  const differences = await checkWrites(db, tilth, writer, headers, postBody, patchPath, patchBody);
  add({
    id: 'chk',
    what: `${where}: write baseline = Tilth's answer and rows, a POST of P4 and a PATCH of P5`,
    figure: differences.length
      ? differences.join('; ')
      : 'identical answers (but the new ids, times and feed position) and the same rows',
    target: 'identical',
    met: differences.length === 0,
  });
  return differences.length === 0;
}

async function passwordGrant(base: string): Promise<{ access_token: string; refresh_token: string }> {
  const res = await fetch(`${base}/oauth/token`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'password',
      username: ADMIN.name,
      password: ADMIN.password,
      client_id: 'farm',
    }),
  });
  if (!res.ok) throw new Error(`password grant: ${res.status} ${await res.text()}`);
  return (await res.json()) as { access_token: string; refresh_token: string };
}

/** A farm's database in a fresh temporary directory, ready for Tilth (migrated, loaded). */
async function farm(scale: Scale): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), `tilth-bench-${scale}-`));
  await prepareFarm(ROOT, dir, scale, SEED, async (d) => (await startTilth(d)).stop(), say);
  return dir;
}

/** `count` activity log UUIDs spread over the table (a seeded sample, the same each run). */
function sampleLogs(file: string, count: number): string[] {
  const db = new Database(file, { readonly: true });
  const ids = db.prepare(`SELECT uuid FROM log WHERE bundle = 'activity'`).pluck().all() as string[];
  db.close();
  const rand = prng(7);
  return Array.from({ length: count }, () => ids[Math.floor(rand() * ids.length)]!);
}

/**
 * P4's request bodies: an activity log naming two animals, a field and a quantity of the farm.
 * Quantities are referenced, not created per log: autocannon sends one request at a time per
 * connection and cannot chain a create into the next request's body. (Tilth accepts it.)
 */
function postBodies(file: string): string[] {
  const sdb = new Database(file, { readonly: true });
  const animals = sdb.prepare(`SELECT uuid FROM asset WHERE bundle = 'animal' LIMIT 200`).pluck().all() as string[];
  const field = sdb.prepare(`SELECT uuid FROM asset WHERE bundle = 'land' LIMIT 1`).pluck().get() as string;
  const quantities = sdb.prepare(`SELECT uuid FROM quantity LIMIT 500`).pluck().all() as string[];
  sdb.close();
  return quantities.map((q, i) =>
    JSON.stringify({
      data: {
        type: 'log--activity',
        attributes: { name: `Bench write ${i}`, status: 'done', timestamp: '2025-06-01T08:00:00+00:00' },
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
}

interface Session {
  tilth: Running;
  dir: string;
  auth: Record<string, string>;
  work: string;
}

async function open(scale: Scale): Promise<Session> {
  const dir = await farm(scale);
  const tilth = await startTilth(dir, SYNC_ENV);
  const { access_token } = await passwordGrant(tilth.url);
  const work = join(dir, 'bench');
  mkdirSync(work);
  return { tilth, dir, auth: { Authorization: `Bearer ${access_token}`, Accept: JSONAPI }, work };
}

async function close(s: Session): Promise<void> {
  await s.tilth.stop();
  rmSync(s.dir, { recursive: true, force: true });
}

const closed = (url: string, extra: Partial<LoadSpec> = {}) =>
  load({ url, seconds: SECONDS, connections: CLOSED_CONNECTIONS, ...extra });
/**
 * Seconds of warm-up (bench/load.ts) before a figure measured once, the first of its kind on its
 * server: the writes, P6, P7's client credentials and PostgreSQL's POST. Figures measured in
 * pairs keep the better of two runs instead. Not P7's refresh grant: each chain's token is good once, and a request
 * still out when the warm-up stops would take its chain with it. Ten seconds: PATCHes on a fresh
 * farm-L server ran at 624, 951 and 1,093 req/s in three 5 s runs in a row, so three were not
 * enough.
 */
const WARMUP = QUICK ? 1 : 10;
const warm = { warmup: WARMUP };
/**
 * Tilth and its baseline measured twice each, alternating (A B A B), the better run of each kept:
 * the machine is shared, and a burst of someone else's work during one run would otherwise
 * decide the ratio. A quick run measures each once, to stay under three minutes.
 */
async function pair(a: () => Promise<LoadResult>, b: () => Promise<LoadResult>): Promise<[LoadResult, LoadResult]> {
  const a1 = await a();
  const b1 = await b();
  if (QUICK) return [a1, b1];
  const a2 = await a();
  const b2 = await b();
  const best = (x: LoadResult, y: LoadResult) => (y.rps > x.rps ? y : x);
  return [best(a1, a2), best(b1, b2)];
}
const atRate = (url: string, rate: number, extra: Partial<LoadSpec> = {}) =>
  load({ url, seconds: SECONDS, connections: RATE_CONNECTIONS, rate, ...extra });

/** One of the reads G compares between farms (P1, P3 or P6) on a session's Tilth, closed loop. */
function growthFigure(s: Session, k: 'P1' | 'P3' | 'P6', p3List: string): Promise<LoadResult> {
  if (k === 'P1') return closed(`${s.tilth.url}${p1Path()}`, { headers: s.auth });
  if (k === 'P3') return closed(s.tilth.url, { headers: s.auth, mode: 'randomPath', list: p3List });
  return closed(`${s.tilth.url}/api/asset/animal`, { headers: s.auth });
}

const started = Date.now();
const cpu = /model name\s*:\s*(.+)/.exec(readFileSync('/proc/cpuinfo', 'utf8'))?.[1] ?? cpus()[0]?.model ?? 'unknown';
/** The machine is shared: its load average (1, 5, 15 minutes) goes with the figures. */
const loadAverage = () =>
  loadavg()
    .map((x) => x.toFixed(2))
    .join(', ');
const machine = {
  nproc: cpus().length,
  cpu,
  node: process.version,
  pinned: PINNED,
  loadAtStart: loadAverage(),
  load: loadAverage,
};

/** Rows with a server and farm of their own, measured after the others (or alone: --only=C1,M1). */
const STANDALONE = ['C1', 'M1', 'M2', 'M3'];

async function standaloneRows(): Promise<void> {
  // --- helper `views`: C1, a chart of a million readings in Chromium (bench/chart.ts) ---
  if (runs('C1')) add(await chartRow(say));
  // --- helper `mapbench`: M1–M3, the farm map on 30,000 fields and 10,000 animals (bench/map.ts) ---
  const map = (['M1', 'M2', 'M3'] as const).filter(runs);
  if (map.length)
    for (const row of await mapRows(say, {
      seconds: QUICK ? 6 : 20,
      rate: 5,
      runs: QUICK ? 2 : 5,
      rows: new Set(map),
    }))
      add(row);
}

async function main(): Promise<void> {
  say(
    `bench: ${QUICK ? 'quick' : 'full'} run, main farm-${MAIN}, G farm-${SMALL} against farm-${BIG}, ${SECONDS} s per figure, seed ${SEED}${SYNCHRONOUS === 'FULL' ? '' : `, SQLite synchronous=${SYNCHRONOUS}`}`,
  );
  say(
    `machine: ${machine.nproc} cores, ${cpu}, Node ${machine.node}, ${PINNED ? 'server on core 0, load on core 1' : 'NOT pinned (no taskset or one core)'}; load average ${machine.loadAtStart}`,
  );
  if (PROCESSES > 1)
    say(
      PG
        ? `PostgreSQL through ${PROCESSES} processes: ${placeProcesses(PROCESSES).description}`
        : '--processes has effect with --pg only',
    );

  // Only rows that bring their own server and farm: none of the main farm's.
  if (ONLY && [...ONLY].every((id) => STANDALONE.includes(id))) {
    await standaloneRows();
    report();
    return;
  }

  // Client for P7's client_credentials grant, made with Tilth's own CLI before the server starts.
  const s = await open(MAIN);
  const cli = execFileSync(
    process.execPath,
    [
      'bin/tilth.js',
      'client',
      'create',
      '--id',
      'bench',
      '--label',
      'Bench',
      '--confidential',
      '--grant',
      'client_credentials',
      '--user',
      ADMIN.name,
    ],
    {
      cwd: ROOT,
      env: { ...process.env, TILTH_DATA_DIR: s.dir, TILTH_LOG_LEVEL: 'silent' },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  ).toString();
  const secret = /secret[^:]*:\s*(\S+)/i.exec(cli)?.[1];
  const T = s.tilth.url;
  const baselines: Running[] = [];
  try {
    const db = join(s.dir, 'tilth.sqlite');
    const uuids = sampleLogs(db, 2000);
    const p1 = p1Path();
    const first = await answer(`${T}${p1}`, { headers: s.auth });
    const firstPage = first.bytes;
    const firstDoc = JSON.parse(firstPage.toString()) as { links: { next?: { href: string } } };
    const nextHref = firstDoc.links.next?.href;
    const fingerprint = nextHref
      ? (
          JSON.parse(Buffer.from(new URL(nextHref).searchParams.get('page[cursor]')!, 'base64url').toString()) as {
            h: string;
          }
        ).h
      : '';

    // The baselines, on the same database file.
    // Every baseline answers with Tilth's headers as well as its bytes (baselines/headers.ts).
    const headersFile = writeJson(s.work, 'headers.json', recordHeaders(first.headers));
    const rendered = await startBaseline('rendered.ts', {
      DB: db,
      BASE_URL: T,
      FINGERPRINT: fingerprint,
      HEADERS: headersFile,
    });
    baselines.push(rendered);
    const schemaPath = '/api/schema';
    const resourceSchemaPath = '/api/log/activity/resource/schema';
    const bodies: Record<string, { file: string; headers: HeaderList }> = {};
    const keep = (path: string, kept: { bytes: Buffer; headers: Headers }) => {
      const file = join(s.work, `body-${Object.keys(bodies).length}`);
      writeFileSync(file, kept.bytes);
      bodies[path] = { file, headers: recordHeaders(kept.headers) };
    };
    keep('/api', await answer(`${T}/api`, { headers: s.auth }));
    keep(p1, first);
    keep(schemaPath, await answer(`${T}${schemaPath}`));
    keep(resourceSchemaPath, await answer(`${T}${resourceSchemaPath}`));
    const bodiesFile = writeJson(s.work, 'bodies.json', bodies);
    const bare = await startBaseline('static.ts', { BODIES: bodiesFile, DB: db, TOKEN_CHECK: '1' });
    const ceiling = await startBaseline('static.ts', { BODIES: bodiesFile });
    // P8's baseline: a minimal Express 5 app with Tilth's middleware functions (baselines/express.ts).
    const minimal = await startBaseline('express.ts', { BODIES: bodiesFile, DB: db });
    // P4 and P5's: the same rows written by bare node:http, a transaction each (baselines/write.ts).
    const writer = await startBaseline('write.ts', { DB: db, BASE_URL: T, HEADERS: headersFile, SYNCHRONOUS });
    baselines.push(bare, ceiling, minimal, writer);

    // Checks: each baseline must answer as Tilth does, bytes and headers, or its ratios mean nothing.
    const p2 = `${p1}&include=asset,quantity`;
    const checks: Array<[string, string]> = [
      ['P1 first page', p1],
      ['P2 first page (included)', p2],
      ['P3 one log', `/api/log/activity/${uuids[0]}`],
      ['P3 another log', `/api/log/activity/${uuids[1]}`],
    ];
    if (nextHref) checks.push(['P1 second page (links.next)', new URL(nextHref).pathname + new URL(nextHref).search]);
    let renderedSame = true;
    const check = async (what: string, path: string) => {
      renderedSame &&= await sameAnswer(what, T, { name: 'rendered', url: rendered.url }, path, s.auth);
    };
    for (const [what, path] of checks) await check(what, path);
    // The static baselines too, each with its own verdict.
    const bareSame = await sameAnswer('GET /api', T, { name: 'bare (token check)', url: bare.url }, '/api', s.auth);
    let ceilingSame = true;
    for (const path of [schemaPath, resourceSchemaPath])
      ceilingSame &&= await sameAnswer(`GET ${path}`, T, { name: 'static', url: ceiling.url }, path);
    let minimalSame = true;
    for (const path of [schemaPath, resourceSchemaPath])
      minimalSame &&= await sameAnswer(`GET ${path}`, T, { name: 'minimal Express', url: minimal.url }, path);

    // P0: per-request overhead, against a bare server with the same bytes and the same token check.
    if (runs('P0')) {
      const [t, b] = await pair(
        () => closed(`${T}/api`, { headers: s.auth }),
        () => closed(`${bare.url}/api`, { headers: s.auth }),
      );
      add({
        id: 'P0',
        what: 'GET /api with a token',
        figure: `${fmt(t)}; bare ${b.rps.toLocaleString('en')} req/s; ${ratio(t, b)}×`,
        target: '≥ 0.5× bare',
        met: bareSame ? clean(t) && clean(b) && ratio(t, b) >= 0.5 : 'n/a',
        detail: { tilth: t, bare: b },
      });
    }

    // P1: the page of logs.
    let p1Tilth: LoadResult | undefined;
    if (runs('P1')) {
      const [t, r] = await pair(
        () => closed(`${T}${p1}`, { headers: s.auth }),
        () => closed(`${rendered.url}${p1}`, { headers: s.auth }),
      );
      p1Tilth = t;
      const st = await closed(`${ceiling.url}${p1}`);
      add({
        id: 'P1',
        what: `page of 50 activity logs (${(firstPage.length / 1024).toFixed(0)} KB)`,
        figure: `${fmt(t)}; rendered ${r.rps.toLocaleString('en')}, static ${st.rps.toLocaleString('en')} req/s; ${ratio(t, r)}× rendered, ${ratio(t, st)}× static`,
        target: '≥ 0.75× rendered',
        met: renderedSame && clean(t) && clean(r) ? ratio(t, r) >= 0.75 : 'n/a',
        detail: { tilth: t, rendered: r, static: st },
      });
      const f = await atRate(`${T}${p1}`, 100, { headers: s.auth });
      add({
        id: 'P1',
        what: 'page of logs at 100 req/s',
        figure: fmt(f),
        target: 'p99 ≤ 20 ms',
        met: clean(f) && f.p99 <= 20,
        detail: { tilth: f },
      });
    }

    // P2: P1 with its assets and quantities included.
    if (runs('P2')) {
      const size = (await body(`${T}${p2}`, { headers: s.auth })).length;
      const [t, r] = await pair(
        () => closed(`${T}${p2}`, { headers: s.auth }),
        () => closed(`${rendered.url}${p2}`, { headers: s.auth }),
      );
      add({
        id: 'P2',
        what: `P1 + include=asset,quantity (${(size / 1024).toFixed(0)} KB)`,
        figure: `${fmt(t)}; rendered ${r.rps.toLocaleString('en')} req/s; ${ratio(t, r)}× rendered${p1Tilth ? `, ${ratio(t, p1Tilth)}× P1` : ''}`,
        target: '≥ 0.65× rendered',
        met: renderedSame && clean(t) && clean(r) ? ratio(t, r) >= 0.65 : 'n/a',
        detail: { tilth: t, rendered: r },
      });
      const f = await atRate(`${T}${p2}`, 50, { headers: s.auth });
      add({
        id: 'P2',
        what: 'P2 at 50 req/s',
        figure: fmt(f),
        target: 'p99 ≤ 40 ms',
        met: clean(f) && f.p99 <= 40,
        detail: { tilth: f },
      });
    }

    // P3: one log by UUID, a different one each request.
    if (runs('P3')) {
      const list = writeJson(
        s.work,
        'p3.json',
        uuids.map((u) => `/api/log/activity/${u}`),
      );
      const [t, r] = await pair(
        () => closed(T, { headers: s.auth, mode: 'randomPath', list }),
        () => closed(rendered.url, { headers: s.auth, mode: 'randomPath', list }),
      );
      add({
        id: 'P3',
        what: 'one log by UUID, random',
        figure: `${fmt(t)}; rendered ${r.rps.toLocaleString('en')} req/s; ${ratio(t, r)}×`,
        target: '≥ 0.75× rendered',
        met: renderedSame && clean(t) && clean(r) ? ratio(t, r) >= 0.75 : 'n/a',
        detail: { tilth: t, rendered: r },
      });
      const f = await atRate(T, 500, { headers: s.auth, mode: 'randomPath', list });
      add({
        id: 'P3',
        what: 'one log at 500 req/s',
        figure: fmt(f),
        target: 'p99 ≤ 5 ms',
        met: clean(f) && f.p99 <= 5,
        detail: { tilth: f },
      });
    }

    // P4, P5: writes. References come from the farm: animals, a field, existing quantities.
    if (runs('P4') || runs('P5')) {
      const sdb = new Database(db, { readonly: true });
      const animals = sdb.prepare(`SELECT uuid FROM asset WHERE bundle = 'animal' LIMIT 200`).pluck().all() as string[];
      sdb.close();
      const posts = postBodies(db);
      const postList = writeJson(s.work, 'posts.json', posts);
      const writeHeaders = { ...s.auth, 'Content-Type': JSONAPI };
      const patchList = writeJson(
        s.work,
        'patch.json',
        uuids.slice(0, 1000).map((u) => `/api/log/activity/${u}`),
      );
      const assets = animals.map((id) => ({ type: 'asset--animal', id }));
      // The write baseline must answer and write as Tilth does (write-check.ts), or its ratios mean nothing.
      const writeSame = await sameWrites(
        'SQLite',
        { file: db, url: null },
        T,
        writer.url,
        writeHeaders,
        posts[0]!,
        `/api/log/activity/${uuids[1999]}`,
        assets[0]!,
      );
      const [t, wb] = await pair(
        () =>
          closed(`${T}/api/log/activity`, {
            method: 'POST',
            headers: writeHeaders,
            mode: 'postLog',
            list: postList,
            ...warm,
          }),
        () =>
          closed(`${writer.url}/api/log/activity`, {
            method: 'POST',
            headers: writeHeaders,
            mode: 'postLog',
            list: postList,
            ...warm,
          }),
      );
      add({
        id: 'P4',
        what: 'POST a log (2 assets, location, quantity)',
        figure: `${fmt(t)}; write baseline ${wb.rps.toLocaleString('en')} req/s; ${ratio(t, wb)}×`,
        target: '≥ 1,000 req/s and ≥ 0.5× write',
        met: writeSame ? clean(t) && clean(wb) && t.rps >= 1000 && ratio(t, wb) >= 0.5 : 'n/a',
        detail: { tilth: t, write: wb },
      });
      const f = await atRate(`${T}/api/log/activity`, 100, {
        method: 'POST',
        headers: writeHeaders,
        mode: 'postLog',
        list: postList,
      });
      add({
        id: 'P4',
        what: 'POST at 100 req/s',
        figure: fmt(f),
        target: 'p99 ≤ 20 ms',
        met: clean(f) && f.p99 <= 20,
        detail: { tilth: f },
      });

      const [pt, pw] = await pair(
        () => closed(T, { headers: writeHeaders, mode: 'patchLog', list: patchList, assets, ...warm }),
        () => closed(writer.url, { headers: writeHeaders, mode: 'patchLog', list: patchList, assets, ...warm }),
      );
      add({
        id: 'P5',
        what: 'PATCH a name and a relationship',
        figure: `${fmt(pt)}; write baseline ${pw.rps.toLocaleString('en')} req/s; ${ratio(pt, pw)}×`,
        target: '≥ 1,000 req/s and ≥ 0.5× write',
        met: writeSame ? clean(pt) && clean(pw) && pt.rps >= 1000 && ratio(pt, pw) >= 0.5 : 'n/a',
        detail: { tilth: pt, write: pw },
      });
      const pf = await atRate(T, 100, { headers: writeHeaders, mode: 'patchLog', list: patchList, assets });
      add({
        id: 'P5',
        what: 'PATCH at 100 req/s',
        figure: fmt(pf),
        target: 'p99 ≤ 20 ms',
        met: clean(pf) && pf.p99 <= 20,
        detail: { tilth: pf },
      });
      // SQLite's log, after the writes: it stays short only if checkpoints let it start afresh.
      const wal = existsSync(`${db}-wal`) ? statSync(`${db}-wal`).size : 0;
      add({
        id: 'P5',
        what: "SQLite's log after the writes of P4 and P5",
        figure: `${(wal / 1e6).toFixed(1)} MB (the database ${(statSync(db).size / 1e6).toFixed(0)} MB)`,
        target: '',
        met: null,
        detail: { walBytes: wal },
      });
    }

    // P6: animals with their computed location and geometry, and the same page without them.
    if (runs('P6')) {
      const page = JSON.parse((await body(`${T}/api/asset/animal`, { headers: s.auth })).toString()) as {
        data: Array<{ attributes: object; relationships: object }>;
      };
      const fields = page.data.length
        ? [...Object.keys(page.data[0]!.attributes), ...Object.keys(page.data[0]!.relationships)].filter(
            (f) => f !== 'location' && f !== 'geometry',
          )
        : [];
      const without = `/api/asset/animal?fields%5Basset--animal%5D=${fields.join(',')}`;
      const t = await closed(`${T}/api/asset/animal`, { headers: s.auth, ...warm });
      const w = await closed(`${T}${without}`, { headers: s.auth, ...warm });
      const cost = +(w.rps / Math.max(1, t.rps)).toFixed(3);
      add({
        id: 'P6',
        what: 'page of 50 animals with location',
        figure: `${fmt(t)}; without location ${w.rps.toLocaleString('en')} req/s; costs ${cost}×`,
        target: '≤ 1.3× the page without location',
        met: clean(t) && clean(w) && cost <= 1.3,
        detail: { tilth: t, withoutLocation: w },
      });
      const sdb = new Database(db, { readonly: true });
      const place = sdb.prepare(`SELECT uuid FROM asset WHERE bundle = 'land' LIMIT 1`).pluck().get() as string;
      sdb.close();
      const inX = `/api/asset/animal?filter%5Blocation.id%5D=${place}`;
      const probe = await fetch(`${T}${inX}`, { headers: s.auth });
      await probe.arrayBuffer();
      if (probe.status !== 200) {
        add({
          id: 'P6',
          what: 'animals in location X (filter[location.id])',
          figure: `unsupported (${probe.status})`,
          target: 'p99 ≤ 20 ms',
          met: false,
        });
      } else {
        // The issue names no rate for this p99; every other p99 target is at a fixed rate (a closed
        // loop's p99 is mostly the wait behind the other connections), so it is measured at P1's
        // 100 req/s, and the closed loop is reported beside it.
        const f = await closed(`${T}${inX}`, { headers: s.auth, ...warm });
        add({
          id: 'P6',
          what: 'animals in location X (filter[location.id])',
          figure: fmt(f),
          target: '',
          met: null,
          detail: { tilth: f },
        });
        const r = await atRate(`${T}${inX}`, 100, { headers: s.auth });
        add({
          id: 'P6',
          what: 'animals in location X at 100 req/s',
          figure: fmt(r),
          target: 'p99 ≤ 20 ms',
          met: clean(r) && r.p99 <= 20,
          detail: { tilth: r },
        });
      }
    }

    // P7: token endpoint. Refresh tokens rotate, so each response's new token is used next.
    if (runs('P7')) {
      const form = { 'Content-Type': 'application/x-www-form-urlencoded' };
      const refreshTokens: string[] = [];
      // One chain per connection: each is a password grant, and argon2id is slow on purpose.
      for (let i = 0; i < CLOSED_CONNECTIONS; i++) refreshTokens.push((await passwordGrant(T)).refresh_token);
      const list = writeJson(s.work, 'refresh.json', refreshTokens);
      const r = await closed(`${T}/oauth/token`, {
        method: 'POST',
        headers: form,
        mode: 'refresh',
        list,
        form: { client_id: 'farm' },
      });
      add({
        id: 'P7',
        what: 'refresh grant',
        figure: fmt(r),
        target: '≥ 500 req/s',
        met: clean(r) && r.rps >= 500,
        detail: { tilth: r },
      });
      if (secret) {
        const c = await closed(`${T}/oauth/token`, {
          method: 'POST',
          headers: form,
          body: new URLSearchParams({
            grant_type: 'client_credentials',
            client_id: 'bench',
            client_secret: secret,
          }).toString(),
          ...warm,
        });
        add({
          id: 'P7',
          what: 'client_credentials grant',
          figure: fmt(c),
          target: '≥ 500 req/s',
          met: clean(c) && c.rps >= 500,
          detail: { tilth: c },
        });
      } else
        add({
          id: 'P7',
          what: 'client_credentials grant',
          figure: `no client secret from the CLI: ${cli.slice(0, 200)}`,
          target: '≥ 500 req/s',
          met: 'n/a',
        });
      const p = await closed(`${T}/oauth/token`, {
        method: 'POST',
        headers: form,
        body: new URLSearchParams({
          grant_type: 'password',
          username: ADMIN.name,
          password: ADMIN.password,
          client_id: 'farm',
        }).toString(),
      });
      add({
        id: 'P7',
        what: 'password grant (argon2id by design)',
        figure: fmt(p),
        target: '',
        met: null,
        detail: { tilth: p },
      });
      // The grants autocannon sent last are still hashing on the server's core when it stops, and
      // would fall on P8's figure. Hashes start first in, first out on the thread pool, so one more
      // grant's answer comes when the queue has (all but) drained.
      await passwordGrant(T);
    }

    // P8: schemas, against a minimal Express 5 app with Tilth's middleware functions sending the
    // same bytes (issue 28: Express stays, so its floor is the baseline); *static* as a figure only.
    for (const path of runs('P8') ? [schemaPath, resourceSchemaPath] : []) {
      const [t, m] = await pair(
        () => closed(`${T}${path}`),
        () => closed(`${minimal.url}${path}`),
      );
      const st = await closed(`${ceiling.url}${path}`);
      add({
        id: 'P8',
        what: `GET ${path}`,
        figure: `${fmt(t)}; minimal Express ${m.rps.toLocaleString('en')} req/s; ${ratio(t, m)}×; static ${st.rps.toLocaleString('en')} req/s, ${ceilingSame ? ratio(t, st) : 'n/a'}×`,
        target: '≥ 0.9× minimal Express',
        met: minimalSame ? clean(t) && clean(m) && ratio(t, m) >= 0.9 : 'n/a',
        detail: { tilth: t, minimalExpress: m, static: st },
      });
    }

    // P9: page 2,000 of P1 (or the last page, on a smaller farm) reached through links.next.
    if (runs('P9')) {
      let href = nextHref;
      let path = p1;
      let pageNo = 1;
      const walk = Date.now();
      while (href && pageNo < 2000) {
        path = new URL(href).pathname + new URL(href).search;
        const doc = JSON.parse((await body(`${T}${path}`, { headers: s.auth })).toString()) as {
          links: { next?: { href: string } };
        };
        href = doc.links.next?.href;
        pageNo++;
      }
      const walkSeconds = (Date.now() - walk) / 1000;
      await check(`P9 page ${pageNo}, after the writes of P4 and P5`, path);
      // Against P1's first page measured again now, alternately, as every other ratio is taken:
      // the P1 figure from minutes earlier (before the writes of P4 and P5) moved with the machine.
      const [t, first] = await pair(
        () => closed(`${T}${path}`, { headers: s.auth }),
        () => closed(`${T}${p1}`, { headers: s.auth }),
      );
      // The same deep page from the rendered baseline (same keyset SQL): is the page itself slow, or Tilth?
      const r = await closed(`${rendered.url}${path}`, { headers: s.auth });
      // A farm too small for 2,000 pages ends on a short last page: cheaper, and not what P9 asks.
      const deepEnough = pageNo >= 2000;
      add({
        id: 'P9',
        what: `page ${pageNo} of P1 through links.next (walked in ${walkSeconds.toFixed(1)} s)${deepEnough ? '' : ', the last page: farm too small for page 2,000'}`,
        figure: `${fmt(t)}; page 1 ${first.rps.toLocaleString('en')} req/s alongside; ${ratio(t, first)}× P1; rendered ${r.rps.toLocaleString('en')} req/s here`,
        target: '≥ 0.9× P1',
        met: !deepEnough ? 'n/a' : clean(t) && clean(first) ? ratio(t, first) >= 0.9 : false,
        detail: { tilth: t, p1: first, p1Earlier: p1Tilth, rendered: r, page: pageNo },
      });
    }

    // P10 (issue 25): a page of 100 changes of the change feed at 100 req/s. The cursor is the
    // one after the first 500 changes, so every request reads the same 100 rows of the feed.
    if (runs('P10')) {
      const first = JSON.parse(
        (await body(`${T}/api/changes?since=0&page%5Blimit%5D=500`, { headers: s.auth })).toString(),
      ) as { data: unknown[]; meta: { cursor: string } };
      const feedPage = `${T}/api/changes?since=${first.meta.cursor}&page%5Blimit%5D=100`;
      const rows = (JSON.parse((await body(feedPage, { headers: s.auth })).toString()) as { data: unknown[] }).data
        .length;
      const f = await atRate(feedPage, 100, { headers: s.auth });
      add({
        id: 'P10',
        what: `a change feed page of ${rows} changes at 100 req/s`,
        figure: fmt(f),
        target: 'p99 ≤ 20 ms',
        met: rows === 100 && clean(f) && f.p99 <= 20,
        detail: { tilth: f, rows },
      });
    }

    // U1–U5 (issue 38): the web pages, signed in with a session cookie as a browser is (bench/web.ts).
    if (['U1', 'U2', 'U3', 'U4', 'U5'].some(runs)) await webRows(s, db, uuids, p1Tilth);

    // Memory: the server's resident set after the workloads so far (the whole run's, in a full run).
    if (runs('MEM')) {
      const rss = residentBytes(s.tilth.child.pid!);
      add({
        id: 'MEM',
        what: `Tilth's resident memory after the run (farm-${MAIN})`,
        figure: rss === null ? 'not measured (no /proc)' : `${(rss / 2 ** 20).toFixed(0)} MB`,
        target: '≤ 256 MB',
        met: rss === null ? 'n/a' : rss <= 256 * 2 ** 20,
        detail: { rssBytes: rss },
      });
    }
    if (SOAK) await soak(s, uuids, postBodies(db), db);

    // G: the same reads on a small and a big farm. Both servers run at once (the idle one costs
    // nothing) so the two farms can be measured alternately, best of two, like the baselines.
    for (const b of baselines) await b.stop();
    baselines.length = 0;
    const sessions = new Map<Scale, Session>([[MAIN, s]]);
    if (runs('G')) {
      try {
        for (const scale of [SMALL, BIG])
          if (!sessions.has(scale)) {
            say(`G: farm-${scale}…`);
            sessions.set(scale, await open(scale));
          }
        const lists = new Map(
          [...sessions].map(([scale, x]) => [
            scale,
            writeJson(
              x.work,
              'g-uuids.json',
              sampleLogs(join(x.dir, 'tilth.sqlite'), 2000).map((u) => `/api/log/activity/${u}`),
            ),
          ]),
        );
        for (const k of ['P1', 'P3', 'P6'] as const) {
          const [big, small] = await pair(
            () => growthFigure(sessions.get(BIG)!, k, lists.get(BIG)!),
            () => growthFigure(sessions.get(SMALL)!, k, lists.get(SMALL)!),
          );
          const r = ratio(big, small);
          add({
            id: 'G',
            what: `${k} on farm-${BIG} against farm-${SMALL}`,
            figure: `${big.rps.toLocaleString('en')} against ${small.rps.toLocaleString('en')} req/s; ${r}×`,
            target: '≥ 0.85×',
            met: clean(big) && clean(small) && r >= 0.85,
            detail: { big, small },
          });
        }
      } finally {
        for (const [scale, x] of sessions) if (scale !== MAIN) await close(x);
      }
    }

    if (PG && runs('PG')) await postgresLeg(PG);
    // Start: `tilth serve --migrate` on the farm the run used, with nothing left to migrate or compute.
    if (runs('STA') || runs('START')) s.tilth = await startFigure(s);
    await standaloneRows();
    report();
  } finally {
    for (const b of baselines) await b.stop();
    await s.tilth.stop();
    rmSync(s.dir, { recursive: true, force: true });
  }
}

/**
 * Issue 38's rows for the web interface (bench/web.ts says what each measures): U1–U3 against the
 * API's answers in the same run (A B A B in a full run), U4 and U5 from Chromium.
 */
async function webRows(s: Session, db: string, uuids: string[], p1Tilth: LoadResult | undefined): Promise<void> {
  const T = s.tilth.url;
  const cookie = `${SESSION_COOKIE}=${await webSignIn(T)}`;
  const web = { Cookie: cookie };
  const listPath = webListPath();

  if (runs('U1')) {
    // The API's query of the page: its relationships as the list shows them, read from a log's.
    const probe = JSON.parse((await body(`${T}${apiListPath([])}`, { headers: s.auth })).toString()) as {
      data: Array<{ relationships: Record<string, unknown> }>;
    };
    const include = listedRelationships(Object.keys(probe.data[0]?.relationships ?? {}));
    const apiPath = apiListPath(include);
    const page = (await body(`${T}${listPath}`, { headers: web })).toString();
    const shown = logsOnListPage(page);
    const api = (
      JSON.parse((await body(`${T}${apiPath}`, { headers: s.auth })).toString()) as { data: Array<{ id: string }> }
    ).data.map((d) => d.id);
    const same = shown.length === 50 && shown.join() === api.join();
    add({
      id: 'chk',
      what: "U1's list page = the API's page of its query",
      figure: same
        ? `the same 50 logs in the same order (include=${include.join(',')})`
        : `DIFFER: the page shows ${shown.length} logs, the API's page ${api.length}; first difference at row ${shown.findIndex((u, i) => u !== api[i])}`,
      target: 'identical',
      met: same,
    });
    const [t, a] = await pair(
      () => closed(`${T}${listPath}`, { headers: web }),
      () => closed(`${T}${apiPath}`, { headers: s.auth }),
    );
    add({
      id: 'U1',
      what: `web list of 50 logs, two filters (status, date range) (${(page.length / 1024).toFixed(0)} KB)`,
      figure: `${fmt(t)}; the API's page of the same query ${a.rps.toLocaleString('en')} req/s; ${ratio(t, a)}×${p1Tilth ? `; ${ratio(t, p1Tilth)}× P1 (measured earlier, no includes)` : ''}`,
      target: "≥ 0.7× the API's page",
      met: same && clean(t) && clean(a) ? ratio(t, a) >= 0.7 : 'n/a',
      detail: { tilth: t, api: a, webPath: listPath, apiPath },
    });
  }

  if (runs('U2')) {
    const pages = writeJson(
      s.work,
      'u2.json',
      uuids.map((u) => `/farm/log/activity/${u}`),
    );
    const p3 = writeJson(
      s.work,
      'u2-p3.json',
      uuids.map((u) => `/api/log/activity/${u}`),
    );
    const size = (await body(`${T}/farm/log/activity/${uuids[0]}`, { headers: web })).length;
    const [t, p] = await pair(
      () => closed(T, { headers: web, mode: 'randomPath', list: pages }),
      () => closed(T, { headers: s.auth, mode: 'randomPath', list: p3 }),
    );
    add({
      id: 'U2',
      what: `a log's web page, random (${(size / 1024).toFixed(0)} KB)`,
      figure: `${fmt(t)}; P3 ${p.rps.toLocaleString('en')} req/s; ${ratio(t, p)}×`,
      target: '≥ 0.7× P3',
      met: clean(t) && clean(p) ? ratio(t, p) >= 0.7 : 'n/a',
      detail: { tilth: t, p3: p },
    });
  }

  if (runs('U3')) {
    const labels = animalLabels(db);
    const forms = await editForms(T, cookie, uuids.slice(1000, 1200));
    const problems = await checkWebEdit(T, cookie, forms[0]!, labels[0]!, s.auth);
    add({
      id: 'chk',
      what: "U3's edit form (Chromium's FormData): a save, read back through the API",
      figure: problems.length ? problems.join('; ') : '303 to the log page; the API reads the new name and asset',
      target: 'saved',
      met: problems.length === 0,
    });
    const formList = writeJson(s.work, 'u3.json', forms);
    const patchList = writeJson(
      s.work,
      'u3-p5.json',
      uuids.slice(0, 1000).map((u) => `/api/log/activity/${u}`),
    );
    const assets = labels.map((l) => ({ type: 'asset--animal', id: /\[([0-9a-f-]{36})\]$/.exec(l)![1]! }));
    const [t, p] = await pair(
      () =>
        closed(T, {
          headers: { ...web, 'Content-Type': 'application/x-www-form-urlencoded' },
          mode: 'webEdit',
          list: formList,
          assetLabels: labels,
          okStatus: 303,
          ...warm,
        }),
      () =>
        closed(T, {
          headers: { ...s.auth, 'Content-Type': JSONAPI },
          mode: 'patchLog',
          list: patchList,
          assets,
          ...warm,
        }),
    );
    add({
      id: 'U3',
      what: `a log's edit form POSTed (${(forms[0]!.body.length / 1024).toFixed(1)} KB form, answered 303)`,
      figure: `${fmt(t)}; P5 ${p.rps.toLocaleString('en')} req/s; ${ratio(t, p)}×`,
      target: '≥ 0.8× P5',
      met: problems.length === 0 && clean(t) && clean(p) ? ratio(t, p) >= 0.8 : 'n/a',
      detail: { tilth: t, p5: p },
    });
  }

  if (runs('U4')) {
    const visit = await browserJob({ kind: 'firstVisit', base: T, user: ADMIN, then: listPath });
    if (visit.kind !== 'firstVisit') throw new Error('bench/browser.ts answered another job');
    const first = transferred(visit.firstVisit);
    const then = transferred(visit.then);
    add({
      id: 'U4',
      what: 'a first visit, empty cache: /farm, the sign-in page and stylesheet, signing in, the dashboard',
      figure: `${first.wire} KB on the wire in ${first.responses} responses (bodies ${first.body} KB as sent, ${first.gzip} KB gzipped; Tilth does not compress); then U1's list: ${then.wire} KB (${then.gzip} KB gzipped)`,
      target: '≤ 60 KB',
      met: first.wire <= 60,
      detail: { firstVisit: visit.firstVisit, then: visit.then },
    });
  }

  if (runs('U5')) {
    const runsEach = QUICK ? 5 : 15;
    const timing = await browserJob({
      kind: 'timing',
      base: T,
      cookie: { name: SESSION_COOKIE, value: cookie.slice(SESSION_COOKIE.length + 1) },
      runs: runsEach,
      pages: [
        { what: 'the dashboard', paths: ['/farm'] },
        { what: "U1's list", paths: [listPath] },
        { what: 'a log', paths: uuids.slice(0, runsEach).map((u) => `/farm/log/activity/${u}`) },
      ],
    });
    if (timing.kind !== 'timing') throw new Error('bench/browser.ts answered another job');
    const kinds = timing.pages.map((p) => ({ what: p.what, ...medianTiming(p.timings) }));
    const painted = kinds.every((k) => k.fcp !== null);
    const worst = Math.max(...kinds.map((k) => (painted ? k.fcp! : k.load)));
    add({
      id: 'U5',
      what: `navigation to content in Chromium, median of ${runsEach} navigations a page kind (farm-${MAIN})`,
      figure: `${kinds.map((k) => `${k.what} ${painted ? k.fcp : k.load} ms`).join(', ')} (${painted ? 'first contentful paint' : 'load event: Chromium reported no paint'}; responses complete at ${kinds.map((k) => k.response).join(', ')} ms)`,
      target: '≤ 300 ms at farm-L',
      // Measured on any farm; the target is farm-L's, as P9's page 2,000 needs a farm that deep.
      met: MAIN === 'L' ? worst <= 300 : 'n/a',
      detail: { pages: timing.pages },
    });
  }
}

/** A process's resident set in bytes (VmRSS), or null off Linux. */
function residentBytes(pid: number): number | null {
  try {
    const kb = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
    return kb === undefined ? null : Number(kb) * 1024;
  } catch {
    return null;
  }
}

/**
 * The start row: the run's server stopped, then started again three times as production starts
 * it (`serve --migrate`) on the same data, each timed from the spawn to `/health` answering 200
 * with its migrations current; the median is the figure. The farm was migrated and its placements
 * computed at its first start, so nothing is pending. Returns the last server, left running.
 */
async function startFigure(s: Session): Promise<Running> {
  await s.tilth.stop();
  const times: number[] = [];
  let server: Running | undefined;
  let health = '';
  for (let i = 0; i < 3; i++) {
    if (server) await server.stop();
    const began = performance.now();
    server = await startTilth(s.dir, SYNC_ENV);
    times.push(Math.round(performance.now() - began));
    health = await (await fetch(`${server.url}/health`)).text();
  }
  const median = [...times].sort((a, b) => a - b)[1]!;
  const current = (JSON.parse(health) as { migrations?: string }).migrations === 'current';
  add({
    id: 'STA',
    what: `\`tilth serve\` ready (/health 200) on farm-${MAIN}, nothing pending`,
    figure: `${(median / 1000).toFixed(2)} s (median of ${times.map((t) => (t / 1000).toFixed(2)).join(', ')} s); migrations ${current ? 'current' : health}`,
    target: '≤ 2 s',
    met: current && median <= 2000,
    detail: { ms: times, health },
  });
  return server!;
}

/**
 * `--soak[=seconds]` (default 600): a mixed read/write run on the main server (one log by UUID,
 * P1's page, POSTs and PATCHes, at once, closed loop), its resident memory sampled every few
 * seconds; the mean of the first minute against the last (of the first and last fifth, for a run
 * shorter than five minutes). Flat is within ±10 %.
 */
async function soak(s: Session, uuids: string[], posts: string[], db: string): Promise<void> {
  const pid = s.tilth.child.pid!;
  const paths = writeJson(
    s.work,
    'soak-p3.json',
    uuids.map((u) => `/api/log/activity/${u}`),
  );
  const postList = writeJson(s.work, 'soak-posts.json', posts);
  const patchList = writeJson(
    s.work,
    'soak-patch.json',
    uuids.slice(1000, 1999).map((u) => `/api/log/activity/${u}`),
  );
  const sdb = new Database(db, { readonly: true });
  const assets = (
    sdb.prepare(`SELECT uuid FROM asset WHERE bundle = 'animal' LIMIT 200`).pluck().all() as string[]
  ).map((id) => ({ type: 'asset--animal', id }));
  sdb.close();
  const writeHeaders = { ...s.auth, 'Content-Type': JSONAPI };
  say(`soak: ${SOAK} s of mixed reads and writes, resident memory sampled every ${SOAK_SAMPLE} s…`);
  const samples: Array<{ at: number; rss: number }> = [];
  const began = Date.now();
  const timer = setInterval(() => {
    const rss = residentBytes(pid);
    if (rss !== null) samples.push({ at: (Date.now() - began) / 1000, rss });
  }, SOAK_SAMPLE * 1000);
  let loads: LoadResult[];
  try {
    loads = await Promise.all([
      load({ url: s.tilth.url, seconds: SOAK, connections: 3, headers: s.auth, mode: 'randomPath', list: paths }),
      load({ url: `${s.tilth.url}${p1Path()}`, seconds: SOAK, connections: 1, headers: s.auth }),
      load({
        url: `${s.tilth.url}/api/log/activity`,
        seconds: SOAK,
        connections: 2,
        method: 'POST',
        headers: writeHeaders,
        mode: 'postLog',
        list: postList,
      }),
      load({
        url: s.tilth.url,
        seconds: SOAK,
        connections: 2,
        headers: writeHeaders,
        mode: 'patchLog',
        list: patchList,
        assets,
      }),
    ]);
  } finally {
    clearInterval(timer);
  }
  const window = Math.min(60, SOAK / 5);
  const mean = (xs: Array<{ rss: number }>) => xs.reduce((n, x) => n + x.rss, 0) / Math.max(1, xs.length);
  const first = samples.filter((x) => x.at <= window);
  const last = samples.filter((x) => x.at >= SOAK - window);
  const mb = (b: number) => `${(b / 2 ** 20).toFixed(0)} MB`;
  const change = first.length && last.length ? +(mean(last) / mean(first)).toFixed(3) : NaN;
  const total = sumLoads(loads);
  add({
    id: 'MEM',
    what: `soak: ${SOAK} s of mixed reads and writes, resident memory in the first and last ${window} s`,
    figure: `${mb(mean(first))} → ${mb(mean(last))} (${change}×; min ${mb(Math.min(...samples.map((x) => x.rss)))}, max ${mb(Math.max(...samples.map((x) => x.rss)))}); ${total.requests.toLocaleString('en')} requests, ${loads.map((l) => l.rps.toLocaleString('en')).join(' / ')} req/s (reads by UUID / pages / POST / PATCH)${total.errors || total.non2xx ? `, ${total.errors} errors, ${total.non2xx} non-2xx` : ''}`,
    target: 'flat: ±10 %',
    met: first.length > 0 && last.length > 0 && clean(total) ? Math.abs(change - 1) <= 0.1 : 'n/a',
    detail: { seconds: SOAK, window, samples, loads },
  });
}

/** P1, P3 and P4 with Tilth on PostgreSQL, against the rendered baseline on `pg` with the same SQL. */
async function postgresLeg(server: string): Promise<void> {
  const name = `tilth_bench_${process.pid}`;
  const url = databaseUrl(server, name);
  say(`PostgreSQL: farm-${PG_SCALE} in ${name}…`);
  await admin(server, `CREATE DATABASE ${name}`);
  const dir = await farm(PG_SCALE);
  const running: Running[] = [];
  try {
    await (await startTilth(dir, { DATABASE_URL: url })).stop();
    await copyFarm(join(dir, 'tilth.sqlite'), url);
    const tilth = await startTilth(dir, { DATABASE_URL: url });
    running.push(tilth);
    const T = tilth.url;
    const auth = { Authorization: `Bearer ${(await passwordGrant(T)).access_token}`, Accept: JSONAPI };
    const p1 = p1Path();
    const firstAnswer = await answer(`${T}${p1}`, { headers: auth });
    const first = JSON.parse(firstAnswer.bytes.toString()) as { links: { next?: { href: string } } };
    const next = first.links.next?.href;
    const fingerprint = next
      ? (
          JSON.parse(Buffer.from(new URL(next).searchParams.get('page[cursor]')!, 'base64url').toString()) as {
            h: string;
          }
        ).h
      : '';
    const headersFile = writeJson(dir, 'pg-headers.json', recordHeaders(firstAnswer.headers));
    const rendered = await startBaseline('rendered.ts', {
      DATABASE_URL: url,
      BASE_URL: T,
      FINGERPRINT: fingerprint,
      HEADERS: headersFile,
    });
    running.push(rendered);
    const uuids = sampleLogs(join(dir, 'tilth.sqlite'), 2000);
    let same = true;
    const paths: Array<[string, string]> = [
      ['P1 first page', p1],
      ['P3 one log', `/api/log/activity/${uuids[0]}`],
    ];
    if (next) paths.push(['P1 second page', new URL(next).pathname + new URL(next).search]);
    for (const [what, path] of paths)
      same &&= await sameAnswer(what, T, { name: 'PostgreSQL: rendered', url: rendered.url }, path, auth);
    const t1 = await closed(`${T}${p1}`, { headers: auth });
    const r1 = await closed(`${rendered.url}${p1}`, { headers: auth });
    add({
      id: 'PG1',
      what: `PostgreSQL farm-${PG_SCALE}: page of 50 logs`,
      figure: `${fmt(t1)}; rendered (pg) ${r1.rps.toLocaleString('en')} req/s; ${same ? ratio(t1, r1) : 'n/a'}×`,
      target: '≥ 0.6× rendered (pg)',
      met: same ? clean(t1) && clean(r1) && ratio(t1, r1) >= 0.6 : 'n/a',
      detail: { tilth: t1, rendered: r1 },
    });
    const list = writeJson(
      dir,
      'pg-p3.json',
      uuids.map((u) => `/api/log/activity/${u}`),
    );
    const t3 = await closed(T, { headers: auth, mode: 'randomPath', list });
    const r3 = await closed(rendered.url, { headers: auth, mode: 'randomPath', list });
    add({
      id: 'PG3',
      what: `PostgreSQL farm-${PG_SCALE}: one log by UUID`,
      figure: `${fmt(t3)}; rendered (pg) ${r3.rps.toLocaleString('en')} req/s; ${same ? ratio(t3, r3) : 'n/a'}×`,
      target: '≥ 0.6× rendered (pg)',
      met: same ? clean(t3) && clean(r3) && ratio(t3, r3) >= 0.6 : 'n/a',
      detail: { tilth: t3, rendered: r3 },
    });
    const posts = writeJson(dir, 'pg-posts.json', postBodies(join(dir, 'tilth.sqlite')));
    // Against the write baseline on `pg` (baselines/write.ts), checked first as on SQLite.
    const writer = await startBaseline('write.ts', { DATABASE_URL: url, BASE_URL: T, HEADERS: headersFile });
    running.push(writer);
    const writeHeaders = { ...auth, 'Content-Type': JSONAPI };
    const sdb = new Database(join(dir, 'tilth.sqlite'), { readonly: true });
    const animal = sdb.prepare(`SELECT uuid FROM asset WHERE bundle = 'animal' LIMIT 1`).pluck().get() as string;
    sdb.close();
    const postList = JSON.parse(readFileSync(posts, 'utf8')) as string[];
    const writeSame = await sameWrites(
      'PostgreSQL',
      { file: null, url },
      T,
      writer.url,
      writeHeaders,
      postList[0]!,
      `/api/log/activity/${uuids[1999]}`,
      { type: 'asset--animal', id: animal },
    );
    const t4 = await closed(`${T}/api/log/activity`, {
      method: 'POST',
      headers: writeHeaders,
      mode: 'postLog',
      list: posts,
      ...warm,
    });
    const w4 = await closed(`${writer.url}/api/log/activity`, {
      method: 'POST',
      headers: writeHeaders,
      mode: 'postLog',
      list: posts,
      ...warm,
    });
    add({
      id: 'PG4',
      what: `PostgreSQL farm-${PG_SCALE}: POST a log`,
      figure: `${fmt(t4)}; write baseline (pg) ${w4.rps.toLocaleString('en')} req/s; ${ratio(t4, w4)}×`,
      target: '≥ 500 req/s and ≥ 0.5× write (pg)',
      met: writeSame ? clean(t4) && clean(w4) && t4.rps >= 500 && ratio(t4, w4) >= 0.5 : 'n/a',
      detail: { tilth: t4, write: w4 },
    });
    if (PROCESSES > 1) {
      for (const r of running.splice(0)) await r.stop();
      await scaleOut(dir, url, { p1, p3: list, posts });
    }
  } finally {
    for (const r of running) await r.stop();
    rmSync(dir, { recursive: true, force: true });
    await admin(server, `DROP DATABASE IF EXISTS ${name}`);
  }
}

/**
 * Issue 26's figures: P1, P3 and P4 through N Tilth processes over one PostgreSQL database,
 * against the same through one of them, in the same run (1, N alternated; the better of two in a
 * full run). The load is spread in the load generator, not by a proxy in the measured path: one
 * load process per server, each with the closed loop's connections, run at once, their rates
 * summed (sumLoads). The single-process figure uses one such load process on the first server,
 * placed as in the N-process run, so that only the number of servers differs.
 */
async function scaleOut(dir: string, url: string, lists: { p1: string; p3: string; posts: string }): Promise<void> {
  const place = placeProcesses(PROCESSES);
  say(`PostgreSQL, ${PROCESSES} processes: ${place.description}`);
  const servers: Running[] = [];
  try {
    // Every process of one database must have the same settings, the base URL among them.
    let base: string | undefined;
    for (const core of place.servers) {
      const server = await startTilth(dir, { DATABASE_URL: url, ...(base ? { TILTH_BASE_URL: base } : {}) }, core);
      base ??= server.url;
      servers.push(server);
    }
    const auth = { Authorization: `Bearer ${(await passwordGrant(servers[0]!.url)).access_token}`, Accept: JSONAPI };
    const workloads: Array<{
      id: string;
      what: string;
      spec: (server: string) => Partial<LoadSpec> & { url: string };
      target: number;
    }> = [
      { id: 'PS1', what: 'page of 50 logs', spec: (t) => ({ url: `${t}${lists.p1}`, headers: auth }), target: 1.7 },
      {
        id: 'PS3',
        what: 'one log by UUID',
        spec: (t) => ({ url: t, headers: auth, mode: 'randomPath', list: lists.p3 }),
        target: 1.7,
      },
      {
        id: 'PS4',
        what: 'POST a log',
        spec: (t) => ({
          url: `${t}/api/log/activity`,
          method: 'POST',
          headers: { ...auth, 'Content-Type': JSONAPI },
          mode: 'postLog',
          list: lists.posts,
        }),
        target: 1,
      },
    ];
    // Where the cores went during a run (after its warm-up): the machine's busy share from
    // /proc/stat, and the servers' own from /proc/<pid>/stat. A machine already busy through one
    // process has nothing to give a second.
    type Measured = LoadResult & { cores?: { busy: number; tilth: number } };
    const through =
      (n: number, spec: (server: string) => Partial<LoadSpec> & { url: string }) => async (): Promise<Measured> => {
        const cpu = cpuWindow(
          servers.map((s) => s.child.pid!),
          WARMUP,
        );
        const result: Measured = sumLoads(
          await Promise.all(
            servers
              .slice(0, n)
              .map((s) =>
                load({ seconds: SECONDS, connections: CLOSED_CONNECTIONS, ...warm, ...spec(s.url) }, place.load),
              ),
          ),
        );
        result.cores = await cpu;
        return result;
      };
    // The same concurrency through one server: as many load processes as the N-process run, all
    // aimed at the first server. Writes through two processes were slower than through one
    // (2026-11-26); this tells the number of processes apart from the number of transactions at once.
    const concurrentOnOne =
      (spec: (server: string) => Partial<LoadSpec> & { url: string }) => async (): Promise<Measured> => {
        const cpu = cpuWindow(
          servers.map((s) => s.child.pid!),
          WARMUP,
        );
        const result: Measured = sumLoads(
          await Promise.all(
            servers
              .slice(0, PROCESSES)
              .map(() =>
                load(
                  { seconds: SECONDS, connections: CLOSED_CONNECTIONS, ...warm, ...spec(servers[0]!.url) },
                  place.load,
                ),
              ),
          ),
        );
        result.cores = await cpu;
        return result;
      };
    const cores = (r: Measured) =>
      r.cores ? `; cores busy ${r.cores.busy} of ${cpus().length}, Tilth's ${r.cores.tilth}` : '';
    for (const w of workloads) {
      const [many, one] = await pair(through(PROCESSES, w.spec), through(1, w.spec));
      const r = ratio(many, one);
      add({
        id: w.id,
        what: `PostgreSQL farm-${PG_SCALE}: ${w.what} through ${PROCESSES} processes against 1 (${place.servers[0] === null ? 'NOT pinned' : 'pinned'})`,
        figure: `${fmt(many)}${cores(many)}; 1 process ${fmt(one)}${cores(one)}; ${r}×`,
        target: `≥ ${w.target}×`,
        met: clean(many) && clean(one) && r >= w.target,
        detail: { processes: PROCESSES, placement: place.description, many, one },
      });
      if (w.id !== 'PS4') continue;
      const [spread, oneServer] = await pair(through(PROCESSES, w.spec), concurrentOnOne(w.spec));
      add({
        id: 'PS4c',
        what: `PostgreSQL farm-${PG_SCALE}: POST a log, ${PROCESSES * CLOSED_CONNECTIONS} connections through ${PROCESSES} processes against the same ${PROCESSES * CLOSED_CONNECTIONS} through 1 (a control, no target)`,
        figure: `${fmt(spread)}${cores(spread)}; 1 process ${fmt(oneServer)}${cores(oneServer)}; ${ratio(spread, oneServer)}×`,
        target: '',
        met: null,
        detail: { processes: PROCESSES, placement: place.description, many: spread, one: oneServer },
      });
    }
  } finally {
    for (const s of servers) await s.stop();
  }
}

/** Jiffies: the machine's busy and total (from /proc/stat's first line), and the given processes' own. */
function jiffies(pids: number[]): { busy: number; total: number; own: number } {
  const fields = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
  const total = fields.reduce((a, b) => a + b, 0);
  const idle = fields[3]! + (fields[4] ?? 0);
  let own = 0;
  for (const pid of pids) {
    try {
      // utime and stime: fields 14 and 15, counted after the command's closing parenthesis.
      const after = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
      own += Number(after[11]) + Number(after[12]);
    } catch {
      // Not on Linux, or the process ended: its share is left out.
    }
  }
  return { busy: total - idle, total, own };
}

/**
 * The cores busy, on average, over `SECONDS` from `delay` seconds on (a run after its warm-up),
 * all of the machine's and the given processes' (in cores, e.g. 1.93 of 2); undefined off Linux.
 */
async function cpuWindow(pids: number[], delay: number): Promise<{ busy: number; tilth: number } | undefined> {
  if (!existsSync('/proc/stat')) return undefined;
  await new Promise((r) => setTimeout(r, (delay + 0.2) * 1000));
  const a = jiffies(pids);
  await new Promise((r) => setTimeout(r, Math.max(0.5, SECONDS - 0.5) * 1000));
  const b = jiffies(pids);
  const n = cpus().length;
  const share = (x: number) => +((x / Math.max(1, b.total - a.total)) * n).toFixed(2);
  // /proc/stat's total counts every core's jiffies; a process's counts its own: in cores, the same scale.
  return { busy: share(b.busy - a.busy), tilth: share(b.own - a.own) };
}

function report(): void {
  const counted = rows.filter((r) => r.id !== 'chk' && r.met !== null);
  const met = counted.filter((r) => r.met === true).length;
  const failedChecks = rows.filter((r) => r.id === 'chk' && r.met !== true);
  const when = new Date().toISOString();
  const md = [
    `Run ${when} (${QUICK ? 'quick' : 'full'}; main farm-${MAIN}, G farm-${SMALL} against farm-${BIG}; ${SECONDS} s per figure; seed ${SEED}; ${CLOSED_CONNECTIONS} connections closed loop).`,
    `Machine: ${machine.nproc} cores, ${machine.cpu}, Node ${machine.node}; ${machine.pinned ? 'server on core 0, load generator on core 1' : 'not pinned'}${PG && PROCESSES > 1 ? `; PostgreSQL through ${PROCESSES} processes ${placeProcesses(PROCESSES).description}` : ''}; load average at the end ${machine.load()}.`,
    '',
    '| id | workload | measured | target | met |',
    '|---|---|---|---|---|',
    ...rows.map(
      (r) =>
        `| ${r.id} | ${r.what} | ${r.figure.replace(/\|/g, '\\|')} | ${r.target} | ${r.met === null ? '' : r.met === 'n/a' ? 'not measured' : r.met ? 'yes' : 'no'} |`,
    ),
    '',
    `bench: ${met} of ${counted.length} targets met`,
  ].join('\n');
  const dir = join(ROOT, 'bench', 'results');
  mkdirSync(dir, { recursive: true });
  const stamp = when.replace(/[:.]/g, '-');
  writeFileSync(
    join(dir, `${stamp}.json`),
    JSON.stringify(
      {
        when,
        quick: QUICK,
        main: MAIN,
        small: SMALL,
        big: BIG,
        seconds: SECONDS,
        seed: SEED,
        processes: PROCESSES,
        machine: { ...machine, loadAtEnd: loadAverage() },
        seconds_total: Math.round((Date.now() - started) / 1000),
        rows,
      },
      null,
      2,
    ),
  );
  writeFileSync(join(dir, `${stamp}.md`), `${md}\n`);
  say('');
  say(md.split('\n').slice(0, -1).join('\n'));
  say(`results: bench/results/${stamp}.{json,md}; ${Math.round((Date.now() - started) / 1000)} s`);
  if (failedChecks.length)
    say(
      `FAILED CHECK: a baseline's answer differs from Tilth's (${failedChecks.map((r) => r.what).join('; ')}); its ratios count as not met.`,
    );
  say(`bench: ${met} of ${counted.length} targets met`);
}

try {
  await main();
} catch (error) {
  // Still a table and a last line: what was measured before the failure, and what failed.
  say(`bench: the run stopped early: ${(error as Error).stack ?? String(error)}`);
  report();
  process.exitCode = 1;
}
