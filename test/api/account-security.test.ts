// Who may change which account over JSON:API (issue: trust, part A 1–5). Each case was a way in:
// an account admin taking over user 1, old tokens outliving a new password, `pass.existing` as an
// unthrottled password oracle, one account counted twice by the failed-password limit, and users
// blocking themselves or having a role change silently dropped.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, ADMIN, type TestServer } from '../support/server.ts';
import { request } from '../support/http.ts';
import { addUser, passwordGrant, token } from '../oauth/helpers.ts';
import { configIdentifier } from '../../runtime/model/config-entities.ts';

/** Failed passwords allowed per account per window in this file's server. */
const PER_ACCOUNT = 4;

let server: TestServer;
let adminToken: string;
let adminUuid: string;

before(async () => {
  server = await startTestServer({ env: { TILTH_RATE_LIMIT_PER_USERNAME: String(PER_ACCOUNT) } });
  adminToken = (await passwordGrant(server, ADMIN.name, ADMIN.password)).access_token;
  adminUuid = (await server.ctx.db.knex('users').where('id', 1).first('uuid')).uuid;
});
after(() => server.close());

const userUrl = (uuid: string) => `${server.url}/api/user/user/${uuid}`;

function patchUser(
  uuid: string,
  accessToken: string,
  data: { attributes?: Record<string, unknown>; relationships?: Record<string, unknown> },
) {
  return request(userUrl(uuid), {
    method: 'PATCH',
    token: accessToken,
    json: { data: { type: 'user--user', id: uuid, ...data } },
  });
}

const roleRefs = (...roles: string[]) => ({ roles: { data: roles.map((r) => configIdentifier('user_role', r)) } });

async function rolesOf(uuid: string): Promise<string[]> {
  const res = await request(userUrl(uuid), { token: adminToken });
  assert.equal(res.status, 200, res.text);
  return res.body.data.relationships.roles.data
    .map((r: { meta: { drupal_internal__target_id: string } }) => r.meta.drupal_internal__target_id)
    .sort();
}

async function signsIn(name: string, password: string): Promise<number> {
  return (await token(server, { grant_type: 'password', client_id: 'farm', username: name, password })).status;
}

test('an account admin cannot change user 1: no new password, no new e-mail, no takeover', async () => {
  const keeper = await addUser(server, ['farm_account_admin']);
  const keeperToken = (await passwordGrant(server, keeper.name, keeper.password)).access_token;
  const res = await patchUser(adminUuid, keeperToken, {
    attributes: { pass: { value: 'taken-over-123' }, mail: 'attacker@example.org' },
  });
  assert.equal(res.status, 403, res.text);
  assert.match(res.body.errors[0].detail, /user 1/);
  assert.equal(res.body.errors[0].source.pointer, '/data', 'the refusal names the record as a whole');
  assert.equal(await signsIn(ADMIN.name, 'taken-over-123'), 400, 'the attacker’s password does not work');
  assert.equal(
    await signsIn(ADMIN.name, ADMIN.password),
    200,
    'the administrator still signs in with their own password',
  );
  const admin = await request(userUrl(adminUuid), { token: adminToken });
  assert.notEqual(admin.body.data.attributes.mail, 'attacker@example.org');
  const gone = await request(userUrl(adminUuid), { method: 'DELETE', token: keeperToken });
  assert.equal(gone.status, 403, 'nor delete it');
});

test('a second administrator cannot change user 1 either, but user 1 can', async () => {
  const second = await addUser(server, ['administrator']);
  const secondToken = (await passwordGrant(server, second.name, second.password)).access_token;
  assert.equal((await patchUser(adminUuid, secondToken, { attributes: { timezone: 'Europe/Berlin' } })).status, 403);
  const own = await patchUser(adminUuid, adminToken, { attributes: { timezone: 'Europe/Berlin' } });
  assert.equal(own.status, 200, own.text);
  assert.equal(own.body.data.attributes.timezone, 'Europe/Berlin');
});

