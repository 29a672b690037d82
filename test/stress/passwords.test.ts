// Trust round two, item 1 under load: hundreds of wrong passwords for one account sent at once
// through the token endpoint, alternating its name and e-mail address. With the default limit
// (20 failures a minute), no more than 20 of them are checked; the rest are answered 429 without
// hashing. Before, every one was hashed: 290 checks from one address in one window.
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
  database = await createTestDatabase();
  server = await startChildServer(database.env);
});
after(async () => {
  await server?.stop();
  await database?.drop();
});

function form(fields: Record<string, string>): RequestInit {
  return { method: 'POST', headers: { 'Content-Type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(fields).toString() };
}

test(`${AT_ONCE} wrong passwords for one account at once: at most ${LIMIT} are checked`, async () => {
  const admin = await passwordToken(server.url, ADMIN.name, ADMIN.password);
  const name = `target-${Date.now()}`;
  const mail = `${name}@example.org`;
  const created = await request(`${server.url}/api/user/user`, {
    method: 'POST',
    token: admin,
    json: { data: { type: 'user--user', attributes: { name, mail, status: true, pass: { value: 'the-real-password' } } } },
  });
  assert.equal(created.status, 201, created.text);

  const started = Date.now();
  const statuses = await Promise.all(
    Array.from({ length: AT_ONCE }, (_, i) =>
      fetch(`${server.url}/oauth/token`, form({ grant_type: 'password', client_id: 'farm', username: i % 2 ? mail : name, password: `guess-${i}` })).then((r) => r.status),
    ),
  );
  const seconds = (Date.now() - started) / 1000;
  const checked = statuses.filter((s) => s === 400).length;
  const waited = statuses.filter((s) => s === 429).length;
  report('concurrent passwords', { sent: AT_ONCE, checked, waited, seconds: Number(seconds.toFixed(2)) });
  assert.equal(checked + waited, AT_ONCE, `only 400 and 429: ${statuses.join(' ')}`);
  assert.equal(checked, LIMIT, `checked ${checked} of ${AT_ONCE}`);
});
