/**
 * `npm run bench`: Tilth against a bare node:http + better-sqlite3 server returning the same bytes,
 * on one SQLite farm seeded with BENCH_LOGS logs (default 100,000; the design target is 1,000,000).
 * Reports requests per second and the ratios the design sets as goals:
 *   - a 50-log page at ≥ 0.6× the bare baseline,
 *   - a deep page reached through links.next as cheap as the first page,
 *   - writes ≥ 1,000/s.
 * Results go to bench/results/<timestamp>.json (git-ignored). Loopback only; bounded in time.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer } from 'node:http';
import { randomUUID } from 'node:crypto';
import autocannon from 'autocannon';
import Database from 'better-sqlite3';
import { loadConfig } from '../runtime/config.ts';
import { startServer } from '../runtime/server.ts';
import { createLogger } from '../runtime/http/logging.ts';

const LOGS = Number(process.env.BENCH_LOGS ?? 100_000);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const PASSWORD = 'bench-password';

async function cannon(url: string, opts: Partial<autocannon.Options> = {}): Promise<{ rps: number; p99: number; errors: number }> {
  const result = await autocannon({ url, connections: 8, duration: SECONDS, ...opts });
  return { rps: Math.round(result.requests.average), p99: result.latency.p99, errors: result.errors + result.non2xx };
}

async function main(): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), 'tilth-bench-'));
  const config = loadConfig({ PORT: '0', HOST: '127.0.0.1', TILTH_DATA_DIR: dataDir, TILTH_ADMIN_PASSWORD: PASSWORD, TILTH_LOG_LEVEL: 'silent', TILTH_RATE_LIMIT_PER_ADDRESS: '1000000', TILTH_RATE_LIMIT_PER_USERNAME: '1000000' });
  const server = await startServer({ config: { ...config }, migrate: true, logger: createLogger('silent') });
  const base = server.ctx.internalUrl;
  try {
    // Seed directly, in one transaction: this measures reads, not the seeding.
    process.stdout.write(`Seeding ${LOGS} activity logs…\n`);
    const knex = server.ctx.db.knex;
    const now = Math.floor(Date.now() / 1000);
    await knex.transaction(async (trx) => {
      const rows = [];
      for (let i = 0; i < LOGS; i++) {
        rows.push({ uuid: randomUUID(), bundle: 'activity', name: `Activity ${i}`, timestamp: now - i * 60, status: i % 3 ? 'done' : 'pending', is_movement: false, is_group_assignment: false, created: now, changed: now, revision_created: now, revision_log_message: '' });
        if (rows.length === 500) await trx('log').insert(rows.splice(0));
      }
      if (rows.length) await trx('log').insert(rows);
    });
    const tokenRes = await fetch(`${base}/oauth/token`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'password', username: 'admin', password: PASSWORD, client_id: 'farm' }),
    });
    const { access_token: token } = (await tokenRes.json()) as { access_token: string };
    const headers = { Authorization: `Bearer ${token}`, Accept: 'application/vnd.api+json' };

    const firstPath = '/api/log/activity?sort=-timestamp';
    const first = await (await fetch(`${base}${firstPath}`, { headers })).text();
    // Walk links.next to a deep page (page 200, or the last one), keeping its cursor.
    let next = (JSON.parse(first) as { links: { next?: { href: string } } }).links.next?.href;
    let deepPath = firstPath;
    for (let i = 0; i < Math.min(200, Math.floor(LOGS / 50) - 1) && next; i++) {
      const url = new URL(next);
      deepPath = url.pathname + url.search;
      next = ((await (await fetch(`${base}${deepPath}`, { headers })).json()) as { links: { next?: { href: string } } }).links.next?.href;
    }
    const offset = new URL(`${base}${deepPath}`).searchParams.get('page[offset]');
    const offsetPath = `${firstPath}&page[offset]=${offset}&page[limit]=50`;

    // The baseline: the same query through better-sqlite3 on node:http, answering the same bytes.
    const sqlite = new Database(join(dataDir, 'tilth.sqlite'), { readonly: true });
    const stmt = sqlite.prepare("SELECT id, uuid, name, timestamp, status FROM log WHERE bundle = 'activity' ORDER BY timestamp DESC, id DESC LIMIT 51");
    const bare = createServer((_req, res) => {
      stmt.all();
      res.writeHead(200, { 'Content-Type': 'application/vnd.api+json' });
      res.end(first);
    });
    await new Promise<void>((r) => bare.listen(0, '127.0.0.1', () => r()));
    const bareUrl = `http://127.0.0.1:${(bare.address() as { port: number }).port}/`;

    const results: Record<string, unknown> = { logs: LOGS, seconds: SECONDS, node: process.version };
    results.baseline = await cannon(bareUrl);
    results.firstPage = await cannon(`${base}${firstPath}`, { headers });
    results.deepPageByCursor = await cannon(`${base}${deepPath}`, { headers });
    results.deepPageByOffset = await cannon(`${base}${offsetPath}`, { headers });
    results.writes = await cannon(`${base}/api/log/activity`, {
      method: 'POST',
      headers: { ...headers, 'Content-Type': 'application/vnd.api+json' },
      body: JSON.stringify({ data: { type: 'log--activity', attributes: { name: 'Bench write', status: 'done' } } }),
      duration: Math.max(2, Math.floor(SECONDS / 2)),
    });
    const r = results as Record<string, { rps: number }>;
    results.ratios = {
      firstPageVsBaseline: +(r.firstPage!.rps / r.baseline!.rps).toFixed(3),
      deepCursorVsFirst: +(r.deepPageByCursor!.rps / r.firstPage!.rps).toFixed(3),
      deepOffsetVsFirst: +(r.deepPageByOffset!.rps / r.firstPage!.rps).toFixed(3),
    };
    results.goals = {
      'page ≥ 0.6× baseline': (results.ratios as Record<string, number>).firstPageVsBaseline >= 0.6,
      'deep page ≈ first page (≥ 0.8×)': (results.ratios as Record<string, number>).deepCursorVsFirst >= 0.8,
      'writes ≥ 1000/s': r.writes!.rps >= 1000,
    };
    bare.close();
    sqlite.close();
    process.stdout.write(`${JSON.stringify(results, null, 2)}\n`);
    mkdirSync(join(import.meta.dirname, 'results'), { recursive: true });
    writeFileSync(join(import.meta.dirname, 'results', `${new Date().toISOString().replace(/[:.]/g, '-')}.json`), JSON.stringify(results, null, 2));
  } finally {
    await server.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

await main();
