// A viewer crashes the server through the change feed (issue 41 D.1): `include=records` with
// `page[limit]=500` loaded and rendered the whole page before the response budget was counted. On
// PostgreSQL 300 logs with 3.8 MB notes (a worker can write them) and 4 viewer requests at once ran
// the heap out and the server died; on SQLite each request blocked the server for seconds. Now the
// feed loads a few records at a time, counts their bytes as it renders them and ends the page where
// the budget ends (`links.next` continues after the last record sent), and a page with records
// holds at most 50. Here, scaled down: a worker's logs with 512 KB notes, a server with a small heap
// and a small budget, viewers following the feed from the start, several at once.
import { rssMb } from '../support/processes.ts';
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createTestDatabase, ADMIN } from '../support/server.ts';
import { startChildServer, type ChildServer } from '../support/child-server.ts';
import { request, passwordToken } from '../support/http.ts';
import { configIdentifier } from '../../runtime/model/config-entities.ts';
import { FULL, report } from './scale.ts';

const LOGS = FULL ? 300 : 100;
/** A log's notes; served about twice (value and processed). */
const NOTE = 'n'.repeat(512 * 1024);
/** Viewers following the feed at once. */
const PARALLEL = 4;
/** TILTH_RESPONSE_MAX_BYTES: about four logs a page. */
const BUDGET = 4 * 1024 * 1024;
/**
 * A small heap, as in subrequest-memory-attack.test.ts: the cap is the proof that what the answers
 * hold is bounded by the budget, not by page[limit] times a record's size (the whole feed is about
 * 200 MB as served; before, each request held it several times over and the server died).
 */
const HEAP_MB = 64;
const BOUND_MB = 150;

let database: Awaited<ReturnType<typeof createTestDatabase>>;
let server: ChildServer;
let adminToken: string;

before(async () => {
  database = await createTestDatabase({ migrated: true });
  server = await startChildServer(database.env, {
    TILTH_RESPONSE_MAX_BYTES: String(BUDGET),
    NODE_OPTIONS: `--max-old-space-size=${HEAP_MB}`,
  });
  adminToken = await passwordToken(server.url, ADMIN.name, ADMIN.password);
});
after(async () => {
  await server?.stop();
  await database?.drop();
});

const serverRss = () => rssMb(server.process.pid);

function assertAlive(what: string): void {
  assert.ok(
    server.process.exitCode === null && server.process.signalCode === null && !Number.isNaN(serverRss()),
    `${what}: the server died (out of its ${HEAP_MB} MB heap?)`,
  );
}

/** A user with one role, and a token for it. */
async function userWithRole(name: string, role: string): Promise<string> {
  const made = await request(`${server.url}/api/user/user`, {
    method: 'POST',
    token: adminToken,
    json: {
      data: {
        type: 'user--user',
        attributes: { name, mail: `${name}@example.com`, status: true, pass: { value: `${name}-password` } },
        relationships: { roles: { data: [configIdentifier('user_role', role)] } },
      },
    },
  });
  assert.equal(made.status, 201, made.text.slice(0, 300));
  return passwordToken(server.url, name, `${name}-password`);
}

/** One viewer's sync from the start: every page, following links.next; the statuses and entries seen. */
async function sync(
  token: string,
): Promise<{ statuses: number[]; entries: string[]; included: string[]; pages: number; largest: number }> {
  const out = { statuses: [] as number[], entries: [] as string[], included: [] as string[], pages: 0, largest: 0 };
  let next: string | undefined =
    `${server.url}/api/changes?since=0&filter[type]=log--activity&include=records&page[limit]=500`;
  while (next) {
    const res: { status: number; text: string; body: any } = await request(next, { token }).catch(() => ({
      status: 0,
      text: '',
      body: undefined,
    }));
    out.statuses.push(res.status);
    if (res.status !== 200) return out;
    out.pages++;
    out.largest = Math.max(out.largest, Buffer.byteLength(res.text));
    out.entries.push(...res.body.data.map((e: any) => e.id));
    out.included.push(...res.body.included.map((r: any) => r.id));
    assert.ok(res.body.data.length <= 50, `a page with records holds at most 50: ${res.body.data.length}`);
    next = res.body.links.next?.href;
  }
  return out;
}

test(`${PARALLEL} viewers sync ${LOGS} logs with 512 KB notes at once with include=records&page[limit]=500: the server stays up, pages end at the budget, every log once`, async () => {
  const worker = await userWithRole('wanda', 'farm_worker');
  const viewer = await userWithRole('vera', 'farm_viewer');
  const made = new Set<string>();
  // Written 8 at a time: the writes are not what is tested, and so they take a third of the time.
  for (let i = 0; i < LOGS; i += 8) {
    const written = await Promise.all(
      Array.from({ length: Math.min(8, LOGS - i) }, (_, k) =>
        request(`${server.url}/api/log/activity`, {
          method: 'POST',
          token: worker,
          json: { data: { type: 'log--activity', attributes: { name: `Big ${i + k}`, notes: { value: NOTE } } } },
        }),
      ),
    );
    for (const res of written) {
      assert.equal(res.status, 201, res.text.slice(0, 200));
      made.add(res.body.data.id);
    }
  }
  await new Promise((resolve) => setTimeout(resolve, 500));
  const idle = serverRss();
  let peak = idle;
  const sampler = setInterval(() => {
    const now = serverRss();
    if (!Number.isNaN(now)) peak = Math.max(peak, now);
  }, 20);
  const started = Date.now();
  let syncs;
  try {
    syncs = await Promise.all(Array.from({ length: PARALLEL }, () => sync(viewer)));
  } finally {
    clearInterval(sampler);
  }
  const seconds = (Date.now() - started) / 1000;
  assertAlive('after the syncs');
  const growth = Math.round(peak - idle);
  report('change feed memory', {
    logs: LOGS,
    noteKb: 512,
    parallel: PARALLEL,
    budgetMb: BUDGET / 1024 / 1024,
    heapMb: HEAP_MB,
    pages: syncs.map((s) => s.pages),
    largestPageBytes: Math.max(...syncs.map((s) => s.largest)),
    idleMb: Math.round(idle),
    peakGrowthMb: growth,
    seconds,
  });
  for (const s of syncs) {
    assert.deepEqual(
      s.statuses.filter((status) => status !== 200),
      [],
      'every page is answered 200',
    );
    assert.equal(s.entries.length, made.size, 'each log listed once');
    assert.deepEqual(new Set(s.entries), made, 'every log the worker wrote, no other');
    assert.deepEqual(s.included, s.entries, 'each listed log included, in the order listed');
    assert.ok(s.pages > 1, 'the budget cut the pages short');
    assert.ok(s.largest <= BUDGET, `no page over the budget: ${s.largest}`);
  }
  assert.ok(growth < BOUND_MB, `RSS grew by ${growth} MB over idle (${Math.round(idle)} MB)`);
  // The server answers afterwards.
  assert.equal((await request(`${server.url}/api/log/activity?page[limit]=1`, { token: viewer })).status, 200);
});
