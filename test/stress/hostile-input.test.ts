// Hostile input against a server in its own process (trust issue, part B 3): random malformed
// bodies and query strings (fast-check) never produce a 5xx or a slow answer, and every error is
// a JSON:API error document; SQL-injection payloads in every filter, sort, include and fields
// position give a 400 or no results, show no database text, and change nothing; clients that
// trickle their headers or bodies do not hold up anyone else.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import fc from 'fast-check';
import { createTestDatabase } from '../support/server.ts';
import { startChildServerAsAdmin, type ChildServer } from '../support/child-server.ts';
import { request, JSONAPI, type ApiResponse } from '../support/http.ts';
import { junkBody, junkQuery } from '../support/hostile.ts';
import { FULL, report } from './scale.ts';

const RUNS = FULL ? 100_000 : 1_000;
const INJECTIONS = FULL ? 500 : 100;
const SLOW_CLIENTS = FULL ? 200 : 50;
/** No answer may take longer than this, whatever the input. */
const SLOWEST_MS = 1000;
const PARALLEL = 8;

let database: Awaited<ReturnType<typeof createTestDatabase>>;
let server: ChildServer;
let token: string;
let activity: { id: string };
let tractor: { id: string };

before(async () => {
  ({ database, server, token } = await startChildServerAsAdmin());
  tractor = (
    await request(`${server.url}/api/asset/equipment`, {
      method: 'POST',
      token,
      json: { data: { type: 'asset--equipment', attributes: { name: 'Tractor' } } },
    })
  ).body.data;
  activity = (
    await request(`${server.url}/api/log/activity`, {
      method: 'POST',
      token,
      json: {
        data: {
          type: 'log--activity',
          attributes: { name: 'Mowing', status: 'done' },
          relationships: { asset: { data: [{ type: 'asset--equipment', id: tractor.id }] } },
        },
      },
    })
  ).body.data;
});
after(async () => {
  await server?.stop();
  await database?.drop();
});

/** Run `send` over every input, PARALLEL at a time; returns the slowest answer in ms. */
async function drive<T>(inputs: T[], send: (input: T) => Promise<void>): Promise<number> {
  let slowest = 0;
  let next = 0;
  await Promise.all(
    Array.from({ length: PARALLEL }, async () => {
      while (next < inputs.length) {
        const input = inputs[next++]!;
        const started = performance.now();
        await send(input);
        slowest = Math.max(slowest, performance.now() - started);
      }
    }),
  );
  return Math.round(slowest);
}

function assertErrorDocument(res: ApiResponse, what: string): void {
  assert.ok(res.status < 500, `${what} → ${res.status} ${res.text.slice(0, 300)}`);
  if (res.status < 400) return;
  const errors = res.body?.errors;
  assert.ok(Array.isArray(errors) && errors.length > 0, `${what}: an error document, not ${res.text.slice(0, 200)}`);
  for (const e of errors) {
    assert.equal(e.status, String(res.status), `${what}: error status`);
    assert.equal(typeof e.title, 'string', `${what}: error title`);
  }
}

test(`${RUNS} random malformed bodies: no 5xx, none slower than ${SLOWEST_MS} ms, every error a JSON:API error document`, async () => {
  const bodies = fc.sample(junkBody([tractor.id, activity.id]), { numRuns: RUNS, seed: 4242 });
  const targets = [
    ['POST', '/api/log/activity'],
    ['PATCH', `/api/log/activity/${activity.id}`],
    ['POST', '/api/asset/equipment'],
    ['PATCH', `/api/log/activity/${activity.id}/relationships/asset`],
    ['POST', '/subrequests?_format=json'],
  ] as const;
  let i = 0;
  const slowest = await drive(bodies, async (body) => {
    const [method, path] = targets[i++ % targets.length]!;
    const res = await request(`${server.url}${path}`, {
      method,
      token,
      body,
      headers: { 'Content-Type': path.startsWith('/subrequests') ? 'application/json' : JSONAPI },
    });
    assertErrorDocument(res, `${method} ${path} ${body.slice(0, 200)}`);
  });
  report('malformed bodies', { inputs: RUNS, slowestMs: slowest, serverErrors: 0 });
  assert.ok(slowest < SLOWEST_MS, `the slowest answer took ${slowest} ms`);
});

