// The authorization pages cannot be used to fill the database (trust issue, item 7): the
// parameters of /oauth/authorize have length limits, a sign-in keeps at most 20 requests waiting
// for its decision (opening more drops the oldest), expired ones are deleted, and the route is
// rate-limited per client address.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, ADMIN, type TestServer } from '../support/server.ts';
import { FormAgent, hiddenField, pkce } from './helpers.ts';

let server: TestServer;
before(async () => {
  server = await startTestServer();
});
after(() => server.close());

const LOOPBACK = 'http://127.0.0.1:45678/callback';
const admin = { name: ADMIN.name, password: ADMIN.password };

const query = (extra: Record<string, string> = {}) =>
  `/oauth/authorize?${new URLSearchParams({ response_type: 'code', client_id: 'farm', redirect_uri: LOOPBACK, state: 'xyz', ...extra })}`;

/** An agent signed in as the administrator, and the consent page of its first request. */
async function signedIn(): Promise<FormAgent> {
  const agent = new FormAgent(server.url);
  const page = await agent.get(query());
  const login = await agent.login(page.text, admin.name, admin.password);
  assert.equal(login.status, 303, login.text);
  return agent;
}

const pending = async () => Number((await server.ctx.db.knex('oauth_authorize_requests').count({ n: '*' }).first())!.n);

test('a state of more than 2,048 characters is invalid_request, redirected without echoing it; 2,048 are fine', async () => {
  const agent = await signedIn();
  const before = await pending();
  const long = await agent.get(query({ state: 's'.repeat(2049) }));
  assert.equal(long.status, 302, long.text);
  const to = new URL(long.location!);
  assert.equal(`${to.origin}${to.pathname}`, LOOPBACK);
  assert.equal(to.searchParams.get('error'), 'invalid_request');
  assert.match(to.searchParams.get('error_description')!, /state.*2048/);
  assert.equal(to.searchParams.get('state'), null, 'a refused state is not sent back');
  assert.equal(await pending(), before, 'nothing is stored');

  const fits = await agent.get(query({ state: 's'.repeat(2048) }));
  assert.equal(fits.status, 200);
  assert.match(fits.text, /\/oauth\/authorize\/decision/);
});

test('scope and code_challenge have limits too (redirected); a too-long client_id or redirect_uri is an error page', async () => {
  const agent = await signedIn();
  const scope = await agent.get(query({ scope: Array(200).fill('farm_viewer').join(' ') }));
  assert.equal(scope.status, 302);
  assert.equal(new URL(scope.location!).searchParams.get('error'), 'invalid_request');
  assert.match(new URL(scope.location!).searchParams.get('error_description')!, /scope/);
  assert.equal(new URL(scope.location!).searchParams.get('state'), 'xyz');

  const challenge = await agent.get(query({ code_challenge: 'c'.repeat(5000), code_challenge_method: 'S256' }));
  assert.equal(challenge.status, 302);
  assert.equal(new URL(challenge.location!).searchParams.get('error'), 'invalid_request');

  const client = await agent.get(query({ client_id: 'c'.repeat(300) }));
  assert.equal(client.status, 400);
  assert.match(client.text, /client_id/);
  assert.equal(client.text.includes('c'.repeat(300)), false, 'the page does not repeat it');

  const redirect = await agent.get(query({ redirect_uri: `${LOOPBACK}?${'r'.repeat(3000)}` }));
  assert.equal(redirect.status, 400);
  assert.equal(redirect.location, null);
  assert.match(redirect.text, /redirect_uri/);
});

test('a sign-in keeps at most 20 requests waiting: the oldest is dropped, the newest still answers', async () => {
  const agent = await signedIn();
  const knex = server.ctx.db.knex;
  await knex('oauth_authorize_requests').delete();
  const first = await agent.get(
    query({ state: 'first', code_challenge: pkce().challenge, code_challenge_method: 'S256' }),
  );
  assert.equal(first.status, 200);
  // The first request was opened a minute ago (rows made in the same second have no order).
  await knex('oauth_authorize_requests').update({ created: Math.floor(Date.now() / 1000) - 60 });
  let last = first;
  for (let i = 0; i < 30; i++) {
    last = await agent.get(
      query({ state: `tab ${i}`, code_challenge: pkce().challenge, code_challenge_method: 'S256' }),
    );
    assert.equal(last.status, 200);
  }
  assert.equal(await pending(), 20);

  const answer = (page: { text: string }) =>
    agent.post('/oauth/authorize/decision', {
      transaction_id: hiddenField(page.text, 'transaction_id'),
      csrf_token: hiddenField(page.text, 'csrf_token'),
      decision: 'allow',
    });
  const newest = await answer(last);
  assert.equal(newest.status, 302);
  assert.equal(new URL(newest.location!).searchParams.get('state'), 'tab 29');
  assert.ok(new URL(newest.location!).searchParams.get('code'));
  const oldest = await answer(first);
  assert.equal(oldest.status, 400);
  assert.match(oldest.text, /expired, was already answered/);

  // Another sign-in has its own 20.
  const other = await signedIn();
  for (let i = 0; i < 3; i++) assert.equal((await other.get(query())).status, 200);
  assert.equal(await pending(), 19 + 3);
});

test('expired requests are deleted, not only refused', async () => {
  const agent = await signedIn();
  const knex = server.ctx.db.knex;
  for (let i = 0; i < 5; i++) assert.equal((await agent.get(query())).status, 200);
  const t = Math.floor(Date.now() / 1000);
  await knex('oauth_authorize_requests').update({ created: t - 700, expires: t - 100 });
  const expired = await pending();
  assert.ok(expired >= 5);
  // Any new request sweeps the expired ones of every sign-in.
  const fresh = await signedIn();
  assert.equal((await fresh.get(query())).status, 200);
  assert.equal(await pending(), 1, 'the new request is the only one left');
});

test('GET /oauth/authorize counts against the client address’s rate limit: 429 with Retry-After', async (t) => {
  const limited = await startTestServer({ env: { TILTH_RATE_LIMIT_PER_ADDRESS: '5' } });
  t.after(() => limited.close());
  const agent = new FormAgent(limited.url);
  for (let i = 0; i < 5; i++) assert.equal((await agent.get(query())).status, 200);
  const refused = await agent.get(query());
  assert.equal(refused.status, 429);
  assert.ok(Number(refused.headers.get('retry-after')) >= 1);
  assert.match(refused.text, /Too many requests/);
  assert.match(refused.headers.get('content-type') ?? '', /text\/html/);
});
