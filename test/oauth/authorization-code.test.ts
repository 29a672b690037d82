// The authorization code grant over plain HTTP (the browser test walks the same pages in
// Chromium): login, consent, the redirect with code and state, PKCE, single use, exact redirect
// URIs, and the errors that are shown to the user versus those redirected to the client.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, ADMIN, type TestServer } from '../support/server.ts';
import { hashSecret } from '../../runtime/oauth/secrets.ts';
import { addClient, addUser, api, basic, FormAgent, hiddenField, pkce, token } from './helpers.ts';

let server: TestServer;
before(async () => {
  server = await startTestServer();
});
after(() => server.close());

const LOOPBACK = 'http://127.0.0.1:45678/callback';
const admin = { name: ADMIN.name, password: ADMIN.password };

function exchange(code: string, redirectUri: string, extra: Record<string, string> = {}) {
  return token(server, {
    grant_type: 'authorization_code',
    code,
    redirect_uri: redirectUri,
    client_id: 'farm',
    ...extra,
  });
}

test('farm: login, consent, redirect with code and state, then tokens with PKCE', async () => {
  const agent = new FormAgent(server.url);
  const { verifier, challenge } = pkce();
  const query = {
    response_type: 'code',
    client_id: 'farm',
    redirect_uri: LOOPBACK,
    scope: 'farm_manager',
    state: 'st<a>te&1',
    code_challenge: challenge,
    code_challenge_method: 'S256',
  };

  const loginPage = await agent.get(`/oauth/authorize?${new URLSearchParams(query)}`);
  assert.equal(loginPage.status, 200);
  assert.match(loginPage.text, /Sign in to authorize Farm default/);
  const csp = loginPage.headers.get('content-security-policy') ?? '';
  assert.match(csp, /form-action 'self'/);
  assert.match(csp, /default-src 'none'/);
  assert.equal(loginPage.headers.get('cache-control'), 'no-store');

  const login = await agent.login(loginPage.text, admin.name, admin.password);
  assert.equal(login.status, 303);
  const cookie = login.headers.getSetCookie().find((c) => c.startsWith('tilth_session='));
  assert.ok(cookie);
  assert.match(cookie, /HttpOnly/);
  assert.match(cookie, /SameSite=Lax/);
  // The whole site's: the web interface (/farm) shares the sign-in (issue 38, Screens 1).
  assert.match(cookie, /Path=\/;/);

  const consent = await agent.get(login.location!);
  assert.equal(consent.status, 200);
  assert.match(consent.text, /Authorize Farm default\?/);
  assert.match(consent.text, /farm_manager \(Manager\)/);
  assert.match(consent.headers.get('content-security-policy') ?? '', /form-action 'self' http:\/\/127\.0\.0\.1:45678/);

  const answer = await agent.post('/oauth/authorize/decision', {
    transaction_id: hiddenField(consent.text, 'transaction_id'),
    csrf_token: hiddenField(consent.text, 'csrf_token'),
    decision: 'allow',
  });
  assert.equal(answer.status, 302);
  const redirect = new URL(answer.location!);
  assert.equal(`${redirect.origin}${redirect.pathname}`, LOOPBACK);
  assert.equal(redirect.searchParams.get('state'), 'st<a>te&1');
  const code = redirect.searchParams.get('code')!;
  assert.match(code, /^[A-Za-z0-9_-]{43}$/);

  const res = await exchange(code, LOOPBACK, { code_verifier: verifier });
  assert.equal(res.status, 200, res.text);
  assert.equal(res.body.token_type, 'Bearer');
  assert.equal(res.body.scope, 'farm_manager');
  assert.ok(res.body.refresh_token);
  const me = await api(`${server.url}/api`, res.body.access_token);
  assert.equal(me.status, 200);
  assert.ok(me.body.meta.links.me);
});

