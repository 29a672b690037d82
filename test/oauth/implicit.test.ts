// The implicit grant (response_type=token): only for clients registered with it; the access
// token, its type, lifetime, scope and the state come back in the redirect URI's fragment.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, ADMIN, type TestServer } from '../support/server.ts';
import { addClient, api, FormAgent } from './helpers.ts';

let server: TestServer;
before(async () => {
  server = await startTestServer();
});
after(() => server.close());

const admin = { name: ADMIN.name, password: ADMIN.password };

test('allow: the token arrives in the fragment, without a refresh token', async () => {
  const { client } = await addClient(server, {
    label: 'Map viewer',
    confidential: false,
    grantTypes: ['implicit'],
    redirectUris: ['https://maps.example.com/cb?app=1'],
    defaultScopes: ['farm_viewer'],
  });
  const url = await new FormAgent(server.url).authorize(
    { response_type: 'token', client_id: client.clientId, state: 'f' },
    admin,
  );
  assert.equal(`${url.origin}${url.pathname}${url.search}`, 'https://maps.example.com/cb?app=1');
  const params = new URLSearchParams(url.hash.slice(1));
  assert.equal(params.get('token_type'), 'Bearer');
  assert.equal(params.get('expires_in'), '3600');
  assert.equal(params.get('scope'), 'farm_viewer');
  assert.equal(params.get('state'), 'f');
  assert.equal(params.get('refresh_token'), null);
  const me = await api(`${server.url}/api`, params.get('access_token')!);
  assert.equal(me.status, 200);
  assert.ok(me.body.meta.links.me);
});

test('deny: error=access_denied in the fragment', async () => {
  const { client } = await addClient(server, {
    confidential: false,
    grantTypes: ['implicit'],
    redirectUris: ['https://maps.example.com/cb'],
  });
  const url = await new FormAgent(server.url).authorize(
    { response_type: 'token', client_id: client.clientId, state: 'g' },
    admin,
    'deny',
  );
  const params = new URLSearchParams(url.hash.slice(1));
  assert.equal(params.get('error'), 'access_denied');
  assert.equal(params.get('state'), 'g');
  assert.equal(url.search, '');
});

test('a client without the implicit grant gets unauthorized_client in the fragment', async () => {
  const res = await new FormAgent(server.url).get(
    `/oauth/authorize?${new URLSearchParams({ response_type: 'token', client_id: 'farm', redirect_uri: server.url, state: 'h' })}`,
  );
  assert.equal(res.status, 302);
  const url = new URL(res.location!);
  const params = new URLSearchParams(url.hash.slice(1));
  assert.equal(params.get('error'), 'unauthorized_client');
  assert.equal(params.get('state'), 'h');
});
