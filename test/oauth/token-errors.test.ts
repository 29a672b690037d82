// Every error of the token endpoint, with RFC 6749 §5.2's codes and statuses: {error,
// error_description}, no caching, and a Basic challenge when the client tried HTTP Basic.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, ADMIN, type TestServer } from '../support/server.ts';
import { addClient, basic, token, type FormResponse } from './helpers.ts';

let server: TestServer;
before(async () => {
  server = await startTestServer();
});
after(() => server.close());

const password = { grant_type: 'password', username: ADMIN.name, password: ADMIN.password, client_id: 'farm' };

function assertError(res: FormResponse, status: number, error: string) {
  assert.equal(res.status, status, res.text);
  assert.equal(res.body.error, error, res.text);
  assert.equal(typeof res.body.error_description, 'string');
  assert.ok(res.body.error_description.length > 0);
  assert.equal(res.headers.get('cache-control'), 'no-store');
  assert.match(res.headers.get('content-type') ?? '', /^application\/json/);
}

test('invalid_request: missing grant_type, missing parameters, a repeated parameter, a body that is not a form', async () => {
  assertError(
    await token(server, { username: ADMIN.name, password: ADMIN.password, client_id: 'farm' }),
    400,
    'invalid_request',
  );
  assertError(
    await token(server, { grant_type: 'password', password: ADMIN.password, client_id: 'farm' }),
    400,
    'invalid_request',
  );
  assertError(
    await token(server, { grant_type: 'password', username: ADMIN.name, client_id: 'farm' }),
    400,
    'invalid_request',
  );
  assertError(await token(server, { grant_type: 'refresh_token', client_id: 'farm' }), 400, 'invalid_request');
  assertError(await token(server, { grant_type: 'authorization_code', client_id: 'farm' }), 400, 'invalid_request');
  assertError(
    await token(server, `grant_type=password&username=a&username=b&password=x&client_id=farm`),
    400,
    'invalid_request',
  );
  const json = await fetch(`${server.url}/oauth/token`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify(password),
  });
  assertError(
    { status: json.status, headers: json.headers, text: '', body: await json.json() },
    400,
    'invalid_request',
  );
  const none = await fetch(`${server.url}/oauth/token`, { method: 'POST' });
  assert.equal(none.status, 400);
  assert.equal(((await none.json()) as { error: string }).error, 'invalid_request');
});

test('invalid_request: HTTP Basic and client_secret together, or a body client_id that contradicts Basic', async () => {
  assertError(
    await token(server, { ...password, client_id: 'farm', client_secret: 'x' }, { Authorization: basic('farm', '') }),
    400,
    'invalid_request',
  );
  assertError(
    await token(server, { ...password, client_id: 'other' }, { Authorization: basic('farm', '') }),
    400,
    'invalid_request',
  );
});

test('invalid_client (401): no client, an unknown client, a confidential client without or with a wrong secret', async () => {
  const { client_id: _omit, ...noClient } = password;
  assertError(await token(server, noClient), 401, 'invalid_client');
  const unknown = await token(server, { ...password, client_id: 'nobody' });
  assertError(unknown, 401, 'invalid_client');
  assert.equal(unknown.headers.get('www-authenticate'), null, 'no Basic challenge when Basic was not tried');

  const viaBasic = await token(server, noClient, { Authorization: basic('nobody', 'secret') });
  assertError(viaBasic, 401, 'invalid_client');
  assert.equal(viaBasic.headers.get('www-authenticate'), 'Basic realm="tilth"');

  const { client, secret } = await addClient(server, { confidential: true, grantTypes: ['password', 'refresh_token'] });
  assertError(await token(server, { ...password, client_id: client.clientId }), 401, 'invalid_client');
  assertError(
    await token(server, { ...password, client_id: client.clientId, client_secret: 'wrong' }),
    401,
    'invalid_client',
  );
  assertError(
    await token(server, noClient, { Authorization: basic(client.clientId, `${secret}x`) }),
    401,
    'invalid_client',
  );
  // …and the right secret, either way, works.
  assert.equal((await token(server, { ...password, client_id: client.clientId, client_secret: secret! })).status, 200);
  assert.equal((await token(server, noClient, { Authorization: basic(client.clientId, secret!) })).status, 200);
});

test('invalid_grant: a wrong password, an unknown user, a bad code or refresh token', async () => {
  assertError(await token(server, { ...password, password: 'wrong password' }), 400, 'invalid_grant');
  assertError(await token(server, { ...password, username: 'nobody-at-all' }), 400, 'invalid_grant');
  assertError(
    await token(server, { grant_type: 'refresh_token', refresh_token: 'not-a-token', client_id: 'farm' }),
    400,
    'invalid_grant',
  );
  assertError(
    await token(server, {
      grant_type: 'authorization_code',
      code: 'not-a-code',
      client_id: 'farm',
      redirect_uri: server.url,
    }),
    400,
    'invalid_grant',
  );
});

test('unauthorized_client: a grant the client is not registered for', async () => {
  assertError(await token(server, { grant_type: 'client_credentials', client_id: 'farm' }), 400, 'unauthorized_client');
  const { client } = await addClient(server, {
    confidential: false,
    grantTypes: ['authorization_code'],
    redirectUris: ['https://app.example.com/cb'],
  });
  assertError(await token(server, { ...password, client_id: client.clientId }), 400, 'unauthorized_client');
});

test('unsupported_grant_type: a grant type the server does not know (and implicit is not a token-endpoint grant)', async () => {
  assertError(
    await token(server, { ...password, grant_type: 'urn:ietf:params:oauth:grant-type:device_code' }),
    400,
    'unsupported_grant_type',
  );
  assertError(await token(server, { ...password, grant_type: 'implicit' }), 400, 'unsupported_grant_type');
});

test('invalid_scope: an unknown scope, for any grant', async () => {
  assertError(await token(server, { ...password, scope: 'farm_manager superuser' }), 400, 'invalid_scope');
  const ok = await token(server, password);
  assertError(
    await token(server, {
      grant_type: 'refresh_token',
      refresh_token: ok.body.refresh_token,
      client_id: 'farm',
      scope: 'superuser',
    }),
    400,
    'invalid_scope',
  );
});

test('GET /oauth/token is not a token endpoint', async () => {
  const res = await fetch(`${server.url}/oauth/token`);
  assert.equal(res.status, 404);
});
