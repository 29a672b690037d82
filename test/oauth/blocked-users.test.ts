// Blocked users can neither get tokens (invalid_grant) nor use the ones they hold (401).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, type TestServer } from '../support/server.ts';
import { setBlocked } from '../../runtime/accounts/users.ts';
import { addUser, api, FormAgent, passwordGrant, token } from './helpers.ts';

let server: TestServer;
before(async () => {
  server = await startTestServer();
});
after(() => server.close());

test('a blocked user’s tokens stop working at once, and no new ones are issued', async () => {
  const user = await addUser(server, ['farm_worker']);
  const pair = await passwordGrant(server, user.name, user.password);
  assert.equal((await api(`${server.url}/api`, pair.access_token)).status, 200);

  await setBlocked(server.ctx.db.knex, user.name, true);
  const use = await api(`${server.url}/api`, pair.access_token);
  assert.equal(use.status, 401);
  assert.match(use.headers.get('www-authenticate') ?? '', /error="invalid_token"/);
  assert.match(use.body.errors[0].detail, /blocked/);

  const login = await token(server, {
    grant_type: 'password',
    username: user.name,
    password: user.password,
    client_id: 'farm',
  });
  assert.equal(login.status, 400);
  assert.equal(login.body.error, 'invalid_grant');
  const refresh = await token(server, {
    grant_type: 'refresh_token',
    refresh_token: pair.refresh_token,
    client_id: 'farm',
  });
  assert.equal(refresh.status, 400);
  assert.equal(refresh.body.error, 'invalid_grant');

  const agent = new FormAgent(server.url);
  const page = await agent.get(
    `/oauth/authorize?${new URLSearchParams({ response_type: 'code', client_id: 'farm', redirect_uri: 'http://127.0.0.1:9/callback' })}`,
  );
  const form = await agent.login(page.text, user.name, user.password);
  assert.equal(form.status, 200);
  assert.match(form.text, /blocked/);
});

test('a user blocked while signed in to the consent page is asked to sign in again', async () => {
  const user = await addUser(server, ['farm_worker']);
  const agent = new FormAgent(server.url);
  const query = new URLSearchParams({
    response_type: 'code',
    client_id: 'farm',
    redirect_uri: 'http://127.0.0.1:9/callback',
  });
  const page = await agent.get(`/oauth/authorize?${query}`);
  await agent.login(page.text, user.name, user.password);
  assert.match((await agent.get(`/oauth/authorize?${query}`)).text, /authorize\/decision/);
  await setBlocked(server.ctx.db.knex, user.name, true);
  assert.match((await agent.get(`/oauth/authorize?${query}`)).text, /action="\/oauth\/login"/);
});

test('a blocked account answers a wrong password as it answers the right one, so a guesser learns nothing of the password', async () => {
  const user = await addUser(server, ['farm_worker']);
  await setBlocked(server.ctx.db.knex, user.name, true);
  const attempt = async (password: string) => {
    const res = await token(server, { grant_type: 'password', username: user.name, password, client_id: 'farm' });
    return { status: res.status, body: res.body };
  };
  assert.deepEqual(await attempt('not the password'), await attempt(user.password));

  const agent = new FormAgent(server.url);
  const form = async (password: string) => {
    const page = await agent.get(
      `/oauth/authorize?${new URLSearchParams({ response_type: 'code', client_id: 'farm', redirect_uri: 'http://127.0.0.1:9/callback' })}`,
    );
    const res = await agent.login(page.text, user.name, password);
    return { status: res.status, message: /<p class="error"[^>]*>([^<]*)</.exec(res.text)?.[1] ?? res.text };
  };
  assert.deepEqual(await form('not the password'), await form(user.password));
});
