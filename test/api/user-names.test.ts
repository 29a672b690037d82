// User names (trust issue, item 8): unique without regard to case, across names and e-mail
// addresses, trimmed, and free of invisible, control and HTML-significant characters, by one rule
// shared by the API and `tilth user create`. A name that broke these rules before they existed
// does not stop its account being read or saved: only a new name is checked.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import knexFactory from 'knex';
import { startTestServer, createTestDatabase, ADMIN, type TestServer } from '../support/server.ts';
import { request } from '../support/http.ts';
import { addUser, passwordGrant, token } from '../oauth/helpers.ts';
import { AccountError, createUser } from '../../runtime/accounts/users.ts';
import { classifyDatabaseError } from '../../runtime/storage/db-errors.ts';
import type { ValidationError } from '../../runtime/errors.ts';
import { databaseApiError, errorObjects } from '../../runtime/jsonapi/errors.ts';

let server: TestServer;
let adminToken: string;

before(async () => {
  server = await startTestServer();
  adminToken = (await passwordGrant(server, ADMIN.name, ADMIN.password)).access_token;
});
after(() => server.close());

const userUrl = (uuid: string) => `${server.url}/api/user/user/${uuid}`;

function patchUser(uuid: string, accessToken: string, attributes: Record<string, unknown>) {
  return request(userUrl(uuid), {
    method: 'PATCH',
    token: accessToken,
    json: { data: { type: 'user--user', id: uuid, attributes } },
  });
}

let count = 0;
/** A farm worker with an e-mail address, and a token of theirs. */
async function person() {
  const n = ++count;
  const user = await addUser(
    server,
    ['farm_worker'],
    `person${n}-${Date.now()}`,
    `person${n}-${Date.now()}@example.org`,
  );
  return { ...user, token: (await passwordGrant(server, user.name, user.password)).access_token };
}

function assertRefused(res: { status: number; body: any; text: string }, field: 'name' | 'mail', detail?: RegExp) {
  assert.equal(res.status, 422, res.text);
  assert.equal(res.body.errors[0].source.pointer, `/data/attributes/${field}`, res.text);
  if (detail) assert.match(res.body.errors[0].detail, detail);
}

test('a name may not be another account’s e-mail address, in any case; the owner still signs in with it', async () => {
  const owner = await person();
  const thief = await person();
  assertRefused(await patchUser(thief.uuid, thief.token, { name: owner.mail }), 'name', /already taken/);
  assertRefused(await patchUser(thief.uuid, thief.token, { name: owner.mail!.toUpperCase() }), 'name', /already taken/);
  assert.equal(
    (
      await token(server, {
        grant_type: 'password',
        client_id: 'farm',
        username: owner.mail!,
        password: owner.password,
      })
    ).status,
    200,
  );
  // One's own address is fine.
  const own = await patchUser(thief.uuid, thief.token, { name: thief.mail!.toUpperCase() });
  assert.equal(own.status, 200, own.text);
});

test('names are unique without regard to case, and trimmed', async () => {
  const user = await person();
  for (const name of ['Admin', 'ADMIN', ' admin ', 'admin ', `\t${ADMIN.name.toUpperCase()}`]) {
    assertRefused(await patchUser(user.uuid, user.token, { name }), 'name', /already taken/);
  }
  const other = await person();
  assertRefused(await patchUser(user.uuid, user.token, { name: other.name.toUpperCase() }), 'name', /already taken/);
  const trimmed = await patchUser(user.uuid, user.token, { name: `  ${user.name}-renamed \t` });
  assert.equal(trimmed.status, 200, trimmed.text);
  assert.equal(trimmed.body.data.attributes.name, `${user.name}-renamed`);
  assert.equal(
    (
      await token(server, {
        grant_type: 'password',
        client_id: 'farm',
        username: `${user.name}-renamed`,
        password: user.password,
      })
    ).status,
    200,
  );
  // Creating one is checked the same way.
  const created = await request(`${server.url}/api/user/user`, {
    method: 'POST',
    token: adminToken,
    json: { data: { type: 'user--user', attributes: { name: ' Admin' } } },
  });
  assertRefused(created, 'name', /already taken/);
});

