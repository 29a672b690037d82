// Rate limits of the token endpoint, the authorization pages and the login form: failed password checks per user name,
// and requests per client address; 429 with Retry-After (an OAuth error body at /oauth/token).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, ADMIN } from '../support/server.ts';
import { addUser, FormAgent, token } from './helpers.ts';
import { limiterFor } from '../../runtime/access/rate-limiter.ts';

test('per user name: after the limit of failures, even the right password waits; other users are not held back', async (t) => {
  const server = await startTestServer({ env: { TILTH_RATE_LIMIT_PER_USERNAME: '3' } });
  t.after(() => server.close());
  const other = await addUser(server, ['farm_viewer']);
  const attempt = (username: string, password: string) =>
    token(server, { grant_type: 'password', username, password, client_id: 'farm' });
  for (let i = 0; i < 3; i++) assert.equal((await attempt(ADMIN.name, `guess ${i}`)).body.error, 'invalid_grant');
  const limited = await attempt(ADMIN.name, ADMIN.password);
  assert.equal(limited.status, 429);
  assert.equal(limited.body.error, 'slow_down');
  assert.ok(limited.body.error_description);
  const retryAfter = Number(limited.headers.get('retry-after'));
  assert.ok(retryAfter >= 1 && retryAfter <= 60, `Retry-After ${retryAfter}`);
  assert.equal(
    (await attempt(` ${ADMIN.name.toUpperCase()} `, ADMIN.password)).status,
    429,
    'case and spaces do not make a new name',
  );
  assert.equal((await attempt(other.name, other.password)).status, 200);

  // The login form shares the count.
  const agent = new FormAgent(server.url);
  const page = await agent.get(
    `/oauth/authorize?${new URLSearchParams({ response_type: 'code', client_id: 'farm', redirect_uri: 'http://127.0.0.1:1234/callback' })}`,
  );
  const login = await agent.login(page.text, ADMIN.name, ADMIN.password);
  assert.equal(login.status, 429);
  assert.ok(Number(login.headers.get('retry-after')) >= 1);
});

test('a success clears the count of failures', async (t) => {
  const server = await startTestServer({ env: { TILTH_RATE_LIMIT_PER_USERNAME: '3' } });
  t.after(() => server.close());
  const attempt = (password: string) =>
    token(server, { grant_type: 'password', username: ADMIN.name, password, client_id: 'farm' });
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
  const page = await agent.get(
    `/oauth/authorize?${new URLSearchParams({ response_type: 'code', client_id: 'farm', redirect_uri: 'http://127.0.0.1:1234/callback' })}`,
  );
  assert.equal(page.status, 200);
  for (let i = 0; i < 4; i++)
    assert.notEqual(
      (await token(server, { grant_type: 'password', username: `u${i}`, password: 'p', client_id: 'farm' })).status,
      429,
    );
  const limited = await token(server, {
    grant_type: 'password',
    username: ADMIN.name,
    password: ADMIN.password,
    client_id: 'farm',
  });
  assert.equal(limited.status, 429);
  assert.equal(limited.body.error, 'slow_down');
  assert.ok(Number(limited.headers.get('retry-after')) >= 1);
  assert.equal((await agent.login(page.text, ADMIN.name, ADMIN.password)).status, 429);
  const again = await agent.get(
    `/oauth/authorize?${new URLSearchParams({ response_type: 'code', client_id: 'farm', redirect_uri: 'http://127.0.0.1:1234/callback' })}`,
  );
  assert.equal(again.status, 429);
  assert.ok(Number(again.headers.get('retry-after')) >= 1);
});

test('behind a trusted proxy the address is taken from X-Forwarded-For', async (t) => {
  const server = await startTestServer({ env: { TILTH_RATE_LIMIT_PER_ADDRESS: '2', TILTH_TRUST_PROXY: '1' } });
  t.after(() => server.close());
  const from = (address: string) =>
    token(
      server,
      { grant_type: 'password', username: 'x', password: 'y', client_id: 'farm' },
      { 'X-Forwarded-For': `203.0.113.9, ${address}` },
    );
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
  let pair = (
    await token(server, { grant_type: 'password', username: ADMIN.name, password: ADMIN.password, client_id: 'farm' })
  ).body;
  for (let i = 0; i < 40; i++) {
    const res = await token(server, {
      grant_type: 'refresh_token',
      refresh_token: pair.refresh_token,
      client_id: 'farm',
    });
    assert.equal(res.status, 200, `refresh ${i}: ${res.text}`);
    pair = res.body;
  }
});

