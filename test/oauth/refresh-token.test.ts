// The refresh token grant (spec: Refresh flow): a refresh rotates both tokens and the previous
// pair stops working at once; replaying a rotated refresh token revokes the whole chain.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, ADMIN, type TestServer } from '../support/server.ts';
import { hashSecret } from '../../runtime/oauth/secrets.ts';
import { addClient, addUser, api, passwordGrant, token } from './helpers.ts';

let server: TestServer;
before(async () => {
  // Replays here come after the grace window (none); the window itself: attacks.test.ts.
  server = await startTestServer({ env: { TILTH_REFRESH_REUSE_GRACE: '0' } });
});
after(() => server.close());

const refresh = (refreshToken: string, extra: Record<string, string> = {}) =>
  token(server, { grant_type: 'refresh_token', refresh_token: refreshToken, client_id: 'farm', ...extra });

test('a refresh returns a new pair; the previous access and refresh tokens stop working at once', async () => {
  const first = await passwordGrant(server, ADMIN.name, ADMIN.password);
  assert.equal((await api(`${server.url}/api`, first.access_token)).status, 200);

  const second = await refresh(first.refresh_token);
  assert.equal(second.status, 200, second.text);
  assert.equal(second.body.token_type, 'Bearer');
  assert.equal(second.body.expires_in, 3600);
  assert.equal(second.body.scope, 'user_access');
  assert.notEqual(second.body.access_token, first.access_token);
  assert.notEqual(second.body.refresh_token, first.refresh_token);

  const old = await api(`${server.url}/api`, first.access_token);
  assert.equal(old.status, 401);
  assert.match(old.headers.get('www-authenticate') ?? '', /error="invalid_token"/);
  assert.equal((await api(`${server.url}/api`, second.body.access_token)).status, 200);
});

test('replaying a rotated refresh token is invalid_grant and revokes every token of its chain', async () => {
  const first = await passwordGrant(server, ADMIN.name, ADMIN.password);
  const second = (await refresh(first.refresh_token)).body;
  const third = (await refresh(second.refresh_token)).body;
  assert.equal((await api(`${server.url}/api`, third.access_token)).status, 200);

  const replay = await refresh(first.refresh_token);
  assert.equal(replay.status, 400);
  assert.equal(replay.body.error, 'invalid_grant');

  assert.equal(
    (await api(`${server.url}/api`, third.access_token)).status,
    401,
    'the newest access token of the chain is revoked',
  );
  const next = await refresh(third.refresh_token);
  assert.equal(next.status, 400, 'the newest refresh token of the chain is revoked');
  assert.equal(next.body.error, 'invalid_grant');
});

test('other chains of the same user are not touched by a replay', async () => {
  const a = await passwordGrant(server, ADMIN.name, ADMIN.password);
  const b = await passwordGrant(server, ADMIN.name, ADMIN.password);
  await refresh(a.refresh_token);
  await refresh(a.refresh_token);
  assert.equal((await api(`${server.url}/api`, b.access_token)).status, 200);
  assert.equal((await refresh(b.refresh_token)).status, 200);
});

test('a refresh keeps the scope, may narrow it, and may not widen it', async () => {
  const manager = await passwordGrant(server, ADMIN.name, ADMIN.password, 'farm_manager farm_viewer');
  const same = await refresh(manager.refresh_token, { scope: 'farm_manager farm_viewer' });
  assert.equal(same.body.scope, 'farm_manager farm_viewer');
  const kept = await refresh(same.body.refresh_token);
  assert.equal(kept.body.scope, 'farm_manager farm_viewer');
  const narrowed = await refresh(kept.body.refresh_token, { scope: 'farm_viewer' });
  assert.equal(narrowed.status, 200);
  assert.equal(narrowed.body.scope, 'farm_viewer');
  const widened = await refresh(narrowed.body.refresh_token, { scope: 'farm_viewer farm_manager' });
  assert.equal(widened.status, 400);
  assert.equal(widened.body.error, 'invalid_scope');
  // A refused widening does not use the token up.
  assert.equal((await refresh(narrowed.body.refresh_token)).status, 200);
});

test('an expired refresh token is invalid_grant', async () => {
  const pair = await passwordGrant(server, ADMIN.name, ADMIN.password);
  // Age the token in the database rather than waiting 14 days.
  await server.ctx.db
    .knex('oauth_refresh_tokens')
    .where('token_hash', hashSecret(pair.refresh_token))
    .update({ expires: Math.floor(Date.now() / 1000) - 1 });
  const res = await refresh(pair.refresh_token);
  assert.equal(res.status, 400);
  assert.equal(res.body.error, 'invalid_grant');
  assert.match(res.body.error_description, /expired/);
});

test('a refresh token works only for the client it was issued to', async () => {
  const { client } = await addClient(server, { confidential: false, grantTypes: ['password', 'refresh_token'] });
  const pair = await token(server, {
    grant_type: 'password',
    username: ADMIN.name,
    password: ADMIN.password,
    client_id: client.clientId,
  });
  assert.equal(pair.status, 200);
  const res = await refresh(pair.body.refresh_token);
  assert.equal(res.status, 400);
  assert.equal(res.body.error, 'invalid_grant');
  assert.equal(
    (
      await token(server, {
        grant_type: 'refresh_token',
        refresh_token: pair.body.refresh_token,
        client_id: client.clientId,
      })
    ).status,
    200,
  );
});

test('lifetimes come from the configuration', async () => {
  const custom = await startTestServer({
    env: { TILTH_ACCESS_TOKEN_LIFETIME: '120', TILTH_REFRESH_TOKEN_LIFETIME: '600' },
  });
  try {
    const res = await passwordGrant(custom, ADMIN.name, ADMIN.password);
    assert.equal(res.expires_in, 120);
    const row = await custom.ctx.db.knex('oauth_refresh_tokens').first('created', 'expires');
    assert.equal(Number(row.expires) - Number(row.created), 600);
  } finally {
    await custom.close();
  }
});

test('the refresh of a user who was blocked meanwhile is invalid_grant', async () => {
  const user = await addUser(server, ['farm_worker']);
  const pair = await passwordGrant(server, user.name, user.password);
  await server.ctx.db.knex('users').where('id', user.id).update({ status: false });
  const res = await refresh(pair.refresh_token);
  assert.equal(res.status, 400);
  assert.equal(res.body.error, 'invalid_grant');
});
