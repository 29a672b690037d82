// Where the API takes a bearer token from: the Authorization header only. RFC 6750 also allows
// `access_token` in a form body or the query string (and passport-http-bearer reads both); Tilth
// has never taken a token that way, and a request carrying one beside its header is answered by
// the header alone. Also: an empty Authorization header is malformed, and requests that overlap
// each get their own token's principal.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, ADMIN, type TestServer } from '../support/server.ts';
import { addUser, api, passwordGrant } from './helpers.ts';

let server: TestServer;
before(async () => {
  server = await startTestServer();
});
after(() => server.close());

test('a token in the query string alone is not read: the request stays anonymous', async () => {
  const pair = await passwordGrant(server, ADMIN.name, ADMIN.password);
  const entry = await api(`${server.url}/api?access_token=${encodeURIComponent(pair.access_token)}`);
  assert.equal(entry.status, 200);
  assert.equal(entry.body.meta.links, undefined);
  const logs = await api(`${server.url}/api/log/activity?access_token=${encodeURIComponent(pair.access_token)}`);
  assert.equal(logs.status, 401, logs.text);
  assert.equal(logs.headers.get('www-authenticate'), 'Bearer realm="tilth"');
});

test('an access_token in the query string beside the header is ignored: the header decides', async () => {
  const pair = await passwordGrant(server, ADMIN.name, ADMIN.password);
  for (const other of [pair.access_token, 'not-a-token']) {
    const res = await api(`${server.url}/api?access_token=${encodeURIComponent(other)}`, pair.access_token);
    assert.equal(res.status, 200, res.text);
    assert.ok(res.body.meta.links.me);
  }
  const refused = await api(`${server.url}/api?access_token=${encodeURIComponent(pair.access_token)}`, 'not-a-token');
  assert.equal(refused.status, 401);
  assert.match(refused.headers.get('www-authenticate') ?? '', /error="invalid_token"/);
});

test('an access_token member in a request body beside the header is not a token', async () => {
  const pair = await passwordGrant(server, ADMIN.name, ADMIN.password);
  const res = await api(`${server.url}/api/log/activity`, pair.access_token, {
    method: 'POST',
    headers: { 'Content-Type': 'application/vnd.api+json' },
    body: JSON.stringify({
      access_token: 'not-a-token',
      data: { type: 'log--activity', attributes: { name: 'token in the body' } },
    }),
  });
  assert.notEqual(res.status, 401, res.text);
  assert.doesNotMatch(res.headers.get('www-authenticate') ?? '', /invalid_request/);
  assert.doesNotMatch(res.text, /Authorization header is malformed/);
});

test('an empty Authorization header is malformed (400 invalid_request), not anonymous', async () => {
  const res = await api(`${server.url}/api`, undefined, { headers: { Authorization: '' } });
  assert.equal(res.status, 400, res.text);
  assert.equal(res.headers.get('www-authenticate'), 'Bearer realm="tilth", error="invalid_request"');
  assert.equal(res.body.errors[0].status, '400');
});

// One strategy serves every request: a request's answer must not go to another whose check was in
// flight at the same time (passport given the strategy object itself, not its name, does that:
// the later request's callbacks replace the earlier one's, which then never answers; hence the
// timeout). On PostgreSQL every token is read over the network, so the checks overlap; on SQLite
// a token's read is done before the next request is read.
test("requests that overlap each get their own token's principal", { timeout: 30_000 }, async () => {
  const users = [await addUser(server, ['farm_viewer']), await addUser(server, ['farm_manager'])];
  const tokens = await Promise.all(
    users.map(async (u) => (await passwordGrant(server, u.name, u.password)).access_token),
  );
  const answers = await Promise.all(Array.from({ length: 24 }, (_, i) => api(`${server.url}/api`, tokens[i % 2])));
  answers.forEach((res, i) => {
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.meta.links.me.meta.id, users[i % 2]!.uuid, `request ${i}`);
  });
});
