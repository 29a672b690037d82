// Bearer tokens on the API (RFC 6750): no Authorization header stays anonymous; anything else
// that is not a live token gets 401 with a WWW-Authenticate challenge and a JSON:API error
// document. The principal a token sets is what /api's meta.links.me shows.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, ADMIN, type TestServer } from '../support/server.ts';
import { hashSecret } from '../../runtime/oauth/secrets.ts';
import { principalOfToken } from '../../runtime/oauth/bearer.ts';
import { addUser, api, passwordGrant } from './helpers.ts';

let server: TestServer;
before(async () => {
  server = await startTestServer();
});
after(() => server.close());

function assertInvalidToken(res: Awaited<ReturnType<typeof api>>, description: RegExp) {
  assert.equal(res.status, 401, res.text);
  const challenge = res.headers.get('www-authenticate') ?? '';
  assert.match(challenge, /^Bearer realm="tilth", error="invalid_token", error_description="[^"]+"$/);
  assert.match(challenge, description);
  assert.match(res.headers.get('content-type') ?? '', /application\/vnd\.api\+json/);
  assert.equal(res.body.errors[0].status, '401');
  assert.match(res.body.errors[0].detail, description);
}

test('no Authorization header: anonymous, and GET /api answers without meta.links.me', async () => {
  const res = await api(`${server.url}/api`);
  assert.equal(res.status, 200);
  assert.equal(res.body.meta.links, undefined);
});

test('"Bearer undefined" (farmOS.js before it has a token) and unknown tokens are 401 invalid_token', async () => {
  assertInvalidToken(await api(`${server.url}/api`, 'undefined'), /invalid/);
  assertInvalidToken(await api(`${server.url}/api/log/activity`, 'not-a-token'), /invalid/);
  assertInvalidToken(await api(`${server.url}/api/schema`, 'not-a-token'), /invalid/);
});

test('expired and revoked tokens are 401 and say why', async () => {
  const expired = await passwordGrant(server, ADMIN.name, ADMIN.password);
  await server.ctx.db.knex('oauth_access_tokens').where('token_hash', hashSecret(expired.access_token)).update({ expires: Math.floor(Date.now() / 1000) - 1 });
  assertInvalidToken(await api(`${server.url}/api`, expired.access_token), /expired/);
  const revoked = await passwordGrant(server, ADMIN.name, ADMIN.password);
  await server.ctx.db.knex('oauth_access_tokens').where('token_hash', hashSecret(revoked.access_token)).update({ revoked: 1 });
  assertInvalidToken(await api(`${server.url}/api`, revoked.access_token), /revoked/);
});

test('other schemes and malformed headers are refused, never treated as anonymous', async () => {
  const basicAuth = await api(`${server.url}/api`, undefined, { headers: { Authorization: 'Basic YWRtaW46eA==' } });
  assert.equal(basicAuth.status, 401);
  assert.equal(basicAuth.headers.get('www-authenticate'), 'Bearer realm="tilth"');
  const malformed = await api(`${server.url}/api`, undefined, { headers: { Authorization: 'Bearer two words' } });
  assert.equal(malformed.status, 400);
  assert.match(malformed.headers.get('www-authenticate') ?? '', /error="invalid_request"/);
  assert.equal(malformed.body.errors[0].status, '400');
});

test('the bearer scheme is case-insensitive', async () => {
  const pair = await passwordGrant(server, ADMIN.name, ADMIN.password);
  const res = await api(`${server.url}/api`, undefined, { headers: { Authorization: `bearer ${pair.access_token}` } });
  assert.equal(res.status, 200);
  assert.ok(res.body.meta.links.me);
});

test('the principal carries user, roles, scopes, client and the permissions both scopes and roles grant', async () => {
  const viewer = await addUser(server, ['farm_viewer']);
  const pair = await passwordGrant(server, viewer.name, viewer.password, 'farm_manager');
  const principal = await principalOfToken(server.ctx.db.knex, pair.access_token);
  assert.ok(typeof principal === 'object');
  assert.equal(principal.userId, viewer.id);
  assert.equal(principal.userUuid, viewer.uuid);
  assert.equal(principal.userName, viewer.name);
  assert.deepEqual(principal.roles, ['farm_viewer']);
  assert.deepEqual(principal.scopes, ['farm_manager']);
  assert.equal(principal.clientId, 'farm');
  assert.deepEqual([...principal.permissions].sort(), ['content:view', 'language:view', 'taxonomy:view', 'user:view']);
  const me = await api(`${server.url}/api`, pair.access_token);
  assert.equal(me.body.meta.links.me.meta.id, viewer.uuid);
  assert.equal(me.body.meta.links.me.href, `${server.url}/api/user/user/${viewer.uuid}`);
});

test('tokens are stored only as hashes', async () => {
  const pair = await passwordGrant(server, ADMIN.name, ADMIN.password);
  const access = JSON.stringify(await server.ctx.db.knex('oauth_access_tokens').select());
  const refresh = JSON.stringify(await server.ctx.db.knex('oauth_refresh_tokens').select());
  assert.ok(!access.includes(pair.access_token) && !refresh.includes(pair.refresh_token));
  assert.ok(access.includes(hashSecret(pair.access_token)));
});

test('every API answer carries the security headers (no sniffing, no framing, HSTS), errors and anonymous ones too', async () => {
  const pair = await passwordGrant(server, ADMIN.name, ADMIN.password);
  for (const res of [await api(`${server.url}/api`, pair.access_token), await api(`${server.url}/api/log/activity`, 'not-a-token'), await api(`${server.url}/api/schema`)]) {
    assert.equal(res.headers.get('x-content-type-options'), 'nosniff');
    assert.equal(res.headers.get('x-frame-options'), 'SAMEORIGIN');
    assert.match(res.headers.get('strict-transport-security') ?? '', /^max-age=\d+/);
    assert.equal(res.headers.get('referrer-policy'), 'no-referrer');
    assert.equal(res.headers.get('cross-origin-opener-policy'), 'same-origin');
    assert.equal(res.headers.get('x-powered-by'), null);
  }
});
