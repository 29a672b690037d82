// Health and metrics (operations issue, item 4): /health needs no token and tells whether the
// process, the database and its migrations are fine; /metrics gives Prometheus text to an
// account administrator's token, or to anyone when TILTH_METRICS=public, and nothing when off.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServerAsAdmin, startTestServer, ADMIN, type TestServer } from '../support/server.ts';
import { request, passwordToken } from '../support/http.ts';
import { createUser } from '../../runtime/accounts/users.ts';

let server: TestServer;
let adminToken: string;
let viewerToken: string;

before(async () => {
  ({ server, token: adminToken } = await startTestServerAsAdmin());
  await createUser(server.ctx.db.knex, { name: 'hal', password: 'hal-password', roles: ['farm_viewer'] });
  viewerToken = await passwordToken(server.url, 'hal', 'hal-password');
});
after(() => server.close());

test('/health answers without a token, even with a stale one, and shows nothing secret', async () => {
  const res = await request(`${server.url}/health`);
  assert.equal(res.status, 200, res.text);
  assert.equal(res.body.status, 'ok');
  assert.equal(res.body.database, 'ok');
  assert.equal(res.body.migrations, 'current');
  assert.match(res.body.version, /^\d+\.\d+\.\d+/);
  assert.ok(!res.text.includes(server.config.dataDir) && !res.text.includes('postgres'), 'no paths or database URLs');
  assert.equal((await request(`${server.url}/health`, { token: 'not-a-token' })).status, 200);
});

test('/health is 503 when the database was migrated by a newer Tilth', async () => {
  const knex = server.ctx.db.knex;
  const [row] = await knex('knex_migrations')
    .insert({ name: 'core/9999_from_the_future', batch: 99, migration_time: new Date() })
    .returning('id');
  try {
    const res = await request(`${server.url}/health`);
    assert.equal(res.status, 503);
    assert.equal(res.body.status, 'failing');
    assert.equal(res.body.migrations, 'ahead');
  } finally {
    await knex('knex_migrations')
      .where('id', typeof row === 'object' ? row.id : row)
      .delete();
  }
  // Healthy again once the database matches the code (and writes are taken again from this check on).
  assert.equal((await request(`${server.url}/health`)).status, 200);
});

test('/metrics: request counts and latencies by route template, the database pool and uptime, for an administrator', async () => {
  const log = await request(`${server.url}/api/log/activity`, {
    method: 'POST',
    token: adminToken,
    json: { data: { type: 'log--activity', attributes: { name: 'Counted' } } },
  });
  for (let i = 0; i < 3; i++)
    await request(`${server.url}/api/log/activity/${log.body.data.id}`, { token: adminToken });
  assert.equal((await request(`${server.url}/metrics`)).status, 401);
  assert.equal((await request(`${server.url}/metrics`, { token: viewerToken })).status, 403);
  const res = await request(`${server.url}/metrics`, { token: adminToken, headers: { Accept: 'text/plain' } });
  assert.equal(res.status, 200, res.text);
  assert.match(res.headers.get('content-type')!, /text\/plain/);
  assert.match(res.text, /tilth_http_requests_total\{method="POST",route="\/api\/log\/activity",status="201"\} 1/);
  // The histogram of the three reads: cumulative buckets in order of their bounds, ending with
  // +Inf, which like _count is the number of requests; _sum is their time.
  const series = 'method="GET",route="/api/log/activity/{id}",status="200"';
  const value = (line: string) => Number(line.slice(line.lastIndexOf(' ') + 1));
  const buckets = res.text
    .split('\n')
    .filter((l) => l.startsWith('tilth_http_request_duration_seconds_bucket{') && l.includes(series));
  assert.deepEqual(
    buckets.map((l) => /le="([^"]+)"/.exec(l)![1]),
    ['0.002', '0.005', '0.01', '0.025', '0.05', '0.1', '0.25', '0.5', '1', '2.5', '5', '+Inf'],
  );
  assert.ok(
    buckets.every((l, i) => i === 0 || value(l) >= value(buckets[i - 1]!)),
    buckets.join('\n'),
  );
  assert.equal(value(buckets.at(-1)!), 3);
  assert.ok(res.text.includes(`tilth_http_request_duration_seconds_count{${series}} 3\n`));
  assert.ok(res.text.includes(`tilth_http_requests_total{${series}} 3\n`));
  const sum = res.text.split('\n').find((l) => l.startsWith(`tilth_http_request_duration_seconds_sum{${series}}`));
  assert.ok(sum && value(sum) > 0 && value(sum) < 30, sum);
  assert.match(res.text, /tilth_db_pool_connections\{state="used"\}/);
  assert.match(res.text, /tilth_uptime_seconds \d/);
  assert.ok(!res.text.includes(log.body.data.id), 'no raw UUIDs: one series per route, not per record');
});

test('TILTH_METRICS=public serves metrics to anyone; off turns them off', async (t) => {
  const open = await startTestServer({ env: { TILTH_METRICS: 'public' } });
  t.after(() => open.close());
  assert.equal((await request(`${open.url}/metrics`, { headers: { Accept: 'text/plain' } })).status, 200);
  const off = await startTestServer({ env: { TILTH_METRICS: 'off' } });
  t.after(() => off.close());
  const res = await request(`${off.url}/metrics`, { token: await passwordToken(off.url, ADMIN.name, ADMIN.password) });
  assert.equal(res.status, 404);
});

test('/metrics series stay bounded whatever paths clients make up (OPTIONS and bad tokens answer before any route)', async () => {
  for (let i = 0; i < 1100; i += 50) {
    await Promise.all(
      Array.from({ length: 50 }, (_, j) =>
        request(`${server.url}/api/made-up-${i + j}`, { method: i % 100 ? 'OPTIONS' : 'GET', token: 'not-a-token' }),
      ),
    );
  }
  const res = await request(`${server.url}/metrics`, { token: adminToken, headers: { Accept: 'text/plain' } });
  const routes = new Set([...res.text.matchAll(/tilth_http_requests_total\{[^}]*route="([^"]*)"/g)].map((m) => m[1]));
  assert.ok(routes.size <= 1001, `${routes.size} route labels (at most 1,000 and "other")`);
  assert.ok(routes.has('other'), 'routes past the bound are counted as "other"');
  assert.match(
    res.text,
    /tilth_http_requests_total\{method="GET",route="\/api\/log\/activity\/\{id\}",status="200"\}/,
    'routes seen before stay',
  );
});
