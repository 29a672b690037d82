// The default client `farm` exists from the first start (farmos-behaviour.md §6.2): public, no
// secret, the password, refresh token and authorization code grants, the server's base URL and
// loopback callbacks on any port as redirect URIs, and user_access as its default scope.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createTestDatabase, startTestServer, ADMIN } from '../support/server.ts';
import { findClient, listClients, redirectUriMatches } from '../../runtime/oauth/clients.ts';
import { passwordGrant } from './helpers.ts';

test('farm is created on first start as documented, once, and follows a new base URL', async (t) => {
  const database = await createTestDatabase();
  t.after(() => database.drop());
  const first = await startTestServer({ database });
  const farm = await findClient(first.ctx.db.knex, 'farm');
  assert.ok(farm);
  assert.equal(farm.label, 'Farm default');
  assert.equal(farm.confidential, false);
  assert.equal(farm.secretHash, null);
  assert.deepEqual(farm.grantTypes, ['password', 'refresh_token', 'authorization_code']);
  assert.deepEqual(farm.redirectUris, [first.url, 'http://127.0.0.1/callback', 'http://[::1]/callback']);
  assert.deepEqual(farm.defaultScopes, ['user_access']);
  const token = await passwordGrant(first, ADMIN.name, ADMIN.password);
  await first.close();

  const second = await startTestServer({ database, env: { TILTH_BASE_URL: 'https://farm.example.com' } });
  t.after(() => second.close());
  const clients = await listClients(second.ctx.db.knex);
  assert.equal(clients.filter((c) => c.clientId === 'farm').length, 1);
  assert.deepEqual(clients.find((c) => c.clientId === 'farm')!.redirectUris, [
    'https://farm.example.com',
    'http://127.0.0.1/callback',
    'http://[::1]/callback',
  ]);
  const refreshed = await fetch(`http://127.0.0.1:${second.config.port}/oauth/token`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: token.refresh_token, client_id: 'farm' }),
  });
  assert.equal(refreshed.status, 200, 'tokens survive a restart: they live in the database');
});

test('loopback redirect URIs match on any port, and nothing else is loosened (RFC 8252 §7.3)', () => {
  const yes: Array<[string, string]> = [
    ['http://127.0.0.1/callback', 'http://127.0.0.1:51234/callback'],
    ['http://127.0.0.1/callback', 'http://127.0.0.1/callback'],
    ['http://[::1]/callback', 'http://[::1]:8080/callback'],
    ['https://app.example.com/cb', 'https://app.example.com/cb'],
  ];
  const no: Array<[string, string]> = [
    ['http://127.0.0.1/callback', 'http://127.0.0.1:51234/callback/'],
    ['http://127.0.0.1/callback', 'http://127.0.0.1:51234/other'],
    ['http://127.0.0.1/callback', 'http://127.0.0.1:99999/callback'],
    ['http://127.0.0.1/callback', 'http://localhost:51234/callback'],
    ['http://127.0.0.1/callback', 'http://127.0.0.1.evil.com:51234/callback'],
    ['http://127.0.0.1/callback', 'http://[::1]:51234/callback'],
    ['https://app.example.com/cb', 'https://app.example.com:8443/cb'],
    ['https://app.example.com/cb', 'https://app.example.com/cb?x=1'],
    ['https://app.example.com/cb', 'https://APP.example.com/cb'],
  ];
  for (const [registered, candidate] of yes)
    assert.ok(redirectUriMatches(registered, candidate), `${candidate} matches ${registered}`);
  for (const [registered, candidate] of no)
    assert.ok(!redirectUriMatches(registered, candidate), `${candidate} does not match ${registered}`);
});