test('invisible, control and HTML-significant characters are refused in names', async () => {
  const user = await person();
  const bad = [
    'admin\u200b', // zero-width space
    'ad\u200dmin', // zero-width joiner
    '\u202eadmin', // right-to-left override
    'ad\u2066min\u2069', // bidi isolate
    'admin\ufeff', // byte order mark
    'ad\u00admin', // soft hyphen
    'a\u0007b', // C0 control
    'a\u0085b', // C1 control
    'a\nb',
    'a\u00a0b', // no-break space
    '<b>bold</b>',
    'Tom & Jerry',
    'say "hi"',
    'a<b',
    'a  b', // two spaces in a row
    '',
    '   ',
    'x'.repeat(61),
  ];
  for (const name of bad) assertRefused(await patchUser(user.uuid, user.token, { name }), 'name');
  for (const name of [`O'Brien ${count}`, `José Ñúñez ${count}`, `mei.li-${count}`, `ørjan_${count}`]) {
    const res = await patchUser(user.uuid, user.token, { name });
    assert.equal(res.status, 200, `${JSON.stringify(name)}: ${res.text}`);
    assert.equal(res.body.data.attributes.name, name);
  }
});

test('an e-mail address may not be another account’s name or address, in any case', async () => {
  const named = await addUser(server, ['farm_viewer'], `carol-${Date.now()}@example.org`);
  const user = await person();
  const other = await person();
  assertRefused(await patchUser(user.uuid, user.token, { mail: named.name.toUpperCase() }), 'mail', /already taken/);
  assertRefused(await patchUser(user.uuid, user.token, { mail: other.mail!.toUpperCase() }), 'mail', /already taken/);
  const fine = await patchUser(user.uuid, user.token, { mail: `fresh-${Date.now()}@example.org` });
  assert.equal(fine.status, 200, fine.text);
});

test('an account whose name broke the rules before they existed is still read and saved; only a new name is checked', async () => {
  const user = await person();
  const knex = server.ctx.db.knex;
  const legacy = `Admin\u200b <b>${count}</b>`;
  await knex('users').where('id', user.id).update({ name: legacy });
  const read = await request(userUrl(user.uuid), { token: adminToken });
  assert.equal(read.status, 200, read.text);
  assert.equal(read.body.data.attributes.name, legacy);
  const other = await patchUser(user.uuid, user.token, { timezone: 'Europe/Paris' });
  assert.equal(other.status, 200, other.text);
  const echoed = await patchUser(user.uuid, user.token, { name: legacy, timezone: 'Europe/Rome' });
  assert.equal(echoed.status, 200, echoed.text);
  assert.equal(echoed.body.data.attributes.name, legacy);
  const byAdmin = await patchUser(user.uuid, adminToken, { mail: `kept-${Date.now()}@example.org` });
  assert.equal(byAdmin.status, 200, byAdmin.text);
  assertRefused(await patchUser(user.uuid, user.token, { name: `${legacy}!` }), 'name');
  const fixed = await patchUser(user.uuid, user.token, { name: `fixed-${count}` });
  assert.equal(fixed.status, 200, fixed.text);
});