test('a signed-in browser goes straight to the consent page; codes are stored only as hashes', async () => {
  const agent = new FormAgent(server.url);
  const first = await agent.authorize({ response_type: 'code', client_id: 'farm', redirect_uri: LOOPBACK }, admin);
  const again = await agent.get(
    `/oauth/authorize?${new URLSearchParams({ response_type: 'code', client_id: 'farm', redirect_uri: LOOPBACK })}`,
  );
  assert.equal(again.status, 200);
  assert.match(again.text, /\/oauth\/authorize\/decision/);
  const code = first.searchParams.get('code')!;
  const rows = await server.ctx.db.knex('oauth_authorization_codes').select('code_hash');
  assert.ok(rows.some((r: { code_hash: string }) => r.code_hash === hashSecret(code)));
  assert.ok(!JSON.stringify(rows).includes(code));
});

test('deny redirects with error=access_denied and the state', async () => {
  const agent = new FormAgent(server.url);
  const url = await agent.authorize(
    { response_type: 'code', client_id: 'farm', redirect_uri: LOOPBACK, state: 'abc' },
    admin,
    'deny',
  );
  assert.equal(url.searchParams.get('error'), 'access_denied');
  assert.equal(url.searchParams.get('state'), 'abc');
  assert.equal(url.searchParams.get('code'), null);
});

test('a code is single-use: a second exchange is invalid_grant and revokes the tokens of the first', async () => {
  const agent = new FormAgent(server.url);
  const url = await agent.authorize({ response_type: 'code', client_id: 'farm', redirect_uri: LOOPBACK }, admin);
  const code = url.searchParams.get('code')!;
  const first = await exchange(code, LOOPBACK);
  assert.equal(first.status, 200);
  const second = await exchange(code, LOOPBACK);
  assert.equal(second.status, 400);
  assert.equal(second.body.error, 'invalid_grant');
  assert.equal((await api(`${server.url}/api`, first.body.access_token)).status, 401);
  assert.equal(
    (await token(server, { grant_type: 'refresh_token', refresh_token: first.body.refresh_token, client_id: 'farm' }))
      .status,
    400,
  );
});

test('a code expires after the configured lifetime', async () => {
  const agent = new FormAgent(server.url);
  const url = await agent.authorize({ response_type: 'code', client_id: 'farm', redirect_uri: LOOPBACK }, admin);
  const code = url.searchParams.get('code')!;
  const row = await server.ctx.db
    .knex('oauth_authorization_codes')
    .where('code_hash', hashSecret(code))
    .first('created', 'expires');
  assert.equal(Number(row.expires) - Number(row.created), server.config.authorizationCodeLifetime);
  await server.ctx.db
    .knex('oauth_authorization_codes')
    .where('code_hash', hashSecret(code))
    .update({ expires: Math.floor(Date.now() / 1000) - 1 });
  const res = await exchange(code, LOOPBACK);
  assert.equal(res.status, 400);
  assert.equal(res.body.error, 'invalid_grant');
});

test('the exchange must repeat the redirect_uri exactly, and PKCE must verify', async () => {
  const agent = new FormAgent(server.url);
  const { verifier, challenge } = pkce();
  const codeOf = async () =>
    (
      await agent.authorize(
        {
          response_type: 'code',
          client_id: 'farm',
          redirect_uri: LOOPBACK,
          code_challenge: challenge,
          code_challenge_method: 'S256',
        },
        admin,
      )
    ).searchParams.get('code')!;
  for (const [redirectUri, extra, why] of [
    ['http://127.0.0.1:45679/callback', { code_verifier: verifier }, 'another port'],
    [LOOPBACK, {}, 'no verifier'],
    [LOOPBACK, { code_verifier: pkce().verifier }, 'another verifier'],
    [LOOPBACK, { code_verifier: 'short' }, 'a malformed verifier'],
  ] as const) {
    const res = await exchange(await codeOf(), redirectUri, extra);
    assert.equal(res.status, 400, why);
    assert.equal(res.body.error, 'invalid_grant', why);
  }
  const plain = (
    await agent.authorize({ response_type: 'code', client_id: 'farm', redirect_uri: LOOPBACK }, admin)
  ).searchParams.get('code')!;
  const downgrade = await exchange(plain, LOOPBACK, { code_verifier: verifier });
  assert.equal(downgrade.body.error, 'invalid_grant', 'a verifier without a challenge is refused');
  assert.equal((await exchange(await codeOf(), LOOPBACK, { code_verifier: verifier })).status, 200);
});

