// The subrequest memory attack (trust issue, item 3): a viewer's /subrequests calls over many logs
// with 1 MB notes, several at once. Each call held every sub-response whole before it counted it,
// an export inside a call had no bound at all (one call on 150 logs: 150 MB → 804 MB of RSS; four
// at once: 2.55 GB), and any number of calls ran at once. Now an export is a 400 before anything
// is sent, a sub-response is read as a stream and cut off where the call's byte budget ends, and
// at most TILTH_SUBREQUEST_MAX_CALLS calls run at once (the next a 503). The server runs in its
// own process; its resident memory is sampled while the calls run.
import { rssMb } from '../support/processes.ts';
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createTestDatabase, ADMIN } from '../support/server.ts';
import { startChildServer, type ChildServer } from '../support/child-server.ts';
import { request, passwordToken, JSONAPI } from '../support/http.ts';
import { configIdentifier } from '../../runtime/model/config-entities.ts';
import { FULL, report } from './scale.ts';

const LOGS = FULL ? 150 : 40;
const NOTE = 'n'.repeat(1024 * 1024);
/** Calls sent at once: more than the server runs at once (TILTH_SUBREQUEST_MAX_CALLS, 4). */
const PARALLEL = 8;
const ROUNDS = FULL ? 5 : 2;
/**
 * The bytes one call may hold (TILTH_SUBREQUEST_MAX_BYTES; a log is about 2 MB as served, notes'
 * value and processed). Smaller than the default 64 MiB: what the calls hold together is up to
 * TILTH_SUBREQUEST_MAX_CALLS times this, which with the default is more than the bound below.
 */
const BUDGET = 16 * 1024 * 1024;
const BOUND_MB = 150;
/**
 * A small heap, as in export.test.ts: RSS alone depends on when the collector last ran, so the
 * cap is the proof that what the calls hold is bounded (a server holding more dies or crawls).
 * Four calls at once may each hold their 16 MB and, at the worst moment, a page being built by its
 * handler and the same page being read (about 6.3 MB each, as text and as objects): near 128 MB
 * beside the server's own heap, which killed it about one run in five on a loaded machine. 192 MB
 * leaves that room; unbounded holding (the 2.55 GB of four export calls before) still dies.
 */
const HEAP_MB = 192;
/** Logs a page: each sub-response is about 6.3 MB, built whole by the JSON:API handler it is sent to. */
const PAGE = 3;

let database: Awaited<ReturnType<typeof createTestDatabase>>;
let server: ChildServer;
let adminToken: string;
let viewer: string;

before(async () => {
  database = await createTestDatabase({ migrated: true });
  server = await startChildServer(database.env, {
    TILTH_SUBREQUEST_MAX_BYTES: String(BUDGET),
    NODE_OPTIONS: `--max-old-space-size=${HEAP_MB}`,
  });
  adminToken = await passwordToken(server.url, ADMIN.name, ADMIN.password);
});
after(async () => {
  await server?.stop();
  await database?.drop();
});

/** The server process's resident memory in MB. */
const serverRss = () => rssMb(server.process.pid);

function assertAlive(what: string): void {
  assert.ok(
    server.process.exitCode === null && server.process.signalCode === null && !Number.isNaN(serverRss()),
    `${what}: the server died (out of its ${HEAP_MB} MB heap?); the end of its output:\n${server.output().slice(-3000)}`,
  );
}

const call = (blueprint: unknown) =>
  request(`${server.url}/subrequests?_format=json`, {
    method: 'POST',
    token: viewer,
    body: JSON.stringify(blueprint),
    headers: { 'Content-Type': JSONAPI },
  });

/** PARALLEL calls of `blueprint` at once, ROUNDS times, with the server's RSS sampled throughout. */
async function attack(blueprint: unknown): Promise<{ peak: number; statuses: Record<number, number> }> {
  let peak = serverRss();
  const sampler = setInterval(() => {
    const now = serverRss();
    if (!Number.isNaN(now)) peak = Math.max(peak, now);
  }, 20);
  const statuses: Record<number, number> = {};
  try {
    for (let round = 0; round < ROUNDS; round++) {
      const answers = await Promise.all(
        Array.from({ length: PARALLEL }, () => call(blueprint).catch(() => ({ status: 0, headers: new Headers() }))),
      );
      for (const a of answers) {
        statuses[a.status] = (statuses[a.status] ?? 0) + 1;
        if (a.status === 503) assert.equal(a.headers.get('retry-after'), '1', 'a 503 says when to retry');
      }
    }
  } finally {
    clearInterval(sampler);
  }
  return { peak, statuses };
}

