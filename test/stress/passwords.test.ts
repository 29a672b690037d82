// Trust round two, item 1 under load: hundreds of wrong passwords for one account sent at once
// through the token endpoint, alternating its name and e-mail address. With the default limit
// (20 failures a minute), no more than 20 of them are checked; the rest are answered 429 (the
// account's tries are spent) or 503 (the hashing queue is full) without hashing. Before, every one
// was hashed: 290 checks from one address in one window.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createTestDatabase } from '../support/server.ts';
import { startChildServer, type ChildServer } from '../support/child-server.ts';
import { passwordToken, request } from '../support/http.ts';
import { ADMIN } from '../support/server.ts';
import { FULL, report } from './scale.ts';

const AT_ONCE = FULL ? 300 : 60;
const LIMIT = 20;

let database: Awaited<ReturnType<typeof createTestDatabase>>;
let server: ChildServer;

before(async () => {
  database = await createTestDatabase({ migrated: true });
  server = await startChildServer(database.env);
});
after(async () => {
  await server?.stop();
  await database?.drop();
});

function form(fields: Record<string, string>): RequestInit {
  return {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(fields).toString(),
  };
}

test(`${AT_ONCE} wrong passwords for one account at once, then more: ${LIMIT} are checked in all`, async () => {
  const admin = await passwordToken(server.url, ADMIN.name, ADMIN.password);
  const name = `target-${Date.now()}`;
  const mail = `${name}@example.org`;
  const created = await request(`${server.url}/api/user/user`, {
    method: 'POST',
    token: admin,
    json: {
      data: { type: 'user--user', attributes: { name, mail, status: true, pass: { value: 'the-real-password' } } },
    },
  });
  assert.equal(created.status, 201, created.text);

  const started = Date.now();
  const statuses = await Promise.all(
    Array.from({ length: AT_ONCE }, (_, i) =>
      fetch(
        `${server.url}/oauth/token`,
        form({ grant_type: 'password', client_id: 'farm', username: i % 2 ? mail : name, password: `guess-${i}` }),
      ).then((r) => r.status),
    ),
  );
  const seconds = (Date.now() - started) / 1000;
  const checked = statuses.filter((s) => s === 400).length;
  const waited = statuses.filter((s) => s === 429).length;
  const busy = statuses.filter((s) => s === 503).length;
  report('concurrent passwords', { sent: AT_ONCE, checked, waited, busy, seconds: Number(seconds.toFixed(2)) });
  assert.equal(checked + waited + busy, AT_ONCE, `only 400, 429 and 503: ${statuses.join(' ')}`);
  assert.ok(checked > 0 && checked <= LIMIT, `checked ${checked} of ${AT_ONCE}`);
  // Sent one after another, the rest of the account's tries are checked, and then no more.
  let more = 0;
  for (let i = 0; i < LIMIT + 5; i++) {
    const status = (
      await fetch(
        `${server.url}/oauth/token`,
        form({ grant_type: 'password', client_id: 'farm', username: name, password: `again-${i}` }),
      )
    ).status;
    if (status === 400) more += 1;
    else assert.equal(status, 429);
  }
  assert.equal(checked + more, LIMIT, 'the limit holds across both');
});

test('a flood of sign-ins for unknown names: refused fast past the hashing queue, and the API keeps answering', async () => {
  const token = await passwordToken(server.url, ADMIN.name, ADMIN.password);
  const flood = FULL ? 300 : 150;
  const started = Date.now();
  let done = false;
  const apiTimes: number[] = [];
  const probe = (async () => {
    while (!done) {
      const t0 = performance.now();
      assert.equal((await request(`${server.url}/api`, { token })).status, 200);
      apiTimes.push(performance.now() - t0);
      await new Promise((r) => setTimeout(r, 50));
    }
  })();
  const statuses = await Promise.all(
    Array.from({ length: flood }, (_, i) =>
      fetch(
        `${server.url}/oauth/token`,
        form({ grant_type: 'password', client_id: 'farm', username: `nobody-${i}`, password: 'x' }),
      ).then((r) => r.status),
    ),
  );
  const floodSeconds = (Date.now() - started) / 1000;
  const t0 = performance.now();
  const real = await fetch(
    `${server.url}/oauth/token`,
    form({ grant_type: 'password', client_id: 'farm', username: ADMIN.name, password: ADMIN.password }),
  );
  const realMs = Math.round(performance.now() - t0);
  done = true;
  await probe;
  apiTimes.sort((a, b) => a - b);
  const busy = statuses.filter((s) => s === 503).length;
  report('sign-in flood', {
    sent: flood,
    checked: statuses.filter((s) => s === 400).length,
    refusedBusy: busy,
    seconds: Number(floodSeconds.toFixed(2)),
    apiP50Ms: Math.round(apiTimes[Math.floor(apiTimes.length / 2)] ?? 0),
    apiMaxMs: Math.round(apiTimes[apiTimes.length - 1] ?? 0),
    realSignInAfterMs: realMs,
  });
  assert.ok(busy > 0, 'past the queue, sign-ins are refused at once');
  assert.equal(real.status, 200, 'a real sign-in right after works');
});