test('a code works only for its client', async () => {
  const { client, secret } = await addClient(server, {
    confidential: true,
    grantTypes: ['authorization_code'],
    redirectUris: ['https://app.example.com/cb'],
  });
  const agent = new FormAgent(server.url);
  const url = await agent.authorize({ response_type: 'code', client_id: 'farm', redirect_uri: LOOPBACK }, admin);
  const res = await token(
    server,
    { grant_type: 'authorization_code', code: url.searchParams.get('code')!, redirect_uri: LOOPBACK },
    { Authorization: basic(client.clientId, secret!) },
  );
  assert.equal(res.status, 400);
  assert.equal(res.body.error, 'invalid_grant');
});

test('a confidential third-party client: its only redirect URI is the default, PKCE optional, the secret required', async () => {
  const user = await addUser(server, ['farm_viewer']);
  const { client, secret } = await addClient(server, {
    label: 'Weather <Station>',
    confidential: true,
    grantTypes: ['authorization_code', 'refresh_token'],
    redirectUris: ['https://weather.example.com/oauth/cb'],
    defaultScopes: ['farm_viewer'],
  });
  const agent = new FormAgent(server.url);
  const page = await agent.get(
    `/oauth/authorize?${new URLSearchParams({ response_type: 'code', client_id: client.clientId })}`,
  );
  assert.match(page.text, /Sign in to authorize Weather &lt;Station&gt;/, 'the label is escaped');
  const url = await agent.authorize({ response_type: 'code', client_id: client.clientId, state: 's' }, user);
  assert.equal(`${url.origin}${url.pathname}`, 'https://weather.example.com/oauth/cb');
  const code = url.searchParams.get('code')!;
  const noSecret = await token(server, { grant_type: 'authorization_code', code, client_id: client.clientId });
  assert.equal(noSecret.status, 401);
  assert.equal(noSecret.body.error, 'invalid_client');
  // A request whose client fails to authenticate does not touch the code.
  const ok = await token(server, {
    grant_type: 'authorization_code',
    code,
    client_id: client.clientId,
    client_secret: secret!,
  });
  assert.equal(ok.status, 200, ok.text);
  assert.equal(ok.body.scope, 'farm_viewer');
  assert.ok(ok.body.refresh_token);
});

test('a public third-party client must use PKCE (S256 only)', async () => {
  const { client } = await addClient(server, {
    confidential: false,
    grantTypes: ['authorization_code'],
    redirectUris: ['http://127.0.0.1/cb'],
  });
  const agent = new FormAgent(server.url);
  const base = {
    response_type: 'code',
    client_id: client.clientId,
    redirect_uri: 'http://127.0.0.1:5000/cb',
    state: 'k',
  };
  const missing = await agent.authorize(base, admin);
  assert.equal(missing.searchParams.get('error'), 'invalid_request');
  assert.match(missing.searchParams.get('error_description')!, /PKCE/);
  assert.equal(missing.searchParams.get('state'), 'k');
  const { challenge, verifier } = pkce();
  const plainMethod = await agent.authorize(
    { ...base, code_challenge: challenge, code_challenge_method: 'plain' },
    admin,
  );
  assert.equal(plainMethod.searchParams.get('error'), 'invalid_request');
  const ok = await agent.authorize({ ...base, code_challenge: challenge, code_challenge_method: 'S256' }, admin);
  const res = await token(server, {
    grant_type: 'authorization_code',
    code: ok.searchParams.get('code')!,
    client_id: client.clientId,
    redirect_uri: base.redirect_uri,
    code_verifier: verifier,
  });
  assert.equal(res.status, 200, res.text);
  assert.equal(res.body.refresh_token, undefined, 'no refresh token without the refresh_token grant');
});

