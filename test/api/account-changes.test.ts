// What `tilth user …` changes on an account is a change of the record: its ETag moves and the
// change feed lists it, as for a change through the API (issue 40: setPassword moved `changed`
// with no feed row, so a client holding the old ETag was told 304 with the old `changed`).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, ADMIN, type TestServer } from '../support/server.ts';
import { passwordToken, request } from '../support/http.ts';
import { createUser, setPassword } from '../../runtime/accounts/users.ts';

let server: TestServer;
let token: string;

before(async () => {
  server = await startTestServer();
  token = await passwordToken(server.url, ADMIN.name, ADMIN.password);
});
after(() => server.close());

test('a password set with tilth user password: the account gets a new version, in its ETag and in the change feed', async () => {
  const sam = await createUser(server.ctx.db.knex, {
    name: 'sam-feed',
    password: 'first-password-1',
    roles: ['farm_worker'],
  });
  const before = await request(`${server.url}/api/user/user/${sam.uuid}`, { token });
  assert.equal(before.status, 200);
  const etag = before.headers.get('etag');
  assert.ok(etag);
  const cursor = (await request(`${server.url}/api/changes?since=0&page[limit]=500`, { token })).body.meta.cursor;
  // `changed` is kept in seconds: the new one must differ from the one the client holds.
  await new Promise((resolve) => setTimeout(resolve, 1100));
  await setPassword(server.ctx.db.knex, 'sam-feed', 'second-password-2');

  const after = await request(`${server.url}/api/user/user/${sam.uuid}`, { token, headers: { 'If-None-Match': etag } });
  assert.equal(after.status, 200, 'not a 304: the account changed');
  assert.notEqual(after.body.data.attributes.changed, before.body.data.attributes.changed);
  assert.notEqual(after.headers.get('etag'), etag);
  const feed = await request(`${server.url}/api/changes?since=${encodeURIComponent(cursor)}&page[limit]=500`, {
    token,
  });
  assert.equal(feed.status, 200);
  assert.ok(
    feed.body.data.some((entry: { id: string }) => entry.id === sam.uuid),
    'the change feed lists the account',
  );
});
