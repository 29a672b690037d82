// POST /oauth/revoke (RFC 7009): a client revokes its own access or refresh tokens; 200 whatever
// the token; revoking a refresh token ends its whole chain.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, ADMIN, type TestServer } from '../support/server.ts';
import { addClient, api, basic, passwordGrant, postForm, token } from './helpers.ts';

let server: TestServer;
before(async () => {
  server = await startTestServer();
});
after(() => server.close());

const revoke = (form: Record<string, string>, headers: Record<string, string> = {}) =>
  postForm(`${server.url}/oauth/revoke`, form, headers);

test('revoking an access token ends it; its refresh token still works', async () => {
  const pair = await passwordGrant(server, ADMIN.name, ADMIN.password);
  const res = await revoke({ token: pair.access_token, token_type_hint: 'access_token', client_id: 'farm' });
  assert.equal(res.status, 200);
  assert.equal(res.text, '');
  assert.equal(res.headers.get('cache-control'), 'no-store');
  assert.equal((await api(`${server.url}/api`, pair.access_token)).status, 401);
  assert.equal(
    (await token(server, { grant_type: 'refresh_token', refresh_token: pair.refresh_token, client_id: 'farm' })).status,
    200,
  );
});

test('revoking a refresh token ends the chain, access token included; the hint is optional', async () => {
  const pair = await passwordGrant(server, ADMIN.name, ADMIN.password);
  assert.equal((await revoke({ token: pair.refresh_token, client_id: 'farm' })).status, 200);
  assert.equal((await api(`${server.url}/api`, pair.access_token)).status, 401);
  const again = await token(server, {
    grant_type: 'refresh_token',
    refresh_token: pair.refresh_token,
    client_id: 'farm',
  });
  assert.equal(again.status, 400);
  assert.equal(again.body.error, 'invalid_grant');
});

test('unknown tokens and wrong hints are answered 200; another client’s token is left alone', async () => {
  assert.equal((await revoke({ token: 'no-such-token', client_id: 'farm' })).status, 200);
  const pair = await passwordGrant(server, ADMIN.name, ADMIN.password);
  assert.equal(
    (await revoke({ token: pair.access_token, token_type_hint: 'refresh_token', client_id: 'farm' })).status,
    200,
  );
  assert.equal((await api(`${server.url}/api`, pair.access_token)).status, 401, 'a wrong hint still finds the token');

  const other = await passwordGrant(server, ADMIN.name, ADMIN.password);
  const { client, secret } = await addClient(server, { confidential: true, grantTypes: ['password'] });
  assert.equal(
    (await revoke({ token: other.access_token }, { Authorization: basic(client.clientId, secret!) })).status,
    200,
  );
  assert.equal((await api(`${server.url}/api`, other.access_token)).status, 200, 'not revoked: it belongs to farm');
});

test('errors: no token is invalid_request; a failed client authentication is invalid_client', async () => {
  const missing = await revoke({ client_id: 'farm' });
  assert.equal(missing.status, 400);
  assert.equal(missing.body.error, 'invalid_request');
  const noClient = await revoke({ token: 'x' });
  assert.equal(noClient.status, 401);
  assert.equal(noClient.body.error, 'invalid_client');
  const { client } = await addClient(server, { confidential: true, grantTypes: ['password'] });
  const wrong = await revoke({ token: 'x' }, { Authorization: basic(client.clientId, 'wrong') });
  assert.equal(wrong.status, 401);
  assert.equal(wrong.headers.get('www-authenticate'), 'Basic realm="tilth"');
});