test('a flood of sign-ins is answered 503 with Retry-After past the hashing queue, and costs a real account nothing', async (t) => {
  const server = await startTestServer({ env: { TILTH_RATE_LIMIT_PER_ADDRESS: '100000' } });
  t.after(() => server.close());
  const user = await addUser(server, ['farm_worker']);
  const flood = Array.from({ length: 150 }, (_, i) =>
    token(server, { grant_type: 'password', username: `nobody-${i}`, password: 'p', client_id: 'farm' }),
  );
  const answers = await Promise.all(flood);
  const busy = answers.filter((a) => a.status === 503);
  assert.ok(busy.length > 0, 'past the queue, answers come at once instead of waiting');
  assert.deepEqual([...new Set(answers.map((a) => a.status))].sort(), [400, 503]);
  for (const a of busy) {
    assert.equal(a.body.error, 'temporarily_unavailable');
    assert.equal(a.headers.get('retry-after'), '1');
  }
  // A refused check is not counted: the account's tries are untouched by being turned away.
  const during = await Promise.all([
    ...Array.from({ length: 60 }, (_, i) =>
      token(server, { grant_type: 'password', username: `other-${i}`, password: 'p', client_id: 'farm' }),
    ),
    ...Array.from({ length: 25 }, () =>
      token(server, { grant_type: 'password', username: user.name, password: 'wrong', client_id: 'farm' }),
    ),
  ]);
  const checkedWrong = during.slice(60).filter((a) => a.status === 400).length;
  assert.ok(checkedWrong <= 20, `${checkedWrong} wrong passwords were checked`);
  if (checkedWrong < 20)
    assert.equal(
      (await token(server, { grant_type: 'password', username: user.name, password: user.password, client_id: 'farm' }))
        .status,
      200,
      'turned-away tries were not counted',
    );
});

test('a stranger who spends an account’s tries locks out only new places, not where the owner signed in before', async (t) => {
  const server = await startTestServer({ env: { TILTH_RATE_LIMIT_PER_USERNAME: '3', TILTH_TRUST_PROXY: '1' } });
  t.after(() => server.close());
  const user = await addUser(server, ['farm_worker']);
  const from = (address: string, password: string) =>
    token(
      server,
      { grant_type: 'password', username: user.name, password, client_id: 'farm' },
      { 'X-Forwarded-For': address },
    );
  const home = '198.51.100.7';
  assert.equal((await from(home, user.password)).status, 200, 'the owner signs in from home');
  for (let i = 0; i < 5; i++) await from('203.0.113.66', `guess-${i}`);
  assert.equal((await from('203.0.113.66', user.password)).status, 429, 'the stranger is held back');
  assert.equal((await from('192.0.2.10', user.password)).status, 429, 'and so is any other new place');
  assert.equal((await from(home, user.password)).status, 200, 'the owner at home is not locked out');
  // Home has its own allowance, which its own wrong passwords spend.
  for (let i = 0; i < 3; i++) assert.equal((await from(home, `typo-${i}`)).status, 400);
  assert.equal((await from(home, user.password)).status, 429);
  // The sign-in form keeps the same allowances.
  const agent = new FormAgent(server.url);
  const page = await agent.get(
    `/oauth/authorize?${new URLSearchParams({ response_type: 'code', client_id: 'farm', redirect_uri: 'http://127.0.0.1:1234/callback' })}`,
  );
  const form = await agent.login(page.text, user.name, user.password);
  assert.equal(form.status, 429, 'the form from a new place (the test’s own address) is held back too');
});

test('an attempt given back after the limit was passed frees a try: turned-away guesses do not eat the tries that were given back', async (t) => {
  // What a burst of guesses does: the limit's number are let through, the rest turned away; then
  // some of the let-through ones are given back (the server was too busy to hash them). The
  // account must then have exactly that many tries left, on the database's own limiter.
  const server = await startTestServer();
  t.after(() => server.close());
  const limiter = limiterFor(server.ctx.db, 'test', 3, 60);
  const key = `account:${Date.now()}`;
  const waits = [];
  for (let i = 0; i < 8; i++) waits.push(await limiter.hit(key));
  assert.deepEqual(
    waits.map((w) => w > 0),
    [false, false, false, true, true, true, true, true],
    'three let through, the rest told to wait',
  );
  assert.ok(waits[3]! >= 1 && waits[3]! <= 60, `waits ${waits[3]} s`);
  await limiter.release(key);
  await limiter.release(key);
  assert.equal(await limiter.hit(key), 0, 'a try given back can be used');
  assert.equal(await limiter.hit(key), 0, 'and the second');
  assert.ok((await limiter.hit(key)) > 0, 'and then no more');
  await limiter.reset(key);
  assert.equal(await limiter.hit(key), 0, 'a success clears the count');
});
