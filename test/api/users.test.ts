// Users and languages over JSON:API: who sees which user fields, who may edit whom (farmos-behaviour.md §4.10).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, ADMIN, type TestServer } from '../support/server.ts';
import { request, passwordToken } from '../support/http.ts';
import { createUser, setBlocked } from '../../runtime/accounts/users.ts';

let server: TestServer;
let adminToken: string;
let viewerToken: string;
let viewerId: string;
let workerId: string;

before(async () => {
  server = await startTestServer();
  const knex = server.ctx.db.knex;
  viewerId = (
    await createUser(knex, {
      name: 'vera',
      password: 'vera-password',
      mail: 'vera@example.org',
      roles: ['farm_viewer'],
    })
  ).uuid;
  workerId = (
    await createUser(knex, {
      name: 'walt',
      password: 'walt-password',
      mail: 'walt@example.org',
      roles: ['farm_worker'],
    })
  ).uuid;
  await createUser(knex, { name: 'gone', password: 'gone-password', roles: ['farm_worker'] });
  await setBlocked(knex, 'gone', true);
  adminToken = await passwordToken(server.url, ADMIN.name, ADMIN.password);
  viewerToken = await passwordToken(server.url, 'vera', 'vera-password');
});
after(() => server.close());

test('users see active users by name, their own e-mail only, and never a password hash', async () => {
  const res = await request(`${server.url}/api/user/user`, { token: viewerToken });
  assert.equal(res.status, 200);
  const byName = new Map(res.body.data.map((u: any) => [u.attributes.display_name, u]));
  assert.deepEqual(
    [...byName.keys()].sort(),
    ['admin', 'gone', 'vera', 'walt'],
    'blocked users are listed to non-admins too',
  );
  assert.deepEqual(
    (byName.get('gone') as any).attributes,
    { display_name: 'gone' },
    'a blocked user by its name only, as farmOS shows it',
  );
  const walt: any = byName.get('walt');
  assert.equal(walt.attributes.display_name, 'walt');
  assert.equal(walt.attributes.mail, undefined, "another user's e-mail is private");
  assert.equal(walt.attributes.pass, undefined);
  const vera: any = byName.get('vera');
  assert.equal(vera.attributes.mail, 'vera@example.org', 'one sees one own e-mail');
  assert.ok(!res.text.includes('$argon2'), 'no password hash anywhere in the response');

  const all = await request(`${server.url}/api/user/user`, { token: adminToken });
  assert.equal(all.body.data.length, 4, 'administrators see blocked users too');
  assert.ok(all.body.data.some((u: any) => u.attributes.mail === 'walt@example.org'));
  assert.ok(!all.text.includes('$argon2'));
});

test('a user may edit their own account but not another one', async () => {
  const own = await request(`${server.url}/api/user/user/${viewerId}`, {
    method: 'PATCH',
    token: viewerToken,
    json: { data: { type: 'user--user', id: viewerId, attributes: { timezone: 'Europe/Paris' } } },
  });
  assert.equal(own.status, 200, own.text);
  assert.equal(own.body.data.attributes.timezone, 'Europe/Paris');
  const other = await request(`${server.url}/api/user/user/${workerId}`, {
    method: 'PATCH',
    token: viewerToken,
    json: { data: { type: 'user--user', id: workerId, attributes: { timezone: 'Europe/Paris' } } },
  });
  assert.equal(other.status, 403);
  assert.equal(other.body.errors[0].status, '403');
  assert.equal(other.body.errors[0].source.pointer, '/data', 'the refusal names the record as a whole');
});

test('filtering users by a private field is refused to non-admins', async () => {
  const res = await request(`${server.url}/api/user/user?filter[mail]=walt@example.org`, { token: viewerToken });
  assert.equal(res.status, 403);
  const admin = await request(`${server.url}/api/user/user?filter[mail]=walt@example.org`, { token: adminToken });
  assert.equal(admin.status, 200);
  assert.equal(admin.body.data.length, 1);
});