test(`${RUNS} random malformed query strings: no 5xx, none slower than ${SLOWEST_MS} ms, every error a JSON:API error document`, async () => {
  const queries = fc.sample(junkQuery, { numRuns: RUNS, seed: 2424 });
  const paths = [
    '/api/log/activity',
    `/api/log/activity/${activity.id}`,
    '/api/asset/equipment',
    '/api/user/user',
    `/api/log/activity/${activity.id}/asset`,
  ];
  let i = 0;
  const slowest = await drive(queries, async (query) => {
    const path = paths[i++ % paths.length]!;
    const res = await request(`${server.url}${path}?${query}`, { token });
    assertErrorDocument(res, `GET ${path}?${query}`);
  });
  report('malformed queries', { inputs: RUNS, slowestMs: slowest, serverErrors: 0 });
  assert.ok(slowest < SLOWEST_MS, `the slowest answer took ${slowest} ms`);
});

/** SQL-injection payloads: classic forms, each in several dialect-specific spellings. */
function injectionPayloads(count: number): string[] {
  const cores = [
    "' OR '1'='1",
    "' OR 1=1 --",
    '" OR "1"="1',
    "') OR ('1'='1",
    '1; DROP TABLE logs; --',
    "'; DELETE FROM users; --",
    "' UNION SELECT name, pass FROM users --",
    '1 UNION SELECT sqlite_version()',
    "' AND 1=(SELECT COUNT(*) FROM sqlite_master) --",
    "'; SELECT pg_sleep(5); --",
    '1) OR SLEEP(5)#',
    "' || (SELECT pass FROM users LIMIT 1) || '",
    'name; --',
    'name) --',
    'name DESC; DROP TABLE logs',
    "asset.name'--",
    '*',
    '%',
    '_',
    "\\'",
    '\u0000',
    "'||'",
    'id/**/OR/**/1=1',
    "'; UPDATE users SET status=0; --",
    'CAST(1 AS INT)',
  ];
  const wrap = [
    (s: string) => s,
    (s: string) => s.toUpperCase(),
    (s: string) => `x${s}`,
    (s: string) => `${s}x`,
    (s: string) => s.replace(/ /g, '/**/'),
    (s: string) => `1${s}`,
    (s: string) => `"${s}"`,
    (s: string) => s.replace(/'/g, "''"),
    (s: string) => `%${s}%`,
    (s: string) => `(${s})`,
  ];
  const out: string[] = [];
  for (let w = 0; out.length < count; w++)
    for (const core of cores)
      if (out.length < count) out.push(wrap[w % wrap.length]!(core) + (w >= wrap.length ? ` ${w}` : ''));
  return out;
}

const DATABASE_TEXT =
  /sqlite|syntax error|SQLSTATE|pg_catalog|relation "|knex|select .* from|near "|unterminated quoted|column .* does not exist/i;

test(`${INJECTIONS} SQL-injection payloads in every filter, sort, include and fields position: 400 or nothing found, no database text, nothing changed`, async () => {
  const snapshot = async () => {
    const texts: string[] = [];
    for (const path of ['/api/log/activity', '/api/asset/equipment', '/api/user/user'])
      texts.push(JSON.stringify((await request(`${server.url}${path}?sort=name`, { token })).body.data));
    return texts.join('\n');
  };
  const before = await snapshot();
  const positions: Array<(p: string) => string> = [
    (p) => `filter[name]=${encodeURIComponent(p)}`,
    (p) => `filter[asset.name]=${encodeURIComponent(p)}`,
    (p) =>
      `filter[a][condition][path]=name&filter[a][condition][operator]=CONTAINS&filter[a][condition][value]=${encodeURIComponent(p)}`,
    (p) =>
      `filter[a][condition][path]=name&filter[a][condition][operator]=IN&filter[a][condition][value][]=${encodeURIComponent(p)}`,
    (p) =>
      `filter[a][condition][path]=name&filter[a][condition][operator]=${encodeURIComponent(p)}&filter[a][condition][value]=x`,
    (p) => `filter[${encodeURIComponent(p)}]=x`,
    (p) => `filter[a][condition][path]=${encodeURIComponent(p)}&filter[a][condition][value]=x`,
    (p) => `filter[a][group][conjunction]=${encodeURIComponent(p)}`,
    (p) => `sort=${encodeURIComponent(p)}`,
    (p) => `include=${encodeURIComponent(p)}`,
    (p) => `fields[log--activity]=${encodeURIComponent(p)}`,
    (p) => `page[limit]=${encodeURIComponent(p)}`,
    (p) => `page[offset]=${encodeURIComponent(p)}`,
  ];
  const requests = injectionPayloads(INJECTIONS).flatMap((payload) =>
    positions.map((position) => ({ payload, query: position(payload) })),
  );
  let found = 0;
  const slowest = await drive(requests, async ({ payload, query }) => {
    const res = await request(`${server.url}/api/log/activity?${query}`, { token });
    assertErrorDocument(res, `GET ?${query}`);
    // Errors may quote the payload back and links repeat the query (an error's `links.via` is the
    // request's URL, as farmOS's); anything else resembling SQL came from the database.
    const errors = (res.body?.errors as Array<Record<string, unknown>> | undefined)?.map(
      ({ links: _via, ...error }) => error,
    );
    const answer = JSON.stringify({ errors, data: res.body?.data })
      .split(JSON.stringify(payload).slice(1, -1))
      .join('');
    assert.ok(!DATABASE_TEXT.test(answer), `no database text for ?${query}: ${res.text.slice(0, 300)}`);
    if (res.status === 200 && /^filter\[(name|asset\.name|a\]\[condition\]\[path\]=name)/.test(query)) {
      // Only a payload that really is the record's name may find it.
      for (const r of res.body.data)
        assert.ok(
          payload.includes(r.attributes.name) || query.includes('CONTAINS'),
          `?${query} found ${r.attributes.name}`,
        );
      found += res.body.data.length;
    }
  });
  assert.equal(await snapshot(), before, 'the data is unchanged');
  report('sql injection', { payloads: INJECTIONS, requests: requests.length, slowestMs: slowest, recordsFound: found });
});

test(`${SLOW_CLIENTS} clients trickling headers and bodies do not hold up the others`, async () => {
  const sockets: Socket[] = [];
  const timers: NodeJS.Timeout[] = [];
  const { port } = new URL(server.url);
  try {
    for (let i = 0; i < SLOW_CLIENTS; i++) {
      const socket = connect(Number(port), '127.0.0.1');
      socket.on('error', () => {});
      sockets.push(socket);
      const body = JSON.stringify({ data: { type: 'log--activity', attributes: { name: `slow ${i}` } } });
      // Half send their headers a few bytes at a time, half send a body that never completes.
      const text =
        i % 2
          ? `GET /api/log/activity HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nX-Slow: ${'a'.repeat(200)}\r\n\r\n`
          : `POST /api/log/activity HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nContent-Type: ${JSONAPI}\r\nContent-Length: ${body.length + 100_000}\r\n\r\n${body}`;
      let at = 0;
      timers.push(
        setInterval(() => {
          if (at < text.length && !socket.destroyed) socket.write(text.slice(at, (at += 3)));
        }, 200),
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 500));
    const latencies: number[] = [];
    for (let i = 0; i < 100; i++) {
      const started = performance.now();
      const res = await request(`${server.url}/api/log/activity?page[limit]=10`, { token });
      latencies.push(performance.now() - started);
      assert.equal(res.status, 200);
      if (i % 10 === 0) {
        const created = await request(`${server.url}/api/log/activity`, {
          method: 'POST',
          token,
          json: { data: { type: 'log--activity', attributes: { name: `fast ${i}` } } },
        });
        assert.equal(created.status, 201, created.text);
      }
    }
    latencies.sort((a, b) => a - b);
    const p99 = Math.round(latencies[98]!);
    report('slow clients', { slowClients: SLOW_CLIENTS, othersP50Ms: Math.round(latencies[49]!), othersP99Ms: p99 });
    assert.ok(p99 < SLOWEST_MS, `other clients' p99 was ${p99} ms`);
  } finally {
    for (const t of timers) clearInterval(t);
    for (const s of sockets) s.destroy();
  }
});
