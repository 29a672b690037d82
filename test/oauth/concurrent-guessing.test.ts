// Trust round two, item 1: the per-account password limit holds when the guesses arrive at once.
// Each check reserves its attempt before the password is hashed, so however many wrong passwords
// for one account arrive together, at most the limit's number of them are checked; the rest wait
// (429), wherever the password is typed: the token endpoint, the sign-in form, `pass.existing`.
// Item 4 is here too: nobody changes their own password without the current one, whatever
// their role.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, ADMIN, type TestServer } from '../support/server.ts';
import { request } from '../support/http.ts';
import { addUser, FormAgent, hiddenField, passwordGrant, token } from './helpers.ts';

const LIMIT = 5;
const AT_ONCE = 40;
let server: TestServer;

before(async () => {
  server = await startTestServer({ env: { TILTH_RATE_LIMIT_PER_USERNAME: String(LIMIT) } });
});
after(() => server.close());

/** How many answers had each status, e.g. { 400: 5, 429: 35 }. */
function tally(statuses: number[]): Record<number, number> {
  const out: Record<number, number> = {};
  for (const s of statuses) out[s] = (out[s] ?? 0) + 1;
  return out;
}

test(`${AT_ONCE} wrong passwords for one account at once: ${LIMIT} are checked, the rest wait`, async () => {
  const user = await addUser(server, ['farm_worker'], undefined, `guessed-${Date.now()}@example.org`);
  // Alternating the name and the e-mail address counts against the same account.
  const statuses = await Promise.all(
    Array.from({ length: AT_ONCE }, (_, i) =>
      token(server, {
        grant_type: 'password',
        client_id: 'farm',
        username: i % 2 ? user.mail! : user.name,
        password: `wrong-${i}`,
      }).then((r) => r.status),
    ),
  );
  assert.deepEqual(tally(statuses), { 400: LIMIT, 429: AT_ONCE - LIMIT });
  const right = await token(server, {
    grant_type: 'password',
    client_id: 'farm',
    username: user.name,
    password: user.password,
  });
  assert.equal(right.status, 429, 'the limit is spent: even the right password waits');
});

test('at once through the sign-in form: the same limit', async () => {
  const user = await addUser(server, ['farm_worker']);
  const agent = new FormAgent(server.url);
  const page = await agent.get(
    `/oauth/authorize?${new URLSearchParams({ response_type: 'code', client_id: 'farm', redirect_uri: 'http://127.0.0.1:1234/callback' })}`,
  );
  const form = {
    csrf_token: hiddenField(page.text, 'csrf_token'),
    return_to: hiddenField(page.text, 'return_to'),
    username: user.name,
  };
  const statuses = await Promise.all(
    Array.from({ length: AT_ONCE }, (_, i) =>
      agent.post('/oauth/login', { ...form, password: `wrong-${i}` }).then((r) => r.status),
    ),
  );
  const refused = statuses.filter((s) => s !== 429).length;
  assert.equal(refused, LIMIT, `answers ${JSON.stringify(tally(statuses))}`);
});

test('unknown names are reserved the same way: probing one at once is checked the limit’s number of times', async () => {
  const statuses = await Promise.all(
    Array.from({ length: AT_ONCE }, (_, i) =>
      token(server, {
        grant_type: 'password',
        client_id: 'farm',
        username: 'nobody-by-this-name',
        password: `p${i}`,
      }).then((r) => r.status),
    ),
  );
  assert.deepEqual(tally(statuses), { 400: LIMIT, 429: AT_ONCE - LIMIT });
});

test('at once through pass.existing: the same limit, and the password is unchanged', async () => {
  const user = await addUser(server, ['farm_worker']);
  const userToken = (await passwordGrant(server, user.name, user.password)).access_token;
  const statuses = await Promise.all(
    Array.from({ length: AT_ONCE }, (_, i) =>
      request(`${server.url}/api/user/user/${user.uuid}`, {
        method: 'PATCH',
        token: userToken,
        json: {
          data: {
            type: 'user--user',
            id: user.uuid,
            attributes: { pass: { value: 'taken-over-1', existing: `wrong-${i}` } },
          },
        },
      }).then((r) => r.status),
    ),
  );
  assert.deepEqual(tally(statuses), { 403: LIMIT, 429: AT_ONCE - LIMIT });
});

test('an administrator changing their own password must send the current one', async () => {
  const admin = (await passwordGrant(server, ADMIN.name, ADMIN.password)).access_token;
  const uuid = (await server.ctx.db.knex('users').where('id', 1).first('uuid')).uuid;
  const patch = (pass: Record<string, string>) =>
    request(`${server.url}/api/user/user/${uuid}`, {
      method: 'PATCH',
      token: admin,
      json: { data: { type: 'user--user', id: uuid, attributes: { pass } } },
    });
  const without = await patch({ value: 'stolen-token-takeover' });
  assert.equal(without.status, 403, without.text);
  assert.equal(without.body.errors[0].source.pointer, '/data/attributes/pass');
  assert.match(without.body.errors[0].detail, /pass\.existing/);
  assert.equal(
    (await token(server, { grant_type: 'password', client_id: 'farm', username: ADMIN.name, password: ADMIN.password }))
      .status,
    200,
    'the old password still signs in',
  );
  const wrong = await patch({ value: 'stolen-token-takeover', existing: 'a guess' });
  assert.equal(wrong.status, 403, wrong.text);
  const right = await patch({ value: 'admin-new-password', existing: ADMIN.password });
  assert.equal(right.status, 200, right.text);
  assert.equal(
    (
      await token(server, {
        grant_type: 'password',
        client_id: 'farm',
        username: ADMIN.name,
        password: 'admin-new-password',
      })
    ).status,
    200,
  );
  // Other accounts' administrators still set them without knowing them.
  const other = await addUser(server, ['farm_worker']);
  const set = await request(`${server.url}/api/user/user/${other.uuid}`, {
    method: 'PATCH',
    token: admin,
    json: { data: { type: 'user--user', id: other.uuid, attributes: { pass: { value: 'set-by-the-admin' } } } },
  });
  assert.equal(set.status, 200, set.text);
});
