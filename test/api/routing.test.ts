// Every router still answers all of its paths now that each sees only the requests under its own
// prefixes, and routers at one place in the chain share one test (http/scoped.ts): the front door,
// OAuth, OpenAPI, field module, metrics, data stream, language, configuration and change routes,
// including paths written in another case or with a trailing slash, which Express has always
// matched. A prefix list that missed a path would turn that path into "No route matches".
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { startTestServerAsAdmin, type TestServer } from '../support/server.ts';
import { request } from '../support/http.ts';

let server: TestServer;
let token: string;
before(async () => ({ server, token } = await startTestServerAsAdmin()));
after(() => server.close());

const unrouted = (text: string) => /No route matches/.test(text);

test('the OAuth and OpenAPI routes answer, in any case and with a trailing slash', async () => {
  for (const path of [
    '/.well-known/oauth-authorization-server',
    '/.WELL-KNOWN/OAuth-Authorization-Server',
    '/api/openapi.json',
    '/api/docs/',
    '/API/Docs',
    '/favicon.ico',
    '/oauth/session',
  ]) {
    const res = await request(`${server.url}${path}`);
    assert.equal(res.status, 200, `${path}: ${res.status} ${res.text.slice(0, 200)}`);
  }
  const form = (path: string) =>
    request(`${server.url}${path}`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: 'grant_type=client_credentials&client_id=farm',
    });
  for (const path of ['/oauth/token', '/OAuth/Token/']) {
    const res = await form(path);
    assert.equal(
      res.status,
      400,
      `${path}: the token endpoint answers (the public client may not use client_credentials): ${res.text}`,
    );
    assert.equal(res.body.error, 'unauthorized_client');
  }
});

test('the front door, its script, metrics, field module scripts and the change feed answer in any case; a path beside them does not', async () => {
  for (const path of ['/', '/?from=bookmark', '/assets/front-door.js', '/Assets/Front-Door.JS']) {
    const res = await request(`${server.url}${path}`);
    assert.equal(res.status, 200, `${path}: ${res.status} ${res.text.slice(0, 200)}`);
    assert.match(
      res.headers.get('content-type') ?? '',
      path.toLowerCase().endsWith('.js') ? /javascript/ : /html/,
      path,
    );
  }
  for (const path of ['/metrics', '/METRICS/', '/api/changes?since=0', '/API/Changes?since=0']) {
    const res = await request(`${server.url}${path}`, { token });
    assert.equal(res.status, 200, `${path}: ${res.status} ${res.text.slice(0, 200)}`);
  }
  const script = await request(`${server.url}/fieldkit/js/no_such_module/index.js`);
  assert.equal(script.status, 404);
  assert.match(script.text, /There is no field module "no_such_module"/, 'the field module route answers for itself');
  // Exact paths are exact: the front door is not served under other names.
  for (const path of ['/index.html', '/assets/front-door.jsx', '/assets']) {
    const res = await request(`${server.url}${path}`);
    assert.equal(res.status, 404, `${path}: ${res.status}`);
    assert.ok(unrouted(res.text), `${path}: ${res.text.slice(0, 200)}`);
  }
});

test('every collection /api links to answers, configuration and language resources included', async () => {
  const api = await request(`${server.url}/api`, { token });
  const links = Object.entries(api.body.links as Record<string, { href: string }>).filter(
    ([name]) => name !== 'self' && name !== 'me',
  );
  assert.ok(
    links.some(([name]) => name.startsWith('configurable_language')),
    'languages are listed',
  );
  assert.ok(
    links.some(([name]) => name.startsWith('user_role')),
    'roles are listed',
  );
  for (const [name, link] of links) {
    const res = await request(link.href.replace(/^https?:\/\/[^/]+/, server.url), { token });
    assert.equal(res.status, 200, `${name}: ${res.status} ${res.text.slice(0, 200)}`);
  }
  const roles = await request(`${server.url}/api/user_role/user_role`, { token });
  const role = await request(`${server.url}/API/User_Role/User_Role/${roles.body.data[0].id}`, { token });
  assert.equal(role.status, 200, role.text.slice(0, 200));
  assert.equal(role.body.data.id, roles.body.data[0].id);
});

test('the data stream and sensor listener routes answer for themselves', async () => {
  for (const path of [
    `/api/data_stream/${randomUUID()}/data`,
    `/asset/${randomUUID()}/data/basic`,
    '/farm/sensor/listener/no-such-key',
  ]) {
    const res = await request(`${server.url}${path}`, { token });
    assert.ok(res.status === 404 || res.status === 403, `${path}: ${res.status}`);
    assert.ok(!unrouted(res.text), `${path} reaches its handler: ${res.text.slice(0, 200)}`);
  }
});

test('a path that is not valid percent-encoding is a 400 naming it, on every route, never a 500', async () => {
  for (const path of [
    '/api/data_stream/%E0/data',
    '/farm/sensor/listener/%E0%A4%A',
    '/asset/%/data/basic',
    '/system/files/%E0%A4%A',
  ]) {
    for (const method of ['GET', 'POST']) {
      const res = await request(`${server.url}${path}`, { method, token, ...(method === 'POST' ? { json: [] } : {}) });
      assert.equal(res.status, 400, `${method} ${path}: ${res.text.slice(0, 200)}`);
      assert.equal(res.body.errors[0].code, 'bad_request');
      assert.match(res.body.errors[0].detail, /percent-encod/);
    }
  }
});

test('a web page whose address is not valid percent-encoding is a plain 400 page, never a 500', async () => {
  for (const path of ['/farm/log/activity/%E0%A4%A', '/farm/asset/%/new']) {
    const res = await request(`${server.url}${path}`);
    assert.equal(res.status, 400, `${path}: ${res.text.slice(0, 200)}`);
    assert.match(res.headers.get('content-type') ?? '', /text\/html/);
    assert.match(res.text, /%XX escape/);
  }
});

test('a subrequest whose requestId is __proto__ gets its answer like any other', async () => {
  const res = await request(`${server.url}/subrequests?_format=json`, {
    method: 'POST',
    token,
    json: [
      { requestId: '__proto__', uri: '/api', action: 'view' },
      { requestId: 'constructor', uri: '/api/log/activity', action: 'view' },
    ],
  });
  assert.equal(res.status, 200, res.text.slice(0, 300));
  const parsed = JSON.parse(res.text);
  assert.deepEqual(Object.keys(parsed).sort(), ['__proto__', 'constructor']);
  assert.equal(JSON.parse(parsed['__proto__'].body).meta.links.me !== undefined, true);
});