test(`a viewer's subrequest calls over ${LOGS} logs with 1 MB notes, ${PARALLEL} at once, leave RSS within ${BOUND_MB} MB of idle`, async (t) => {
  for (let i = 0; i < LOGS; i++) {
    const res = await request(`${server.url}/api/log/activity`, {
      method: 'POST',
      token: adminToken,
      json: { data: { type: 'log--activity', attributes: { name: `Big ${i}`, notes: { value: NOTE } } } },
    });
    assert.equal(res.status, 201, res.text.slice(0, 200));
  }
  const made = await request(`${server.url}/api/user/user`, {
    method: 'POST',
    token: adminToken,
    json: {
      data: {
        type: 'user--user',
        attributes: { name: 'vera', mail: 'vera@example.com', status: true, pass: { value: 'vera-password' } },
        relationships: { roles: { data: [configIdentifier('user_role', 'farm_viewer')] } },
      },
    },
  });
  assert.equal(made.status, 201, made.text.slice(0, 300));
  viewer = await passwordToken(server.url, 'vera', 'vera-password');

  const pages = Array.from({ length: Math.ceil(LOGS / PAGE) }, (_, k) => ({
    requestId: `page${k}`,
    action: 'view',
    uri: `/api/log/activity?page[limit]=${PAGE}&page[offset]=${k * PAGE}`,
  }));
  const attacks: Array<[string, unknown, number]> = [
    // The whole collection as one export: refused before anything is sent.
    ['export', [{ requestId: 'all', action: 'view', uri: '/api/log/activity?_format=csv' }], 400],
    // Pages of 3 logs (about 6.3 MB each) until every log is read: past the budget in the third page.
    ['pages', pages, 413],
    // One view per log, fanned out from a list of ids.
    [
      'fan-out',
      [
        { requestId: 'list', action: 'view', uri: '/api/log/activity?page[limit]=50&fields[log--activity]=name' },
        { requestId: 'each', action: 'view', uri: '/api/log/activity/{{list.body@$.data[*].id}}', waitFor: ['list'] },
      ],
      413,
    ],
    // Just under the budget (two pages, 12.6 MB): answered, so the answer itself is written too.
    ['under the budget', pages.slice(0, 2), 200],
  ];

  // Warm up (allocators, prepared statements) with one call of each, alone, before measuring.
  for (const [, blueprint] of attacks) await call(blueprint);
  await new Promise((resolve) => setTimeout(resolve, 1000));
  const idle = serverRss();
  const figures: Record<string, unknown> = {
    logs: LOGS,
    noteMb: 1,
    parallel: PARALLEL,
    rounds: ROUNDS,
    budgetMb: BUDGET / 1024 / 1024,
    idleMb: Math.round(idle),
  };
  let worst = 0;
  for (const [name, blueprint, expected] of attacks) {
    const { peak, statuses } = await attack(blueprint);
    assertAlive(name);
    const growth = Math.round(peak - idle);
    worst = Math.max(worst, growth);
    figures[`${name.replace(/\W+(\w)/g, (_, c: string) => c.toUpperCase())}PeakGrowthMb`] = growth;
    t.diagnostic(`${name}: ${JSON.stringify(statuses)}, RSS ${Math.round(idle)} → ${Math.round(peak)} MB`);
    assert.ok((statuses[expected] ?? 0) > 0, `${name}: some calls answered ${expected}: ${JSON.stringify(statuses)}`);
    for (const status of Object.keys(statuses).map(Number))
      assert.ok(status === expected || status === 503, `${name}: ${status} in ${JSON.stringify(statuses)}`);
  }
  figures.worstPeakGrowthMb = worst;
  report('subrequest memory attack', figures);
  for (const [name] of attacks) {
    const key = `${name.replace(/\W+(\w)/g, (_, c: string) => c.toUpperCase())}PeakGrowthMb`;
    assert.ok(
      (figures[key] as number) < BOUND_MB,
      `${name}: RSS grew by ${figures[key]} MB over idle (${Math.round(idle)} MB)`,
    );
  }
  // The server is fine afterwards.
  assert.equal((await request(`${server.url}/api/log/activity?page[limit]=1`, { token: viewer })).status, 200);
});
