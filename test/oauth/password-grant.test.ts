// The password grant at POST /oauth/token with the default `farm` client (spec: Password flow;
// farmos-behaviour.md §6.4): by user name or e-mail, the token response's members, scopes, and
// the shapes farmOS.js sends (an unencoded body with a raw space).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, ADMIN, type TestServer } from '../support/server.ts';
import { addUser, api, basic, token } from './helpers.ts';

let server: TestServer;
before(async () => {
  server = await startTestServer();
});
after(() => server.close());

test('a password grant returns a bearer token pair with integer expires_in and the default scope', async () => {
  const res = await token(server, {
    grant_type: 'password',
    username: ADMIN.name,
    password: ADMIN.password,
    client_id: 'farm',
  });
  assert.equal(res.status, 200);
  assert.match(res.headers.get('content-type') ?? '', /^application\/json/);
  assert.equal(res.headers.get('cache-control'), 'no-store');
  assert.equal(res.headers.get('pragma'), 'no-cache');
  assert.equal(res.body.token_type, 'Bearer');
  assert.equal(res.body.expires_in, 3600);
  assert.equal(res.body.scope, 'user_access');
  // A signed JWT, as farmOS issues (jwt-access-tokens.test.ts reads its claims).
  assert.match(res.body.access_token, /^eyJ[A-Za-z0-9_-]+\.eyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/);
  assert.match(res.body.refresh_token, /^[A-Za-z0-9_-]{43}$/);
  assert.notEqual(res.body.access_token, res.body.refresh_token);
  const me = await api(`${server.url}/api`, res.body.access_token);
  assert.equal(me.status, 200);
  assert.ok(me.body.meta.links.me.meta.id);
});

test('the user name may be the e-mail address', async () => {
  const user = await addUser(server, ['farm_worker'], 'mailer', 'mailer@example.com');
  const res = await token(server, {
    grant_type: 'password',
    username: 'mailer@example.com',
    password: user.password,
    client_id: 'farm',
  });
  assert.equal(res.status, 200);
  const me = await api(`${server.url}/api`, res.body.access_token);
  assert.equal(me.body.meta.links.me.meta.id, user.uuid);
});

test("farmOS.js's unencoded body: a raw space in the user name and password still works", async () => {
  const user = await addUser(server, ['farm_viewer'], 'field hand');
  assert.equal(user.password, 'field hand-password');
  // farmOS.js concatenates `grant_type=password&username=${user}&password=${password}&client_id=${clientId}` without encoding.
  const res = await token(
    server,
    `grant_type=password&username=field hand&password=field hand-password&client_id=farm`,
  );
  assert.equal(res.status, 200, res.text);
  assert.equal(res.body.token_type, 'Bearer');
});

test('a requested scope is granted and echoed exactly; several scopes keep their order', async () => {
  const one = await token(server, {
    grant_type: 'password',
    username: ADMIN.name,
    password: ADMIN.password,
    client_id: 'farm',
    scope: 'farm_manager',
  });
  assert.equal(one.status, 200);
  assert.equal(one.body.scope, 'farm_manager');
  const two = await token(server, {
    grant_type: 'password',
    username: ADMIN.name,
    password: ADMIN.password,
    client_id: 'farm',
    scope: 'farm_viewer farm_worker',
  });
  assert.equal(two.body.scope, 'farm_viewer farm_worker');
});

test('a scope beyond the user’s roles is granted as asked (the token still has only the role’s rights)', async () => {
  const viewer = await addUser(server, ['farm_viewer']);
  const res = await token(server, {
    grant_type: 'password',
    username: viewer.name,
    password: viewer.password,
    client_id: 'farm',
    scope: 'farm_manager',
  });
  assert.equal(res.status, 200);
  assert.equal(res.body.scope, 'farm_manager');
});

test('unknown form fields are ignored, and HTTP Basic "farm:" names the public client (farmOS.py)', async () => {
  const res = await token(
    server,
    {
      grant_type: 'password',
      username: ADMIN.name,
      password: ADMIN.password,
      scope: 'farm_manager',
      allow_redirects: 'True',
      something: 'else',
    },
    { Authorization: basic('farm', ''), Accept: 'application/json' },
  );
  assert.equal(res.status, 200, res.text);
  assert.equal(res.body.scope, 'farm_manager');
});

test('a public client may send a bearer header to the token endpoint; it is not client authentication', async () => {
  const res = await token(
    server,
    { grant_type: 'password', username: ADMIN.name, password: ADMIN.password, client_id: 'farm' },
    { Authorization: 'Bearer something' },
  );
  assert.equal(res.status, 200);
});

test('successful logins record the login time', async () => {
  const user = await addUser(server, ['farm_viewer']);
  await token(server, { grant_type: 'password', username: user.name, password: user.password, client_id: 'farm' });
  const row = await server.ctx.db.knex('users').where('id', user.id).first('login', 'access');
  assert.ok(Number(row.login) > 0);
});
