// A farm made before Field Kit from farmOS.app (issue 25 item 6): its `fieldkit` client had the
// scope user_access and no origin, and the start leaves an existing client as it is. Migration
// 0011 brings that client up to what a new farm gets, keeping the origins its administrator
// added; a client whose scopes an administrator set is theirs and is left alone.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Knex } from 'knex';
import { createTestDatabase, startTestServer, ADMIN, type TestServer } from '../support/server.ts';

const APP = 'https://farmos.app';
const OWN = 'https://fieldkit.example.org';

/** The fieldkit client as an older release left it, and migration 0011 not applied yet. */
async function olderFarm(knex: Knex, scopes: string[], origins: string[]): Promise<void> {
  const { id } = await knex('oauth_clients').where('client_id', 'fieldkit').first('id');
  await knex('oauth_clients')
    .where('id', id)
    .update({ default_scopes: JSON.stringify(scopes) });
  await knex('oauth_client_origins').where('client_id', id).delete();
  if (origins.length) await knex('oauth_client_origins').insert(origins.map((origin) => ({ client_id: id, origin })));
  await knex('knex_migrations').where('name', 'core/0011_fieldkit_client').delete();
  await knex('tilth_migration_checksums').where('name', 'core/0011_fieldkit_client').delete();
}

/** Field Kit's sign-in from `origin`: whether CORS lets the browser read it, and the token's scopes. */
async function signIn(server: TestServer, origin: string): Promise<{ allowed: boolean; scopes: string[] }> {
  const res = await fetch(`${server.url}/oauth/token`, {
    method: 'POST',
    headers: { Origin: origin, 'Content-Type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'password',
      client_id: 'fieldkit',
      username: ADMIN.name,
      password: ADMIN.password,
    }),
  });
  assert.equal(res.status, 200, await res.clone().text());
  const { scope } = (await res.json()) as { scope: string };
  return { allowed: res.headers.get('access-control-allow-origin') === origin, scopes: scope.split(' ').sort() };
}

test("an older farm's fieldkit client lets Field Kit from farmOS.app sign in after the upgrade, with farmOS's scopes and the origins it had", async (t) => {
  const database = await createTestDatabase();
  t.after(() => database.drop());
  let server = await startTestServer({ database });
  // Whichever server is running when the test ends (an assertion may fail before a restart).
  t.after(() => server.close());
  // Recreated by its administrator, as the only way then was, to allow a self-hosted Field Kit.
  await olderFarm(server.ctx.db.knex, ['user_access'], [OWN]);
  await server.close();

  server = await startTestServer({ database });
  assert.deepEqual(await signIn(server, APP), { allowed: true, scopes: ['farm_manager', 'farm_worker'] });
  assert.equal((await signIn(server, OWN)).allowed, true, 'the origin its administrator added is kept');

  // A client whose scopes its administrator chose is left as they set it.
  await olderFarm(server.ctx.db.knex, ['farm_worker'], [OWN]);
  await server.close();
  server = await startTestServer({ database });
  assert.deepEqual(await signIn(server, OWN), { allowed: true, scopes: ['farm_worker'] });
  assert.equal((await signIn(server, APP)).allowed, false);
  assert.equal((await server.ctx.db.knex('knex_migrations').where('name', 'core/0011_fieldkit_client')).length, 1);
});
