// Memory budgets (trust issue, part A 7): one response, and one subrequests call as a whole, have a
// byte budget and a cap on copies; above them the answer is a clear 413, never a 500, and the
// server's memory stays flat however often it is asked.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, ADMIN, type TestServer } from '../support/server.ts';
import { request, passwordToken, JSONAPI } from '../support/http.ts';
import { createUser } from '../../runtime/accounts/users.ts';

let server: TestServer;
let viewer: string;
const NOTE = 'n'.repeat(10_000); // about 20 kB a log as served (value and processed)

before(async () => {
  server = await startTestServer({
    env: {
      TILTH_RESPONSE_MAX_BYTES: '300000',
      TILTH_SUBREQUEST_MAX_BYTES: '1000000',
      TILTH_SUBREQUEST_MAX_REQUESTS: '20',
      TILTH_SUBREQUEST_MAX_CALLS: '2',
    },
  });
  const admin = await passwordToken(server.url, ADMIN.name, ADMIN.password);
  for (let i = 0; i < 30; i++) {
    const res = await request(`${server.url}/api/log/activity`, {
      method: 'POST',
      token: admin,
      json: { data: { type: 'log--activity', attributes: { name: `Big ${i}`, notes: { value: NOTE } } } },
    });
    assert.equal(res.status, 201);
  }
  await createUser(server.ctx.db.knex, { name: 'val', password: 'val-password', roles: ['farm_viewer'] });
  viewer = await passwordToken(server.url, 'val', 'val-password');
});
after(() => server.close());

const batch = (blueprint: unknown) =>
  request(`${server.url}/subrequests?_format=json`, {
    method: 'POST',
    token: viewer,
    body: JSON.stringify(blueprint),
    headers: { 'Content-Type': JSONAPI },
  });

test('a page whose records are too large for one response is a 413 saying how to ask for less', async () => {
  const page = await request(`${server.url}/api/log/activity?page[limit]=30`, { token: viewer });
  assert.equal(page.status, 413, page.text.slice(0, 200));
  assert.match(page.body.errors[0].detail, /TILTH_RESPONSE_MAX_BYTES.*page\[limit\]/);
  assert.equal((await request(`${server.url}/api/log/activity?page[limit]=5`, { token: viewer })).status, 200);
  assert.equal(
    (await request(`${server.url}/api/log/activity?page[limit]=30&fields[log--activity]=name`, { token: viewer }))
      .status,
    200,
    'or fewer fields',
  );
});

test('a subrequests call whose fan-out holds too much ends with one 413; too many copies is a 413 entry', async () => {
  const fanOut = [
    { requestId: 'list', action: 'view', uri: '/api/log/activity?page[limit]=10&fields[log--activity]=name' },
    {
      requestId: 'each',
      action: 'view',
      uri: '/api/log/activity?page[limit]=5&filter[x][condition][path]=id&filter[x][condition][operator]=%3C%3E&filter[x][condition][value]={{list.body@$.data[*].id}}',
      waitFor: ['list'],
    },
  ];
  const res = await batch(fanOut);
  assert.equal(res.status, 413, res.text.slice(0, 300));
  assert.match(res.body.errors[0].detail, /TILTH_SUBREQUEST_MAX_BYTES/);

  const copies = await batch([
    { requestId: 'list', action: 'view', uri: '/api/log/activity?page[limit]=30&fields[log--activity]=name' },
    {
      requestId: 'each',
      action: 'view',
      uri: '/api/log/activity/{{list.body@$.data[*].id}}?fields[log--activity]=name',
      waitFor: ['list'],
    },
  ]);
  assert.equal(copies.status, 200);
  const entry = copies.body.each ?? Object.values(copies.body).find((e: any) => /each/.test(e.headers['content-id']));
  const status = Array.isArray(entry.headers.status) ? entry.headers.status[0] : entry.headers.status;
  assert.equal(status, 413);
  assert.match(JSON.parse(entry.body).errors[0].detail, /TILTH_SUBREQUEST_MAX_REQUESTS/);
});

