// farmOS.js 2.0.0-beta.16, unchanged, against the server (clients.md §1.2): its password grant
// (an unencoded form body), its proactive refresh from `expires`, and an authenticated request.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import pkg from 'farmos';
import { startTestServer, ADMIN, type TestServer } from '../support/server.ts';
import { addUser } from './helpers.ts';

const farmOS = (pkg as unknown as { default: (options: unknown) => any }).default;

let server: TestServer;
before(async () => {
  server = await startTestServer();
});
after(() => server.close());

test('authorize, then a refresh forced by an expired token, then info()', async () => {
  let stored: any = null;
  const farm = farmOS({
    remote: { host: server.url, clientId: 'farm', getToken: () => stored, setToken: (t: unknown) => (stored = t) },
  });

  const token = await farm.remote.authorize(ADMIN.name, ADMIN.password);
  assert.equal(token.token_type, 'Bearer');
  assert.equal(typeof token.access_token, 'string');
  assert.equal(typeof token.refresh_token, 'string');
  assert.equal(token.expires_in, 3600);
  assert.ok(token.expires > Date.now(), 'farmOS.js computed expires from expires_in');
  assert.equal(stored.access_token, token.access_token);

  const first = { ...stored };
  stored = { ...stored, expires: Date.now() - 60_000 };
  const info = await farm.remote.info();
  assert.equal(info.data.meta.farm.name, 'Test Farm');
  assert.ok(info.data.meta.links.me.meta.id, 'the request after the refresh was authenticated');
  assert.notEqual(stored.access_token, first.access_token, 'farmOS.js refreshed and stored a new token');
  assert.notEqual(stored.refresh_token, first.refresh_token);
  assert.ok(stored.expires > Date.now());

  // The rotated-out token no longer works.
  const old = await fetch(`${server.url}/api`, { headers: { Authorization: `Bearer ${first.access_token}` } });
  assert.equal(old.status, 401);
});

test('a password with a space (sent unencoded) works; a wrong one rejects with the server’s invalid_grant', async () => {
  const user = await addUser(server, ['farm_worker'], 'js user');
  const farm = farmOS({ remote: { host: server.url, clientId: 'farm' } });
  const token = await farm.remote.authorize(user.name, user.password);
  assert.equal(token.token_type, 'Bearer');
  const info = await farm.remote.info();
  assert.equal(info.data.meta.links.me.meta.id, user.uuid);

  const other = farmOS({ remote: { host: server.url, clientId: 'farm' } });
  await assert.rejects(other.remote.authorize(user.name, 'wrong'), (error: any) => {
    assert.equal(error.response?.status, 400);
    assert.equal(error.response?.data?.error, 'invalid_grant');
    return true;
  });
});

test('before it has a token, farmOS.js sends "Bearer undefined": a 401, not a crash', async () => {
  const farm = farmOS({ remote: { host: server.url, clientId: 'farm' } });
  await assert.rejects(farm.remote.info(), (error: any) => {
    assert.equal(error.response?.status, 401);
    return true;
  });
});