test('a bad client or redirect URI is shown to the user, never redirected', async () => {
  const agent = new FormAgent(server.url);
  const queries: Array<Record<string, string>> = [
    { response_type: 'code', client_id: 'nobody', redirect_uri: LOOPBACK },
    { response_type: 'code', client_id: 'farm', redirect_uri: 'https://evil.example.com/cb' },
    { response_type: 'code', client_id: 'farm', redirect_uri: 'http://localhost:45678/callback' },
    { response_type: 'code', client_id: 'farm', redirect_uri: 'http://127.0.0.1:45678/callback/../x' },
    { response_type: 'code', client_id: 'farm' },
    { response_type: 'code' },
  ];
  for (const query of queries) {
    const res = await agent.get(`/oauth/authorize?${new URLSearchParams(query)}`);
    assert.equal(res.status, 400, JSON.stringify(query));
    assert.equal(res.location, null);
    assert.match(res.headers.get('content-type') ?? '', /text\/html/);
  }
  const repeated = await agent.get(
    `/oauth/authorize?response_type=code&client_id=farm&client_id=farm&redirect_uri=${encodeURIComponent(LOOPBACK)}`,
  );
  assert.equal(repeated.status, 400);
});

test('other errors are redirected to the client with error and state', async () => {
  const agent = new FormAgent(server.url);
  const cases: Array<[Record<string, string>, string]> = [
    [{ response_type: 'code', scope: 'superuser' }, 'invalid_scope'],
    [{ response_type: 'code id_token' }, 'unsupported_response_type'],
    [{ response_type: 'token' }, 'unauthorized_client'],
    [{ response_type: 'code', code_challenge: 'x'.repeat(43) }, 'invalid_request'],
  ];
  for (const [query, error] of cases) {
    const res = await agent.get(
      `/oauth/authorize?${new URLSearchParams({ client_id: 'farm', redirect_uri: LOOPBACK, state: 'z', ...query })}`,
    );
    assert.equal(res.status, 302, error);
    const url = new URL(res.location!);
    const params = query.response_type === 'token' ? new URLSearchParams(url.hash.slice(1)) : url.searchParams;
    assert.equal(params.get('error'), error);
    assert.equal(params.get('state'), 'z');
  }
});

test('the login form refuses a wrong password, a missing CSRF token and a foreign return address', async () => {
  const agent = new FormAgent(server.url);
  const page = await agent.get(
    `/oauth/authorize?${new URLSearchParams({ response_type: 'code', client_id: 'farm', redirect_uri: LOOPBACK })}`,
  );
  const wrong = await agent.login(page.text, admin.name, 'not the password');
  assert.equal(wrong.status, 200);
  assert.match(wrong.text, /user name or password is wrong/);
  assert.equal(
    wrong.headers.getSetCookie().some((c) => c.startsWith('tilth_session=')),
    false,
  );
  const noCsrf = await agent.post('/oauth/login', {
    csrf_token: 'forged',
    return_to: hiddenField(page.text, 'return_to'),
    username: admin.name,
    password: admin.password,
  });
  assert.equal(noCsrf.status, 403);
  const elsewhere = await agent.post('/oauth/login', {
    csrf_token: hiddenField(page.text, 'csrf_token'),
    return_to: 'https://evil.example.com/',
    username: admin.name,
    password: admin.password,
  });
  assert.equal(elsewhere.status, 400);
  // Another browser's CSRF token is no good either.
  const other = new FormAgent(server.url);
  const otherPage = await other.get(
    `/oauth/authorize?${new URLSearchParams({ response_type: 'code', client_id: 'farm', redirect_uri: LOOPBACK })}`,
  );
  const crossed = await agent.post('/oauth/login', {
    csrf_token: hiddenField(otherPage.text, 'csrf_token'),
    return_to: hiddenField(page.text, 'return_to'),
    username: admin.name,
    password: admin.password,
  });
  assert.equal(crossed.status, 403);
});

