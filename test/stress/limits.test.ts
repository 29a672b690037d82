// Every limit answers clearly above it, and repeated oversize requests leave memory flat (trust
// issue, part B 4). The limits and their settings are listed in the README ("Limits").
import { rssMb } from '../support/processes.ts';
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createTestDatabase } from '../support/server.ts';
import { startChildServerAsAdmin, type ChildServer } from '../support/child-server.ts';
import { request, JSONAPI, type ApiResponse } from '../support/http.ts';
import {
  MAX_FILTER_DEPTH,
  MAX_INCLUDE_PATHS,
  MAX_PAGE_LIMIT,
  MAX_PARAMETERS,
  MAX_PATH_SEGMENTS,
} from '../../runtime/jsonapi/query/index.ts';
import { FULL, report } from './scale.ts';

const REPEATS = FULL ? 1000 : 100;

let database: Awaited<ReturnType<typeof createTestDatabase>>;
let server: ChildServer;
let token: string;

before(async () => {
  ({ database, server, token } = await startChildServerAsAdmin());
  for (let i = 0; i < MAX_PAGE_LIMIT + 5; i++) {
    const res = await request(`${server.url}/api/log/activity`, {
      method: 'POST',
      token,
      json: { data: { type: 'log--activity', attributes: { name: `Log ${i}` } } },
    });
    assert.equal(res.status, 201);
  }
});
after(async () => {
  await server?.stop();
  await database?.drop();
});

/** The server process's resident memory in MB. */
const serverRss = () => rssMb(server.process.pid);

function assertRefused(res: ApiResponse, status: number, what: string, detail: RegExp): void {
  assert.equal(res.status, status, `${what}: ${res.text.slice(0, 300)}`);
  assert.equal(res.body?.errors?.[0]?.status, String(status), `${what}: a JSON:API error document`);
  assert.match(res.body.errors[0].detail, detail, what);
}

const get = (query: string) => request(`${server.url}/api/log/activity?${query}`, { token });

test('query limits: parameters, nesting, filter depth, path length, includes; page size is capped', async () => {
  const params = Array.from({ length: MAX_PARAMETERS + 1 }, (_, i) => `x${i}=1`).join('&');
  assertRefused(await get(params), 400, 'too many parameters', /more than 1000 parameters/);
  assertRefused(await get(`filter${'[a]'.repeat(9)}=1`), 400, 'brackets nested too deep', /deep|nest/i);

  const groups = Array.from(
    { length: MAX_FILTER_DEPTH + 1 },
    (_, i) => `filter[g${i}][group][conjunction]=AND${i ? `&filter[g${i}][group][memberOf]=g${i - 1}` : ''}`,
  ).join('&');
  assertRefused(
    await get(groups),
    400,
    'filter groups nested too deep',
    new RegExp(`nested more than ${MAX_FILTER_DEPTH} deep`),
  );
  const fine = Array.from(
    { length: MAX_FILTER_DEPTH },
    (_, i) => `filter[g${i}][group][conjunction]=AND${i ? `&filter[g${i}][group][memberOf]=g${i - 1}` : ''}`,
  ).join('&');
  assert.equal((await get(fine)).status, 200, 'nesting up to the limit works');

  const long = Array.from({ length: MAX_PATH_SEGMENTS + 1 }, () => 'asset').join('.');
  assertRefused(await get(`filter[${long}]=x`), 400, 'filter path too long', /segments/);
  assertRefused(await get(`sort=${long}`), 400, 'sort path too long', /segments/);
  assertRefused(await get(`include=${long}`), 400, 'include path too long', /segments/);
  const many = Array.from({ length: MAX_INCLUDE_PATHS + 1 }, (_, i) => (i % 2 ? 'asset' : 'owner')).join(',');
  assertRefused(
    await get(`include=${many}`),
    400,
    'too many include paths',
    new RegExp(`at most ${MAX_INCLUDE_PATHS}`),
  );

  // As in Drupal, a larger page is not an error: it is cut to the maximum, and links.next follows.
  const page = await get('page[limit]=500');
  assert.equal(page.status, 200);
  assert.equal(page.body.data.length, MAX_PAGE_LIMIT);
  assert.ok(page.body.links.next);
});

test(`a body over the JSON limit is a 413, and ${REPEATS} of them leave memory flat`, async () => {
  const oversize = JSON.stringify({
    data: { type: 'log--activity', attributes: { name: 'x'.repeat(5 * 1024 * 1024) } },
  });
  const send = () =>
    request(`${server.url}/api/log/activity`, {
      method: 'POST',
      token,
      body: oversize,
      headers: { 'Content-Type': JSONAPI },
    });
  assertRefused(await send(), 413, 'oversize body', /larger than/);
  for (let i = 0; i < 20; i++) await send(); // warm up allocators before measuring
  const before = serverRss();
  for (let i = 0; i < REPEATS; i++) assert.equal((await send()).status, 413);
  const growth = Math.round(serverRss() - before);
  report('oversize bodies', { requests: REPEATS, bodyMb: 5, rssBeforeMb: Math.round(before), rssGrowthMb: growth });
  assert.ok(growth < 64, `RSS grew by ${growth} MB over ${REPEATS} oversize requests`);
});