test('`tilth user create` (createUser) applies the same rules', async () => {
  const knex = server.ctx.db.knex;
  const refuses = async (input: { name: string; mail?: string }, message: RegExp) =>
    assert.rejects(
      createUser(knex, { password: 'a-long-password', ...input }),
      (error: unknown) => error instanceof AccountError && message.test(error.message),
    );
  const owner = await person();
  await refuses({ name: 'ADMIN' }, /already taken/);
  await refuses({ name: owner.mail!.toUpperCase() }, /already taken/);
  const emailNamed = await addUser(server, ['farm_viewer'], `dora-${Date.now()}@example.org`);
  await refuses({ name: `fresh-${count}`, mail: emailNamed.name.toUpperCase() }, /already taken/);
  await refuses({ name: `fresh-${count}`, mail: owner.mail!.toUpperCase() }, /already taken/);
  await refuses({ name: 'admin\u200b2' }, /invisible|control/);
  await refuses({ name: '<script>' }, /[<>&"]/);
  const made = await createUser(knex, { name: ` spaced-${count} `, password: 'a-long-password' });
  assert.equal(made.name, `spaced-${count}`);
});

test('the database refuses a second account with a taken name or e-mail address, whatever the case, even from outside the API (issue 26)', async () => {
  // Several processes share one database: the rule must hold in the database itself, not only in
  // one process's check. A duplicate written beside the server (another process, a script) fails.
  const knex = server.ctx.db.knex;
  const owner = await person();
  const row = (name: string, mail: string | null) => ({
    uuid: randomUUID(),
    bundle: 'user',
    name,
    mail,
    status: true,
    created: 0,
    changed: 0,
  });
  for (const [field, duplicate] of [
    ['name', row(owner.name.toUpperCase(), null)],
    ['mail', row(`other-${count}`, owner.mail!.toUpperCase())],
  ] as const) {
    const error = await knex('users')
      .insert(duplicate)
      .then(
        () => null,
        (e: unknown) => e,
      );
    assert.ok(error, `a second account with ${field} ${JSON.stringify(duplicate[field])} is refused`);
    // A save that loses this race answers as names.ts's check does: 422 naming the field, not a 409 or a 500.
    assert.deepEqual(classifyDatabaseError(error), { kind: 'taken', field });
    const answer = databaseApiError(error) as ValidationError;
    assert.equal(answer.status, 422);
    assert.equal(errorObjects(answer)[0]!.source?.pointer, `/data/attributes/${field}`);
  }
  // Accounts without an e-mail address are many, and fine.
  await knex('users').insert([row(`nomail-a-${count}`, null), row(`nomail-b-${count}`, null)]);
});

test('upgrading a farm whose accounts share a name stops with a message naming them, and changes nothing (issue 26)', async (t) => {
  const database = await createTestDatabase();
  t.after(() => database.drop());
  const first = await startTestServer({ database });
  let firstOpen = true;
  t.after(() => firstOpen && first.close());
  const knex = first.ctx.db.knex;
  // The database as the release before left it: no unique indexes, and two accounts that differ only in case.
  await knex.raw('DROP INDEX users_name_lower_uniq');
  await knex.raw('DROP INDEX users_mail_lower_uniq');
  await knex.raw('DROP INDEX oauth_authorization_codes_user_idx');
  await knex('knex_migrations').where('name', 'core/0007_account_uniqueness').delete();
  await knex('tilth_migration_checksums').where('name', 'core/0007_account_uniqueness').delete();
  const row = (name: string) => ({
    uuid: randomUUID(),
    bundle: 'user',
    name,
    mail: null,
    status: true,
    created: 0,
    changed: 0,
  });
  await knex('users').insert([row('Martha'), row('martha')]);
  await first.close();
  firstOpen = false;
  await assert.rejects(
    startTestServer({ database }),
    (error: Error) =>
      /share a name/.test(error.message) && /"Martha" \(user \d+\) and "martha" \(user \d+\)/.test(error.message),
  );
  // Renamed, the upgrade goes through.
  const fix = knexFactory(
    database.env.DATABASE_URL
      ? { client: 'pg', connection: database.env.DATABASE_URL }
      : {
          client: 'better-sqlite3',
          connection: { filename: `${database.env.TILTH_DATA_DIR}/tilth.sqlite` },
          useNullAsDefault: true,
        },
  );
  await fix('users').where('name', 'martha').update({ name: 'martha-2' });
  await fix.destroy();
  const second = await startTestServer({ database });
  await second.close();
});