test('a page query kept from one caller is not reused for another with other access, nor with other values', async () => {
  // Page queries are built once per shape (collection/page.ts); the caller's access is part of it.
  const names = (res: any) => res.body.data.map((u: any) => u.attributes.name).sort();
  const byMail = '/api/user/user?filter[mail][value]=walt@example.org&filter[mail][operator]=STARTS_WITH&sort=name';
  const admin = await request(`${server.url}${byMail}`, { token: adminToken });
  assert.equal(admin.status, 200, admin.text);
  assert.deepEqual(names(admin), ['walt']);
  assert.equal(
    (await request(`${server.url}${byMail}`, { token: viewerToken })).status,
    403,
    'refused after an administrator asked the same',
  );

  const workers =
    '/api/user/user?filter[name][operator]=IN&filter[name][value][]=gone&filter[name][value][]=walt&sort=-name';
  assert.deepEqual(names(await request(`${server.url}${workers}`, { token: adminToken })), ['gone', 'walt']);
  const seen = (await request(`${server.url}${workers}`, { token: viewerToken })).body.data;
  assert.deepEqual(
    seen.map((u: any) => u.attributes.display_name),
    ['walt', 'gone'],
    'a viewer finds the blocked user too, as farmOS lists it',
  );
  assert.deepEqual(seen[1].attributes, { display_name: 'gone' }, 'by its name only');
  const others = workers.replace('=gone', '=vera');
  assert.deepEqual(
    names(await request(`${server.url}${others}`, { token: viewerToken })),
    ['vera', 'walt'],
    'the same shape with other values',
  );
});

test('the installed languages are listed', async () => {
  const res = await request(`${server.url}/api/configurable_language/configurable_language`, { token: viewerToken });
  assert.equal(res.status, 200);
  const en = res.body.data.find((l: any) => l.attributes.drupal_internal__id === 'en');
  assert.equal(en.type, 'configurable_language--configurable_language');
  assert.equal(en.attributes.label, 'English');
  const one = await request(`${server.url}/api/configurable_language/configurable_language/${en.id}`, {
    token: viewerToken,
  });
  assert.equal(one.body.data.id, en.id);
  const anonymous = await request(`${server.url}/api/configurable_language/configurable_language`);
  assert.equal(anonymous.status, 401);
  const root = await request(`${server.url}/api`);
  assert.ok(
    root.body.links['configurable_language--configurable_language'].href.endsWith(
      '/api/configurable_language/configurable_language',
    ),
  );
});

test("an account administrator blocking a user over the API ends that user's tokens for good", async () => {
  const knex = server.ctx.db.knex;
  const user = await createUser(knex, { name: 'bria', password: 'bria-password', roles: ['farm_worker'] });
  const briaToken = await passwordToken(server.url, 'bria', 'bria-password');
  assert.equal((await request(`${server.url}/api/log/activity`, { token: briaToken })).status, 200);
  const block = await request(`${server.url}/api/user/user/${user.uuid}`, {
    method: 'PATCH',
    token: adminToken,
    json: { data: { type: 'user--user', id: user.uuid, attributes: { status: false } } },
  });
  assert.equal(block.status, 200, block.text);
  assert.equal((await request(`${server.url}/api/log/activity`, { token: briaToken })).status, 401);
  const unblock = await request(`${server.url}/api/user/user/${user.uuid}`, {
    method: 'PATCH',
    token: adminToken,
    json: { data: { type: 'user--user', id: user.uuid, attributes: { status: true } } },
  });
  assert.equal(unblock.status, 200);
  assert.equal(
    (await request(`${server.url}/api/log/activity`, { token: briaToken })).status,
    401,
    'the old token stays revoked',
  );
  assert.ok(await passwordToken(server.url, 'bria', 'bria-password'), 'a new login works again');
});

test('filters, sorts and includes through relationships reveal nothing about users one may not see', async () => {
  // "gone" is blocked: non-admins see its name only, so its other fields must not find logs either.
  const knex = server.ctx.db.knex;
  const gone = await knex('users').where('name', 'gone').first('uuid');
  const log = await request(`${server.url}/api/log/activity`, {
    method: 'POST',
    token: adminToken,
    json: {
      data: {
        type: 'log--activity',
        attributes: { name: 'Owned by a blocked user' },
        relationships: { owner: { data: [{ type: 'user--user', id: gone.uuid }] } },
      },
    },
  });
  assert.equal(log.status, 201, log.text);
  const byName = `${server.url}/api/log/activity?filter[owner.name]=gone`;
  assert.equal((await request(byName, { token: adminToken })).body.data.length, 1, 'an administrator finds it');
  assert.equal(
    (await request(byName, { token: viewerToken })).body.data.length,
    0,
    'a viewer learns nothing about the blocked account',
  );
  const included = await request(`${server.url}/api/log/activity/${log.body.data.id}?include=owner`, {
    token: viewerToken,
  });
  assert.equal(included.status, 200);
  assert.deepEqual(
    included.body.included.map((u: any) => u.attributes),
    [{ display_name: 'gone' }],
    'the blocked owner is included by its name only, so a client can show "owner: gone"',
  );
  const adminIncluded = await request(`${server.url}/api/log/activity/${log.body.data.id}?include=owner`, {
    token: adminToken,
  });
  assert.equal(adminIncluded.body.included[0].attributes.name, 'gone');
});
