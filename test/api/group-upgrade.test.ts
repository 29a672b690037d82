// A farm upgraded from the release before group memberships were stored (core migration 0006):
// its assets' groups, computed from its group-assignment logs, are the same after the upgrade,
// and the new `group.id` filter finds them. The upgrade computes every asset's intervals once,
// at the first start.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createTestDatabase, startTestServer, ADMIN } from '../support/server.ts';
import { passwordToken, request } from '../support/http.ts';

test("an upgraded farm keeps its assets' groups, computed at its first start", async (t) => {
  const database = await createTestDatabase();
  t.after(() => database.drop());
  let server = await startTestServer({ database });
  let token = await passwordToken(server.url, ADMIN.name, ADMIN.password);
  const post = async (path: string, data: unknown) => {
    const res = await request(`${server.url}${path}`, { method: 'POST', token, json: { data } });
    assert.equal(res.status, 201, res.text);
    return res.body.data;
  };
  const herd = await post('/api/asset/group', { type: 'asset--group', attributes: { name: 'Herd' } });
  const cow = await post('/api/asset/equipment', { type: 'asset--equipment', attributes: { name: 'Milking machine' } });
  await post('/api/log/activity', {
    type: 'log--activity',
    attributes: { timestamp: Math.floor(Date.now() / 1000) - 60, status: 'done', is_group_assignment: true },
    relationships: {
      asset: { data: [{ type: cow.type, id: cow.id }] },
      group: { data: [{ type: herd.type, id: herd.id }] },
    },
  });
  // The database as the release before left it: no membership table, migration 0006 not applied.
  const knex = server.ctx.db.knex;
  await knex.schema.dropTable('asset_group');
  await knex('knex_migrations').where('name', 'core/0006_asset_group').delete();
  await knex('tilth_migration_checksums').where('name', 'core/0006_asset_group').delete();
  await server.close();

  server = await startTestServer({ database });
  t.after(() => server.close());
  token = await passwordToken(server.url, ADMIN.name, ADMIN.password);
  const one = await request(`${server.url}/api/asset/equipment/${cow.id}`, { token });
  assert.deepEqual(
    one.body.data.relationships.group.data.map((g: { id: string }) => g.id),
    [herd.id],
  );
  const members = await request(`${server.url}/api/asset/equipment?filter[group.id]=${herd.id}`, { token });
  assert.deepEqual(
    members.body.data.map((a: { id: string }) => a.id),
    [cow.id],
  );
});
