// The client credentials grant: confidential clients only, acting as the user they were
// registered with, their scopes intersected with that user's roles; no refresh token.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, type TestServer } from '../support/server.ts';
import { addClient, addUser, api, basic, token } from './helpers.ts';

let server: TestServer;
before(async () => {
  server = await startTestServer();
});
after(() => server.close());

test('a confidential client gets an access token (no refresh token) acting as its user', async () => {
  const user = await addUser(server, ['farm_worker']);
  const { client, secret } = await addClient(server, {
    confidential: true,
    grantTypes: ['client_credentials'],
    userName: user.name,
    defaultScopes: ['farm_worker'],
  });
  const ways: Array<{ headers: Record<string, string>; form: Record<string, string> }> = [
    { headers: { Authorization: basic(client.clientId, secret!) }, form: {} },
    { headers: {}, form: { client_id: client.clientId, client_secret: secret! } },
  ];
  for (const auth of ways) {
    const res = await token(server, { grant_type: 'client_credentials', ...auth.form }, auth.headers);
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.token_type, 'Bearer');
    assert.equal(res.body.scope, 'farm_worker');
    assert.equal(res.body.expires_in, 3600);
    assert.equal(res.body.refresh_token, undefined);
    const me = await api(`${server.url}/api`, res.body.access_token);
    assert.equal(me.status, 200);
    assert.equal(me.body.meta.links.me.meta.id, user.uuid, 'the token acts as the registered user');
  }
});

test('a requested scope is granted as asked; a scope beyond the user’s roles adds nothing', async () => {
  const viewer = await addUser(server, ['farm_viewer']);
  // Registered for farm_manager: a client may ask only for its registered scopes (attacks.test.ts).
  const { client, secret } = await addClient(server, {
    confidential: true,
    grantTypes: ['client_credentials'],
    userName: viewer.name,
    defaultScopes: ['farm_manager'],
  });
  const res = await token(
    server,
    { grant_type: 'client_credentials', scope: 'farm_manager' },
    { Authorization: basic(client.clientId, secret!) },
  );
  assert.equal(res.status, 200);
  assert.equal(res.body.scope, 'farm_manager');
  const { principalOfToken } = await import('../../runtime/oauth/bearer.ts');
  const principal = await principalOfToken(server.ctx.db.knex, res.body.access_token);
  assert.ok(typeof principal === 'object');
  assert.deepEqual([...principal.permissions].sort(), ['content:view', 'language:view', 'taxonomy:view', 'user:view']);
  assert.equal(principal.clientId, client.clientId);
  assert.equal(principal.userName, viewer.name);
});

test('errors: a wrong secret, an unknown scope, a blocked user', async () => {
  const user = await addUser(server, ['farm_manager']);
  const { client, secret } = await addClient(server, {
    confidential: true,
    grantTypes: ['client_credentials'],
    userName: user.name,
  });
  const wrong = await token(
    server,
    { grant_type: 'client_credentials' },
    { Authorization: basic(client.clientId, 'nope') },
  );
  assert.equal(wrong.status, 401);
  assert.equal(wrong.body.error, 'invalid_client');
  const scope = await token(
    server,
    { grant_type: 'client_credentials', scope: 'root' },
    { Authorization: basic(client.clientId, secret!) },
  );
  assert.equal(scope.status, 400);
  assert.equal(scope.body.error, 'invalid_scope');
  await server.ctx.db.knex('users').where('id', user.id).update({ status: false });
  const blocked = await token(
    server,
    { grant_type: 'client_credentials' },
    { Authorization: basic(client.clientId, secret!) },
  );
  assert.equal(blocked.status, 400);
  assert.equal(blocked.body.error, 'invalid_grant');
});

test('public clients cannot be registered for client_credentials, and farm is refused it', async () => {
  await assert.rejects(
    addClient(server, { confidential: false, grantTypes: ['client_credentials'], userName: 'admin' }),
    /confidential/,
  );
  await assert.rejects(addClient(server, { confidential: true, grantTypes: ['client_credentials'] }), /--user/);
  const res = await token(server, { grant_type: 'client_credentials', client_id: 'farm' });
  assert.equal(res.status, 400);
  assert.equal(res.body.error, 'unauthorized_client');
});
