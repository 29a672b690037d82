// OAuth attacks (trust issue, part B 6, with part A 12, 14 and 15): each attempt an attacker (or
// a careless client) makes against the authorization server, and what it must get. Cases already
// covered in depth elsewhere are repeated here in one place, as the attack list.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, ADMIN, type TestServer } from '../support/server.ts';
import { addClient, addUser, api, basic, FormAgent, passwordGrant, pkce, token } from './helpers.ts';
import { setBlocked } from '../../runtime/accounts/users.ts';

const GRACE = 2;
const LOOPBACK = 'http://127.0.0.1:45678/callback';
let server: TestServer;
const admin = { name: ADMIN.name, password: ADMIN.password };

before(async () => {
  server = await startTestServer({ env: { TILTH_REFRESH_REUSE_GRACE: String(GRACE) } });
});
after(() => server.close());

const refresh = (refreshToken: string, extra: Record<string, string> = {}) =>
  token(server, { grant_type: 'refresh_token', client_id: 'farm', refresh_token: refreshToken, ...extra });

async function code(agent: FormAgent, query: Record<string, string>): Promise<string> {
  const landed = await agent.authorize(query, admin);
  const c = landed.searchParams.get('code');
  assert.ok(c, `no code: ${landed}`);
  return c;
}

test('a reused authorization code is invalid_grant and revokes what the first use got', async () => {
  const agent = new FormAgent(server.url);
  const c = await code(agent, { response_type: 'code', client_id: 'farm', redirect_uri: LOOPBACK });
  const first = await token(server, {
    grant_type: 'authorization_code',
    client_id: 'farm',
    code: c,
    redirect_uri: LOOPBACK,
  });
  assert.equal(first.status, 200);
  const second = await token(server, {
    grant_type: 'authorization_code',
    client_id: 'farm',
    code: c,
    redirect_uri: LOOPBACK,
  });
  assert.equal(second.body.error, 'invalid_grant');
  assert.equal((await api(`${server.url}/api/log/activity`, first.body.access_token)).status, 401);
});

test('a rotated refresh token reused inside the grace window is refused without logging anyone out; after it, the chain is revoked', async () => {
  const pair = await passwordGrant(server, ADMIN.name, ADMIN.password);
  const next = await refresh(pair.refresh_token);
  assert.equal(next.status, 200);
  const raced = await refresh(pair.refresh_token); // two tabs, or a retry after a lost response
  assert.equal(raced.status, 400);
  assert.equal(raced.body.error, 'invalid_grant');
  assert.equal(
    (await api(`${server.url}/api/log/activity`, next.body.access_token)).status,
    200,
    'the winner’s tokens still work',
  );

  await new Promise((r) => setTimeout(r, (GRACE + 1) * 1000));
  const replay = await refresh(pair.refresh_token);
  assert.equal(replay.body.error, 'invalid_grant');
  assert.match(replay.body.error_description, /revoked/);
  assert.equal(
    (await api(`${server.url}/api/log/activity`, next.body.access_token)).status,
    401,
    'a late replay revokes the chain',
  );
  assert.equal((await refresh(next.body.refresh_token)).body.error, 'invalid_grant');
});

test('a redirect URI not exactly registered is never redirected to', async () => {
  const { client } = await addClient(server, {
    confidential: false,
    grantTypes: ['authorization_code'],
    redirectUris: ['https://app.example.com/cb'],
  });
  const agent = new FormAgent(server.url);
  for (const uri of [
    'https://app.example.com/cb/',
    'https://app.example.com/cb?x=1',
    'https://evil.example.com/cb',
    'https://app.example.com.evil.com/cb',
    'http://app.example.com/cb',
  ]) {
    const page = await agent.get(
      `/oauth/authorize?${new URLSearchParams({ response_type: 'code', client_id: client.clientId, redirect_uri: uri, code_challenge: pkce().challenge, code_challenge_method: 'S256' })}`,
    );
    assert.equal(page.status, 400, uri);
    assert.equal(page.location, null, `${uri}: no redirect`);
  }
});