test('the consent form refuses a wrong CSRF token, a transaction of another session, and a second answer', async () => {
  const agent = new FormAgent(server.url);
  const query = new URLSearchParams({ response_type: 'code', client_id: 'farm', redirect_uri: LOOPBACK });
  const loginPage = await agent.get(`/oauth/authorize?${query}`);
  await agent.login(loginPage.text, admin.name, admin.password);
  const consent = await agent.get(`/oauth/authorize?${query}`);
  const tid = hiddenField(consent.text, 'transaction_id');
  const csrf = hiddenField(consent.text, 'csrf_token');
  assert.equal(
    (await agent.post('/oauth/authorize/decision', { transaction_id: tid, csrf_token: 'x', decision: 'allow' })).status,
    403,
  );

  const intruder = new FormAgent(server.url);
  const intruderLogin = await intruder.get(`/oauth/authorize?${query}`);
  await intruder.login(intruderLogin.text, admin.name, admin.password);
  const intruderConsent = await intruder.get(`/oauth/authorize?${query}`);
  const stolen = await intruder.post('/oauth/authorize/decision', {
    transaction_id: tid,
    csrf_token: hiddenField(intruderConsent.text, 'csrf_token'),
    decision: 'allow',
  });
  assert.equal(stolen.status, 400, 'a transaction belongs to the session that saw it');

  const first = await agent.post('/oauth/authorize/decision', {
    transaction_id: tid,
    csrf_token: csrf,
    decision: 'allow',
  });
  assert.equal(first.status, 302);
  const second = await agent.post('/oauth/authorize/decision', {
    transaction_id: tid,
    csrf_token: csrf,
    decision: 'allow',
  });
  assert.equal(second.status, 400);
  assert.equal(second.location, null);

  const anonymous = new FormAgent(server.url);
  assert.equal(
    (await anonymous.post('/oauth/authorize/decision', { transaction_id: tid, csrf_token: csrf, decision: 'allow' }))
      .status,
    403,
  );
});

test('signing out from the consent page leads back to the login page', async () => {
  const agent = new FormAgent(server.url);
  const query = new URLSearchParams({ response_type: 'code', client_id: 'farm', redirect_uri: LOOPBACK });
  const loginPage = await agent.get(`/oauth/authorize?${query}`);
  await agent.login(loginPage.text, admin.name, admin.password);
  const consent = await agent.get(`/oauth/authorize?${query}`);
  const out = await agent.post('/oauth/logout', {
    csrf_token: hiddenField(consent.text, 'csrf_token'),
    return_to: hiddenField(consent.text, 'return_to'),
  });
  assert.equal(out.status, 303);
  const back = await agent.get(out.location!);
  assert.match(back.text, /action="\/oauth\/login"/);
});

test('a code not yet exchanged when the password changes can no longer be exchanged', async () => {
  const user = await addUser(server, ['farm_worker']);
  const agent = new FormAgent(server.url);
  const code = (
    await agent.authorize({ response_type: 'code', client_id: 'farm', redirect_uri: LOOPBACK }, user)
  ).searchParams.get('code')!;
  const adminToken = (
    await token(server, { grant_type: 'password', client_id: 'farm', username: ADMIN.name, password: ADMIN.password })
  ).body.access_token;
  const set = await api(`${server.url}/api/user/user/${user.uuid}`, adminToken, {
    method: 'PATCH',
    headers: { 'Content-Type': 'application/vnd.api+json' },
    body: JSON.stringify({
      data: { type: 'user--user', id: user.uuid, attributes: { pass: { value: 'a-new-password-9' } } },
    }),
  });
  assert.equal(set.status, 200, set.text);
  const res = await exchange(code, LOOPBACK);
  assert.equal(res.status, 400, `the code from before the change: ${res.text}`);
  assert.equal(res.body.error, 'invalid_grant');
});
