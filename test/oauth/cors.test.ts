// CORS follows the clients' allowed origins (any client's list, farmos-behaviour.md §8.1) on
// every response, allows PATCH, and answers OPTIONS preflights.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { connectionBeside, startTestServer, ADMIN, type TestServer } from '../support/server.ts';
import { addClient, token } from './helpers.ts';

let server: TestServer;
before(async () => {
  server = await startTestServer();
  await addClient(server, {
    confidential: false,
    grantTypes: ['password'],
    allowedOrigins: ['https://app.example.com', ' http://localhost:3000 '],
  });
  await addClient(server, {
    confidential: false,
    grantTypes: ['password'],
    allowedOrigins: ['https://other.example.org'],
  });
});
after(() => server.close());

test('a listed origin is echoed with credentials, headers and methods (PATCH included)', async () => {
  for (const origin of ['https://app.example.com', 'http://localhost:3000', 'https://other.example.org']) {
    const res = await fetch(`${server.url}/api`, { headers: { Origin: origin } });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('access-control-allow-origin'), origin);
    assert.equal(res.headers.get('access-control-allow-credentials'), 'true');
    assert.match(res.headers.get('access-control-allow-methods') ?? '', /\bPATCH\b/);
    for (const h of ['Content-Type', 'Authorization', 'Content-Disposition', 'X-CSRF-Token'])
      assert.match(res.headers.get('access-control-allow-headers') ?? '', new RegExp(h));
    assert.match(res.headers.get('vary') ?? '', /Origin/);
  }
});

test('an unlisted origin, or none, gets no CORS headers', async () => {
  for (const headers of [
    { Origin: 'https://evil.example.com' },
    { Origin: 'https://app.example.com.evil.example.com' },
    {},
  ] as Array<Record<string, string>>) {
    const res = await fetch(`${server.url}/api`, { headers });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('access-control-allow-origin'), null);
    assert.equal(res.headers.get('access-control-allow-credentials'), null);
  }
});

test('an origin listed or removed beside the server (another connection, as `tilth client` would) counts from the next request', async () => {
  const origin = 'https://late.example.net';
  const allowed = async () =>
    (await fetch(`${server.url}/api`, { headers: { Origin: origin } })).headers.get('access-control-allow-origin');
  // Run SQL as a command beside the server would: its own connection on SQLite, any on PostgreSQL.
  const beside = async (sql: string, ...bindings: unknown[]) => {
    if (server.dialect === 'postgres') return void (await server.ctx.db.knex.raw(sql, bindings as any[]));
    const other = connectionBeside(server);
    try {
      other.prepare(sql).run(...bindings);
    } finally {
      other.close();
    }
  };
  assert.equal(await allowed(), null, 'not listed yet');
  assert.equal(await allowed(), null, 'asked twice: the answer may be kept');
  await beside(
    'INSERT INTO oauth_client_origins (client_id, origin) SELECT id, ? FROM oauth_clients WHERE client_id = ?',
    origin,
    'farm',
  );
  assert.equal(await allowed(), origin, 'listed: echoed on the next request');
  assert.equal(await allowed(), origin);
  await beside('DELETE FROM oauth_client_origins WHERE origin = ?', origin);
  assert.equal(await allowed(), null, 'removed: no CORS headers on the next request');
});

test('OPTIONS is answered 200 with or without an Origin, on the API and the token endpoint', async () => {
  const preflight = await fetch(`${server.url}/api/log/activity`, {
    method: 'OPTIONS',
    headers: {
      Origin: 'https://app.example.com',
      'Access-Control-Request-Method': 'PATCH',
      'Access-Control-Request-Headers': 'authorization,content-type',
    },
  });
  assert.equal(preflight.status, 200);
  assert.equal(preflight.headers.get('access-control-allow-origin'), 'https://app.example.com');
  assert.match(preflight.headers.get('access-control-allow-methods') ?? '', /PATCH/);
  assert.equal((await fetch(`${server.url}/api`, { method: 'OPTIONS' })).status, 200);
  const tokenPreflight = await fetch(`${server.url}/oauth/token`, {
    method: 'OPTIONS',
    headers: { Origin: 'https://app.example.com', 'Access-Control-Request-Method': 'POST' },
  });
  assert.equal(tokenPreflight.status, 200);
  assert.equal(tokenPreflight.headers.get('access-control-allow-origin'), 'https://app.example.com');
});

test('errors carry the CORS headers too, so a browser app can read them', async () => {
  const res = await token(
    server,
    { grant_type: 'password', username: ADMIN.name, password: 'wrong', client_id: 'farm' },
    { Origin: 'https://app.example.com' },
  );
  assert.equal(res.status, 400);
  assert.equal(res.headers.get('access-control-allow-origin'), 'https://app.example.com');
  const api = await fetch(`${server.url}/api`, {
    headers: { Origin: 'https://app.example.com', Authorization: 'Bearer undefined' },
  });
  assert.equal(api.status, 401);
  assert.equal(api.headers.get('access-control-allow-origin'), 'https://app.example.com');
});

test('origins must be origins when a client is registered', async () => {
  await assert.rejects(
    addClient(server, { grantTypes: ['password'], allowedOrigins: ['https://app.example.com/path'] }),
    /not an origin/,
  );
  await assert.rejects(addClient(server, { grantTypes: ['password'], allowedOrigins: ['*'] }), /not an origin/);
});