test('nobody may change an account that holds rights they lack, nor grant a role they lack', async () => {
  const keeper = await addUser(server, ['farm_account_admin']);
  const keeperToken = (await passwordGrant(server, keeper.name, keeper.password)).access_token;
  const otherAdmin = await addUser(server, ['administrator']);
  const worker = await addUser(server, ['farm_worker']);
  const newcomer = await addUser(server, []);

  const onAdmin = await patchUser(otherAdmin.uuid, keeperToken, { attributes: { pass: { value: 'taken-over-123' } } });
  assert.equal(onAdmin.status, 403, 'an account admin cannot edit an administrator');
  assert.match(onAdmin.body.errors[0].detail, /administrator/);
  assert.equal(onAdmin.body.errors[0].source.pointer, '/data');
  assert.equal(await signsIn(otherAdmin.name, otherAdmin.password), 200);

  const onWorker = await patchUser(worker.uuid, keeperToken, { attributes: { mail: 'w@example.org' } });
  assert.equal(
    onWorker.status,
    403,
    'a worker may create records, which an account admin may not: signing in as them would gain that right',
  );

  const grant = await patchUser(newcomer.uuid, keeperToken, { relationships: roleRefs('administrator') });
  assert.equal(grant.status, 403, grant.text);
  assert.equal(grant.body.errors[0].source.pointer, '/data/relationships/roles');
  assert.match(grant.body.errors[0].detail, /administrator/);
  assert.deepEqual(await rolesOf(newcomer.uuid), [], 'nothing was granted');

  const self = await patchUser(keeper.uuid, keeperToken, {
    relationships: roleRefs('farm_account_admin', 'farm_manager'),
  });
  assert.equal(self.status, 403, 'nor to themselves');
  assert.deepEqual(await rolesOf(keeper.uuid), ['farm_account_admin']);

  const fine = await patchUser(newcomer.uuid, keeperToken, {
    attributes: { mail: 'newcomer@example.org' },
    relationships: roleRefs('farm_account_admin'),
  });
  assert.equal(fine.status, 200, `an account admin manages accounts with no more rights than their own: ${fine.text}`);
  assert.deepEqual(await rolesOf(newcomer.uuid), ['farm_account_admin']);
});

test('an administrator changes roles over the API, and the change takes effect at once', async () => {
  const user = await addUser(server, ['farm_viewer']);
  const userToken = (await passwordGrant(server, user.name, user.password)).access_token;
  const denied = await request(`${server.url}/api/log/activity`, {
    method: 'POST',
    token: userToken,
    json: { data: { type: 'log--activity', attributes: { name: 'Weeding' } } },
  });
  assert.equal(denied.status, 403);
  const res = await patchUser(user.uuid, adminToken, { relationships: roleRefs('farm_worker') });
  assert.equal(res.status, 200, res.text);
  assert.deepEqual(await rolesOf(user.uuid), ['farm_worker']);
  const allowed = await request(`${server.url}/api/log/activity`, {
    method: 'POST',
    token: userToken,
    json: { data: { type: 'log--activity', attributes: { name: 'Weeding' } } },
  });
  assert.equal(allowed.status, 201, allowed.text);
  const unknown = await patchUser(user.uuid, adminToken, {
    relationships: { roles: { data: [{ type: 'user_role--user_role', id: '00000000-0000-4000-8000-000000000000' }] } },
  });
  assert.equal(unknown.status, 404, 'an unknown role is an unknown related resource');
});

test('users may not block themselves or change their own roles; unchanged values pass', async () => {
  const user = await addUser(server, ['farm_worker']);
  const userToken = (await passwordGrant(server, user.name, user.password)).access_token;
  const block = await patchUser(user.uuid, userToken, { attributes: { status: false } });
  assert.equal(block.status, 403, block.text);
  assert.equal(block.body.errors[0].source.pointer, '/data/attributes/status');
  assert.match(block.body.errors[0].detail, /status/);
  const roles = await patchUser(user.uuid, userToken, { relationships: roleRefs('farm_worker', 'farm_viewer') });
  assert.equal(roles.status, 403, roles.text);
  assert.equal(roles.body.errors[0].source.pointer, '/data/relationships/roles');
  assert.deepEqual(await rolesOf(user.uuid), ['farm_worker']);
  assert.equal(await signsIn(user.name, user.password), 200, 'the account is still active');
  const echo = await patchUser(user.uuid, userToken, {
    attributes: { timezone: 'Africa/Nairobi' },
    relationships: roleRefs('farm_worker'),
  });
  assert.equal(echo.status, 200, `a client echoing the roles it has back changes nothing and is fine: ${echo.text}`);
});