test('PKCE missing or downgraded is refused; TILTH_FARM_CLIENT_REQUIRE_PKCE makes farm use it too', async (t) => {
  const { client } = await addClient(server, {
    confidential: false,
    grantTypes: ['authorization_code'],
    redirectUris: [LOOPBACK],
  });
  const agent = new FormAgent(server.url);
  const missing = await agent.authorize(
    { response_type: 'code', client_id: client.clientId, redirect_uri: LOOPBACK },
    admin,
  );
  assert.equal(missing.searchParams.get('error'), 'invalid_request', 'a public client without PKCE');
  const plain = await agent.authorize(
    {
      response_type: 'code',
      client_id: client.clientId,
      redirect_uri: LOOPBACK,
      code_challenge: 'a'.repeat(43),
      code_challenge_method: 'plain',
    },
    admin,
  );
  assert.equal(plain.searchParams.get('error'), 'invalid_request', 'the plain method is a downgrade');
  const { challenge } = pkce();
  const c = await code(agent, {
    response_type: 'code',
    client_id: client.clientId,
    redirect_uri: LOOPBACK,
    code_challenge: challenge,
    code_challenge_method: 'S256',
  });
  const stripped = await token(server, {
    grant_type: 'authorization_code',
    client_id: client.clientId,
    code: c,
    redirect_uri: LOOPBACK,
  });
  assert.equal(stripped.body.error, 'invalid_grant', 'no verifier for a challenged code');

  // farm is exempt by default (farmOS is, and scripts rely on it) ...
  assert.ok(
    (
      await agent.authorize({ response_type: 'code', client_id: 'farm', redirect_uri: LOOPBACK }, admin)
    ).searchParams.get('code'),
  );
  // ... unless the setting says otherwise.
  const strict = await startTestServer({ env: { TILTH_FARM_CLIENT_REQUIRE_PKCE: '1' } });
  t.after(() => strict.close());
  const strictAgent = new FormAgent(strict.url);
  const refused = await strictAgent.authorize(
    { response_type: 'code', client_id: 'farm', redirect_uri: LOOPBACK },
    admin,
  );
  assert.equal(refused.searchParams.get('error'), 'invalid_request');
  const s2 = pkce();
  assert.ok(
    (
      await strictAgent.authorize(
        {
          response_type: 'code',
          client_id: 'farm',
          redirect_uri: LOOPBACK,
          code_challenge: s2.challenge,
          code_challenge_method: 'S256',
        },
        admin,
      )
    ).searchParams.get('code'),
  );
});

test('a wrong secret fails every grant of a confidential client', async () => {
  const user = await addUser(server, ['farm_viewer']);
  const { client, secret } = await addClient(server, {
    confidential: true,
    grantTypes: ['authorization_code', 'password', 'client_credentials', 'refresh_token'],
    redirectUris: [LOOPBACK],
    defaultScopes: ['farm_viewer'],
    userName: user.name,
  });
  const wrong = basic(client.clientId, `${secret}x`);
  const right = basic(client.clientId, secret!);
  const pair = await token(
    server,
    { grant_type: 'password', username: user.name, password: user.password },
    { Authorization: right },
  );
  assert.equal(pair.status, 200, pair.text);
  const attempts: Array<Record<string, string>> = [
    { grant_type: 'password', username: user.name, password: user.password },
    { grant_type: 'client_credentials' },
    { grant_type: 'refresh_token', refresh_token: pair.body.refresh_token },
    { grant_type: 'authorization_code', code: 'whatever', redirect_uri: LOOPBACK },
  ];
  for (const form of attempts) {
    const res = await token(server, form, { Authorization: wrong });
    assert.equal(res.status, 401, form.grant_type);
    assert.equal(res.body.error, 'invalid_client', form.grant_type);
    const none = await token(server, { ...form, client_id: client.clientId });
    assert.equal(none.body.error, 'invalid_client', `${form.grant_type} without the secret`);
  }
});

