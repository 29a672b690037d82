// Configuration resources records point at (issue 8 items 9 and 10): log types, asset types,
// quantity types, vocabularies and roles are readable at their collections, with the very
// identifiers records carry, and usable in include; Field Kit signs in with its own client and
// finds its (empty) field module collection.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServerAsAdmin, startTestServer, ADMIN, type TestServer } from '../support/server.ts';
import { request, passwordToken } from '../support/http.ts';
import { token } from '../oauth/helpers.ts';
import { createUser } from '../../runtime/accounts/users.ts';

let server: TestServer;
let admin: string;
let viewer: string;

before(async () => {
  ({ server, token: admin } = await startTestServerAsAdmin());
  await createUser(server.ctx.db.knex, { name: 'cora', password: 'cora-password', roles: ['farm_viewer'] });
  viewer = await passwordToken(server.url, 'cora', 'cora-password');
});
after(() => server.close());

test('every relationship to a configuration resource resolves, and include brings it', async () => {
  const log = await request(`${server.url}/api/log/activity`, {
    method: 'POST',
    token: admin,
    json: { data: { type: 'log--activity', attributes: { name: 'Mow' } } },
  });
  const logType = log.body.data.relationships.log_type.data;
  assert.equal(logType.type, 'log_type--log_type');
  const one = await request(`${server.url}/api/log_type/log_type/${logType.id}`, { token: viewer });
  assert.equal(one.status, 200, one.text);
  assert.equal(one.body.data.attributes.drupal_internal__id, 'activity');
  assert.equal(one.body.data.attributes.label, 'Activity');
  const included = await request(`${server.url}/api/log/activity/${log.body.data.id}?include=log_type`, {
    token: viewer,
  });
  assert.equal(included.status, 200, included.text);
  assert.deepEqual(
    included.body.included.map((r: any) => [r.type, r.id]),
    [['log_type--log_type', logType.id]],
  );

  const term = await request(`${server.url}/api/taxonomy_term/unit`, {
    method: 'POST',
    token: admin,
    json: { data: { type: 'taxonomy_term--unit', attributes: { name: 'kg' } } },
  });
  const vid = term.body.data.relationships.vid.data;
  const vocab = await request(`${server.url}/api/taxonomy_vocabulary/taxonomy_vocabulary/${vid.id}`, { token: viewer });
  assert.equal(vocab.body.data.attributes.drupal_internal__vid, 'unit');
  const list = await request(`${server.url}/api/taxonomy_term/unit?include=vid`, { token: viewer });
  assert.equal(list.body.included.length, 1, 'each included once');

  const me = await request(`${server.url}/api/user/user?include=roles&filter[name]=admin`, { token: admin });
  assert.equal(me.status, 200, me.text);
  assert.deepEqual(
    me.body.included.map((r: any) => r.attributes.drupal_internal__id),
    ['administrator'],
  );
  assert.equal(me.body.included[0].attributes.is_admin, true);

  const asset = await request(`${server.url}/api/asset/equipment`, {
    method: 'POST',
    token: admin,
    json: { data: { type: 'asset--equipment', attributes: { name: 'Tractor' } } },
  });
  assert.equal(
    (
      await request(`${server.url}/api/asset_type/asset_type/${asset.body.data.relationships.asset_type.data.id}`, {
        token: viewer,
      })
    ).body.data.attributes.drupal_internal__id,
    'equipment',
  );
});

test('collections list every enabled bundle, filter by machine name, and are read-only', async () => {
  const types = await request(`${server.url}/api/log_type/log_type`, { token: viewer });
  const ids = types.body.data.map((t: any) => t.attributes.drupal_internal__id);
  assert.ok(ids.includes('harvest') && ids.includes('activity'));
  assert.ok(!ids.includes('sale'), 'the ledger module is off');
  const one = await request(`${server.url}/api/log_type/log_type?filter[drupal_internal__id]=harvest`, {
    token: viewer,
  });
  assert.deepEqual(
    one.body.data.map((t: any) => t.attributes.drupal_internal__id),
    ['harvest'],
  );
  assert.equal((await request(`${server.url}/api/log_type/log_type?filter[label]=x`, { token: viewer })).status, 400);
  assert.equal(
    (await request(`${server.url}/api/quantity_type/quantity_type`, { token: viewer })).body.data.length > 0,
    true,
  );
  assert.equal((await request(`${server.url}/api/user_role/user_role`, { token: viewer })).body.data.length, 5);
  assert.equal((await request(`${server.url}/api/log_type/log_type`)).status, 401);
  assert.equal(
    (
      await request(`${server.url}/api/log_type/log_type`, {
        method: 'POST',
        token: admin,
        json: { data: { type: 'log_type--log_type' } },
      })
    ).status,
    405,
  );
  const root = await request(`${server.url}/api`);
  for (const type of [
    'log_type--log_type',
    'asset_type--asset_type',
    'quantity_type--quantity_type',
    'taxonomy_vocabulary--taxonomy_vocabulary',
    'user_role--user_role',
    'field_module--field_module',
  ]) {
    assert.ok(root.body.links[type]?.href, `GET /api links ${type}`);
  }
});

test('Field Kit signs in with its own client and finds no field modules', async (t) => {
  const signIn = await token(server, {
    grant_type: 'password',
    client_id: 'fieldkit',
    username: 'cora',
    password: 'cora-password',
  });
  assert.equal(signIn.status, 200, signIn.text);
  assert.ok(signIn.body.refresh_token, 'and keeps the session with a refresh token');
  const again = await token(server, {
    grant_type: 'refresh_token',
    client_id: 'fieldkit',
    refresh_token: signIn.body.refresh_token,
  });
  assert.equal(again.status, 200);
  const modules = await request(`${server.url}/api/field_module/field_module`, { token: again.body.access_token });
  assert.equal(modules.status, 200);
  assert.deepEqual(modules.body.data, []);

  const off = await startTestServer({ env: { TILTH_FIELDKIT_CLIENT: '0' } });
  t.after(() => off.close());
  const refused = await token(off, {
    grant_type: 'password',
    client_id: 'fieldkit',
    username: ADMIN.name,
    password: ADMIN.password,
  });
  assert.equal(refused.status, 401);
  assert.equal(refused.body.error, 'invalid_client');
});
