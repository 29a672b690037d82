// GET /.well-known/oauth-authorization-server (RFC 8414).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, type TestServer } from '../support/server.ts';

let server: TestServer;
before(async () => {
  server = await startTestServer();
});
after(() => server.close());

test('the metadata names the endpoints, scopes, grants and PKCE methods', async () => {
  const res = await fetch(`${server.url}/.well-known/oauth-authorization-server`);
  assert.equal(res.status, 200);
  assert.match(res.headers.get('content-type') ?? '', /^application\/json/);
  const body = (await res.json()) as Record<string, unknown>;
  assert.deepEqual(body, {
    issuer: server.url,
    authorization_endpoint: `${server.url}/oauth/authorize`,
    token_endpoint: `${server.url}/oauth/token`,
    revocation_endpoint: `${server.url}/oauth/revoke`,
    scopes_supported: [
      'farm_viewer',
      'farm_worker',
      'farm_manager',
      'farm_account_admin',
      'administrator',
      'user_access',
    ],
    response_types_supported: ['code', 'token'],
    response_modes_supported: ['query', 'fragment'],
    grant_types_supported: ['authorization_code', 'password', 'client_credentials', 'refresh_token', 'implicit'],
    token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post', 'none'],
    revocation_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post', 'none'],
    code_challenge_methods_supported: ['S256'],
  });
});
