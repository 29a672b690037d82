// Bearer tokens on the API (RFC 6750): no Authorization header stays anonymous; anything else
// that is not a live token gets 401 with a WWW-Authenticate challenge and a JSON:API error
// document. The principal a token sets is what /api's meta.links.me shows.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { connectionBeside, startTestServer, ADMIN, type TestServer } from '../support/server.ts';
import { hashSecret } from '../../runtime/oauth/secrets.ts';
import { principalOfToken, TokenReader } from '../../runtime/oauth/bearer.ts';
import { readConnectionOf } from '../../runtime/storage/database.ts';
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
  await server.ctx.db
    .knex('oauth_access_tokens')
    .where('token_hash', hashSecret(expired.access_token))
    .update({ expires: Math.floor(Date.now() / 1000) - 1 });
  assertInvalidToken(await api(`${server.url}/api`, expired.access_token), /expired/);
  const revoked = await passwordGrant(server, ADMIN.name, ADMIN.password);
  await server.ctx.db
    .knex('oauth_access_tokens')
    .where('token_hash', hashSecret(revoked.access_token))
    .update({ revoked: 1 });
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

/**
 * Run a statement on a connection of its own, as a `tilth` command or a second server would (on
 * PostgreSQL, the server's own pool is already more than one connection).
 */
async function fromAnotherConnection(sql: string, bindings: Array<string | number>): Promise<void> {
  if (server.dialect === 'postgres') {
    await server.ctx.db.knex.raw(sql, bindings);
    return;
  }
  commitBeside(sql, bindings);
}

/** On SQLite: commit a statement on a connection of its own, synchronously. */
function commitBeside(sql: string, bindings: Array<string | number>): void {
  const other = connectionBeside(server);
  try {
    other.prepare(sql).run(...bindings);
  } finally {
    other.close();
  }
}

test('a token in use loses a role, and then stops working, the moment another connection says so', async () => {
  const manager = await addUser(server, ['farm_manager']);
  const pair = await passwordGrant(server, manager.name, manager.password);
  const log = (name: string) =>
    api(`${server.url}/api/log/activity`, pair.access_token, {
      method: 'POST',
      headers: { 'Content-Type': 'application/vnd.api+json' },
      body: JSON.stringify({ data: { type: 'log--activity', attributes: { name } } }),
    });
  assert.equal((await log('before')).status, 201);
  // Read (and on SQLite kept) after the last commit, so only the other connection's change can
  // make the server read it again.
  assert.equal((await api(`${server.url}/api`, pair.access_token)).status, 200);

  await fromAnotherConnection('DELETE FROM user_role WHERE user_id = ?', [manager.id]);
  const refused = await log('after the role is gone');
  assert.equal(refused.status, 403, refused.text);
  assert.equal((await api(`${server.url}/api`, pair.access_token)).status, 200);

  await fromAnotherConnection('UPDATE oauth_access_tokens SET revoked = 1 WHERE token_hash = ?', [
    hashSecret(pair.access_token),
  ]);
  assertInvalidToken(await api(`${server.url}/api`, pair.access_token), /revoked/);
});

test('a principal read before the database changed is not kept after it', async (t) => {
  if (server.dialect !== 'sqlite') return t.skip('only SQLite keeps principals (PostgreSQL reads every token)');
  const pair = await passwordGrant(server, ADMIN.name, ADMIN.password);
  const tokens = new TokenReader(server.ctx.db.knex);
  // The first read of the row happens now (SQLite answers synchronously); what it read is kept
  // only when its promise settles, after the revocation and a second read that saw it.
  const first = tokens.principal(pair.access_token);
  commitBeside('UPDATE oauth_access_tokens SET revoked = 1 WHERE token_hash = ?', [hashSecret(pair.access_token)]);
  const second = tokens.principal(pair.access_token);
  assert.equal(typeof (await first), 'object', 'read before the revocation');
  assert.equal(await second, 'revoked');
  assert.equal(
    await tokens.principal(pair.access_token),
    'revoked',
    'the earlier read is not kept under the later version',
  );
});

test('a principal kept before the read connection was reopened is not served after a change', async (t) => {
  if (server.dialect !== 'sqlite') return t.skip('only SQLite keeps principals');
  const pair = await passwordGrant(server, ADMIN.name, ADMIN.password);
  const tokens = new TokenReader(server.ctx.db.knex);
  const reader = readConnectionOf(server.ctx.db.knex)!;
  // A fresh connection counts data_version from its start: two fresh ones may give one number.
  reader.close();
  assert.equal(typeof (await tokens.principal(pair.access_token)), 'object');
  reader.close();
  commitBeside('UPDATE oauth_access_tokens SET revoked = 1 WHERE token_hash = ?', [hashSecret(pair.access_token)]);
  assert.equal(await tokens.principal(pair.access_token), 'revoked');
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
  for (const res of [
    await api(`${server.url}/api`, pair.access_token),
    await api(`${server.url}/api/log/activity`, 'not-a-token'),
    await api(`${server.url}/api/schema`),
  ]) {
    assert.equal(res.headers.get('x-content-type-options'), 'nosniff');
    assert.equal(res.headers.get('x-frame-options'), 'SAMEORIGIN');
    assert.match(res.headers.get('strict-transport-security') ?? '', /^max-age=\d+/);
    assert.equal(res.headers.get('referrer-policy'), 'no-referrer');
    assert.equal(res.headers.get('cross-origin-opener-policy'), 'same-origin');
    assert.equal(res.headers.get('x-powered-by'), null);
  }
});
