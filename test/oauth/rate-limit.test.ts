// Rate limits of the token endpoint, the authorization pages and the login form: failed password checks per user name,
// and requests per client address; 429 with Retry-After (an OAuth error body at /oauth/token).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, ADMIN } from '../support/server.ts';
import { addUser, FormAgent, token } from './helpers.ts';

test('per user name: after the limit of failures, even the right password waits; other users are not held back', async (t) => {
  const server = await startTestServer({ env: { TILTH_RATE_LIMIT_PER_USERNAME: '3' } });
  t.after(() => server.close());
  const other = await addUser(server, ['farm_viewer']);
  const attempt = (username: string, password: string) => token(server, { grant_type: 'password', username, password, client_id: 'farm' });
  for (let i = 0; i < 3; i++) assert.equal((await attempt(ADMIN.name, `guess ${i}`)).body.error, 'invalid_grant');
  const limited = await attempt(ADMIN.name, ADMIN.password);
  assert.equal(limited.status, 429);
  assert.equal(limited.body.error, 'slow_down');
  assert.ok(limited.body.error_description);
  const retryAfter = Number(limited.headers.get('retry-after'));
  assert.ok(retryAfter >= 1 && retryAfter <= 60, `Retry-After ${retryAfter}`);
  assert.equal((await attempt(` ${ADMIN.name.toUpperCase()} `, ADMIN.password)).status, 429, 'case and spaces do not make a new name');
  assert.equal((await attempt(other.name, other.password)).status, 200);

  // The login form shares the count.
  const agent = new FormAgent(server.url);
  const page = await agent.get(`/oauth/authorize?${new URLSearchParams({ response_type: 'code', client_id: 'farm', redirect_uri: 'http://127.0.0.1:1234/callback' })}`);
  const login = await agent.login(page.text, ADMIN.name, ADMIN.password);
  assert.equal(login.status, 429);
  assert.ok(Number(login.headers.get('retry-after')) >= 1);
});

test('a success clears the count of failures', async (t) => {
  const server = await startTestServer({ env: { TILTH_RATE_LIMIT_PER_USERNAME: '3' } });
  t.after(() => server.close());
  const attempt = (password: string) => token(server, { grant_type: 'password', username: ADMIN.name, password, client_id: 'farm' });
  for (let round = 0; round < 3; round++) {
    assert.equal((await attempt('wrong')).status, 400);
    assert.equal((await attempt('wrong')).status, 400);
    assert.equal((await attempt(ADMIN.password)).status, 200);
  }
});

test('per client address: every request to the token endpoint, the authorization pages and the login form counts', async (t) => {
  const server = await startTestServer({ env: { TILTH_RATE_LIMIT_PER_ADDRESS: '5' } });
  t.after(() => server.close());
  const agent = new FormAgent(server.url);
  const page = await agent.get(`/oauth/authorize?${new URLSearchParams({ response_type: 'code', client_id: 'farm', redirect_uri: 'http://127.0.0.1:1234/callback' })}`);
  assert.equal(page.status, 200);
  for (let i = 0; i < 4; i++) assert.notEqual((await token(server, { grant_type: 'password', username: `u${i}`, password: 'p', client_id: 'farm' })).status, 429);
  const limited = await token(server, { grant_type: 'password', username: ADMIN.name, password: ADMIN.password, client_id: 'farm' });
  assert.equal(limited.status, 429);
  assert.equal(limited.body.error, 'slow_down');
  assert.ok(Number(limited.headers.get('retry-after')) >= 1);
  assert.equal((await agent.login(page.text, ADMIN.name, ADMIN.password)).status, 429);
  const again = await agent.get(`/oauth/authorize?${new URLSearchParams({ response_type: 'code', client_id: 'farm', redirect_uri: 'http://127.0.0.1:1234/callback' })}`);
  assert.equal(again.status, 429);
  assert.ok(Number(again.headers.get('retry-after')) >= 1);
});

test('behind a trusted proxy the address is taken from X-Forwarded-For', async (t) => {
  const server = await startTestServer({ env: { TILTH_RATE_LIMIT_PER_ADDRESS: '2', TILTH_TRUST_PROXY: '1' } });
  t.after(() => server.close());
  const from = (address: string) => token(server, { grant_type: 'password', username: 'x', password: 'y', client_id: 'farm' }, { 'X-Forwarded-For': `203.0.113.9, ${address}` });
  assert.equal((await from('198.51.100.1')).status, 400);
  assert.equal((await from('198.51.100.1')).status, 400);
  assert.equal((await from('198.51.100.1')).status, 429);
  assert.equal((await from('198.51.100.2')).status, 400, 'another client behind the proxy has its own count');
});

test('the defaults are generous: a script refreshing forty times in a row is never limited', async (t) => {
  const server = await startTestServer();
  t.after(() => server.close());
  assert.equal(server.config.rateLimit.perAddress, 300);
  assert.equal(server.config.rateLimit.perUsername, 20);
  let pair = (await token(server, { grant_type: 'password', username: ADMIN.name, password: ADMIN.password, client_id: 'farm' })).body;
  for (let i = 0; i < 40; i++) {
    const res = await token(server, { grant_type: 'refresh_token', refresh_token: pair.refresh_token, client_id: 'farm' });
    assert.equal(res.status, 200, `refresh ${i}: ${res.text}`);
    pair = res.body;
  }
});