test('memory stays flat under repeated oversize batches and pages', async () => {
  const fanOut = [
    { requestId: 'list', action: 'view', uri: '/api/log/activity?page[limit]=10&fields[log--activity]=name' },
    {
      requestId: 'each',
      action: 'view',
      uri: '/api/log/activity?page[limit]=5&filter[x][condition][path]=id&filter[x][condition][operator]=%3C%3E&filter[x][condition][value]={{list.body@$.data[*].id}}',
      waitFor: ['list'],
    },
  ];
  for (let i = 0; i < 5; i++) await batch(fanOut);
  global.gc?.();
  const before = process.memoryUsage().rss;
  for (let i = 0; i < 40; i++) {
    assert.equal((await batch(fanOut)).status, 413);
    assert.equal((await request(`${server.url}/api/log/activity?page[limit]=30`, { token: viewer })).status, 413);
  }
  const growth = (process.memoryUsage().rss - before) / 1024 / 1024;
  assert.ok(growth < 100, `RSS grew by ${Math.round(growth)} MB`);
});

test('a write is never answered with the budget error: its answer is the record it saved', async () => {
  const admin = await passwordToken(server.url, ADMIN.name, ADMIN.password);
  const huge = 'h'.repeat(160_000); // served twice (value and processed): past the 300 kB budget
  const res = await request(`${server.url}/api/log/activity`, {
    method: 'POST',
    token: admin,
    json: { data: { type: 'log--activity', attributes: { name: 'Huge', notes: { value: huge } } } },
  });
  assert.equal(res.status, 201, res.text.slice(0, 200));
  assert.equal(res.body.data.attributes.notes.value.length, huge.length);
  const read = await request(`${server.url}/api/log/activity/${res.body.data.id}`, { token: admin });
  assert.equal(read.status, 413, 'reading it whole is over the budget');
  assert.equal(
    (await request(`${server.url}/api/log/activity/${res.body.data.id}?fields[log--activity]=name`, { token: admin }))
      .status,
    200,
  );
});

test('past TILTH_SUBREQUEST_MAX_CALLS calls running at once, the next is a 503 with Retry-After at once; the slots are given back', async () => {
  // Each call may hold up to TILTH_SUBREQUEST_MAX_BYTES: how many run at once bounds what they hold together.
  const views = Array.from({ length: 15 }, (_, i) => ({
    requestId: `v${i}`,
    action: 'view',
    uri: `/api/log/activity?page[limit]=5&page[offset]=${i}&fields[log--activity]=name`,
  }));
  const answers = await Promise.all(Array.from({ length: 8 }, () => batch(views)));
  const statuses = answers.map((a) => a.status);
  assert.ok(
    statuses.every((s) => s === 200 || s === 503),
    statuses.join(' '),
  );
  assert.ok(statuses.filter((s) => s === 200).length >= 2, `at least two ran: ${statuses.join(' ')}`);
  const busy = answers.filter((a) => a.status === 503);
  assert.ok(busy.length > 0, `the calls past the second wait for nothing: ${statuses.join(' ')}`);
  for (const a of busy) {
    assert.equal(a.headers.get('retry-after'), '1');
    assert.equal(a.body.errors[0].code, 'unavailable');
    assert.match(a.body.errors[0].detail, /TILTH_SUBREQUEST_MAX_CALLS/);
  }
  const done = answers.find((a) => a.status === 200)!;
  assert.deepEqual(
    Object.keys(done.body),
    views.map((v) => v.requestId),
    'every sub-response, in order',
  );
  assert.equal(JSON.parse(done.body.v0.body).data.length, 5);
  // Once they are done, every slot is free again, after a 413 and a refused blueprint too.
  const fanOut = [
    { requestId: 'list', action: 'view', uri: '/api/log/activity?page[limit]=10&fields[log--activity]=name' },
    {
      requestId: 'each',
      action: 'view',
      uri: '/api/log/activity?page[limit]=5&filter[x][condition][path]=id&filter[x][condition][operator]=%3C%3E&filter[x][condition][value]={{list.body@$.data[*].id}}',
      waitFor: ['list'],
    },
  ];
  assert.equal((await batch(fanOut)).status, 413);
  assert.equal((await batch([{ requestId: 'csv', action: 'view', uri: '/api/log/activity?_format=csv' }])).status, 400);
  const again = await Promise.all([batch(views), batch(views)]);
  assert.deepEqual(
    again.map((a) => a.status),
    [200, 200],
  );
});