test('a new password set over the API ends every other token of the user', async () => {
  const user = await addUser(server, ['farm_worker']);
  const phone = await passwordGrant(server, user.name, user.password);
  const laptop = await passwordGrant(server, user.name, user.password);
  const res = await patchUser(user.uuid, laptop.access_token, {
    attributes: { pass: { value: 'a-new-password-1', existing: user.password } },
  });
  assert.equal(res.status, 200, res.text);
  assert.equal(
    (await request(`${server.url}/api/log/activity`, { token: phone.access_token })).status,
    401,
    'the other sign-in’s access token is revoked',
  );
  const refresh = await token(server, {
    grant_type: 'refresh_token',
    client_id: 'farm',
    refresh_token: phone.refresh_token,
  });
  assert.equal(refresh.status, 400);
  assert.equal(refresh.body.error, 'invalid_grant');
  assert.equal(
    (await request(`${server.url}/api/log/activity`, { token: laptop.access_token })).status,
    200,
    'the token that changed the password keeps working',
  );

  // An account admin (here the administrator) setting it ends all of them.
  const again = await patchUser(user.uuid, adminToken, { attributes: { pass: { value: 'a-new-password-2' } } });
  assert.equal(again.status, 200, again.text);
  assert.equal((await request(`${server.url}/api/log/activity`, { token: laptop.access_token })).status, 401);
  assert.equal(await signsIn(user.name, 'a-new-password-2'), 200);
});

test('wrong pass.existing values count as failed passwords of the account', async () => {
  const user = await addUser(server, ['farm_worker']);
  const userToken = (await passwordGrant(server, user.name, user.password)).access_token;
  for (let i = 0; i < PER_ACCOUNT; i++) {
    const res = await patchUser(user.uuid, userToken, {
      attributes: { pass: { value: 'guess-new-password', existing: `guess-${i}` } },
    });
    assert.equal(res.status, 403, res.text);
  }
  const limited = await patchUser(user.uuid, userToken, {
    attributes: { pass: { value: 'guess-new-password', existing: user.password } },
  });
  assert.equal(limited.status, 429, 'even the right password waits once the limit is reached');
  assert.ok(Number(limited.headers.get('retry-after')) > 0);
  assert.equal(limited.body.errors[0].status, '429');
  const grant = await token(server, {
    grant_type: 'password',
    client_id: 'farm',
    username: user.name,
    password: user.password,
  });
  assert.equal(grant.status, 429, 'the same limit holds at the token endpoint');
  assert.equal(grant.body.error, 'slow_down');
});

test('the failed-password limit counts one account once, whether its name or its e-mail is typed', async () => {
  const user = await addUser(server, ['farm_worker'], undefined, `counted-${Date.now()}@example.org`);
  for (let i = 0; i < PER_ACCOUNT; i++) {
    const login = i % 2 ? user.mail! : user.name;
    assert.equal(await signsIn(login, `wrong-${i}`), 400);
  }
  const res = await token(server, {
    grant_type: 'password',
    client_id: 'farm',
    username: user.mail!,
    password: user.password,
  });
  assert.equal(res.status, 429, res.text);
  assert.equal(await signsIn(user.name, user.password), 429);
});

test('a login names its account without regard to case, as on farmOS (phones capitalise)', async () => {
  const user = await addUser(server, ['farm_viewer'], `casey-${Date.now()}`);
  assert.equal(await signsIn(` ${user.name.toUpperCase()} `, user.password), 200);
});