test('another client’s refresh token is refused', async () => {
  const pair = await passwordGrant(server, ADMIN.name, ADMIN.password);
  const { client } = await addClient(server, {
    confidential: false,
    grantTypes: ['refresh_token', 'password'],
    defaultScopes: ['farm_viewer'],
  });
  const res = await token(server, {
    grant_type: 'refresh_token',
    client_id: client.clientId,
    refresh_token: pair.refresh_token,
  });
  assert.equal(res.body.error, 'invalid_grant');
  assert.equal((await refresh(pair.refresh_token)).status, 200, 'and it does not spoil it for its own client');
});

test('expired tokens and a blocked user’s tokens are refused', async () => {
  const user = await addUser(server, ['farm_worker']);
  const pair = await passwordGrant(server, user.name, user.password);
  const knex = server.ctx.db.knex;
  const past = Math.floor(Date.now() / 1000) - 1;
  await knex('oauth_access_tokens').where('user_id', user.id).update({ expires: past });
  const expired = await api(`${server.url}/api/log/activity`, pair.access_token);
  assert.equal(expired.status, 401);
  assert.match(expired.headers.get('www-authenticate')!, /expired/);
  const fresh = await refresh(pair.refresh_token);
  assert.equal(fresh.status, 200, 'an expired access token is what refresh tokens are for');
  await knex('oauth_refresh_tokens').where('user_id', user.id).update({ expires: past });
  assert.equal((await refresh(fresh.body.refresh_token)).body.error, 'invalid_grant', 'an expired refresh token');

  const other = await passwordGrant(server, user.name, user.password);
  await setBlocked(knex, user.name, true);
  assert.equal(
    (await api(`${server.url}/api/log/activity`, other.access_token)).status,
    401,
    'a blocked user’s access token',
  );
  assert.equal((await refresh(other.refresh_token)).body.error, 'invalid_grant', 'a blocked user’s refresh token');
});

test('a scope the client is not registered for is invalid_scope on every grant', async () => {
  const owner = await addUser(server, ['administrator']);
  const { client, secret } = await addClient(server, {
    confidential: true,
    grantTypes: ['client_credentials', 'password', 'authorization_code'],
    redirectUris: [LOOPBACK],
    defaultScopes: ['farm_viewer'],
    userName: owner.name,
  });
  const auth = { Authorization: basic(client.clientId, secret!) };
  const cc = await token(server, { grant_type: 'client_credentials', scope: 'administrator' }, auth);
  assert.equal(cc.status, 400, cc.text);
  assert.equal(cc.body.error, 'invalid_scope');
  assert.match(cc.body.error_description, new RegExp(`${client.clientId}.*administrator`));
  const wide = await token(server, { grant_type: 'client_credentials', scope: 'user_access' }, auth);
  assert.equal(wide.body.error, 'invalid_scope', 'user_access would be every role of its user');
  const pw = await token(
    server,
    { grant_type: 'password', username: owner.name, password: owner.password, scope: 'farm_manager' },
    auth,
  );
  assert.equal(pw.body.error, 'invalid_scope');
  const agent = new FormAgent(server.url);
  const landed = await agent.authorize(
    { response_type: 'code', client_id: client.clientId, redirect_uri: LOOPBACK, scope: 'farm_worker' },
    admin,
  );
  assert.equal(landed.searchParams.get('error'), 'invalid_scope');
  const ok = await token(server, { grant_type: 'client_credentials' }, auth);
  assert.equal(ok.status, 200);
  assert.equal(ok.body.scope, 'farm_viewer', 'its registered scope');
  // The default client may be asked for any role, as farmOS.js and farmOS.py do.
  assert.equal((await passwordGrant(server, ADMIN.name, ADMIN.password, 'farm_manager')).scope, 'farm_manager');
});
