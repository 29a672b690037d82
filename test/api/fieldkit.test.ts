// Field Kit's sign-in and sync, request by request as clients.md records them (Field Kit 2.0.0-alpha.8
// on farmOS.js 2.0.0-beta.16): the `fieldkit` client's password grant, GET /api/, every bundle's
// schema, the three config collections (login fails on the first 404), the farm and the user from
// /api, the field modules, a first sync over every bundle, and saving a log the way it does
// (PATCH → 404 → POST with the client's UUID, then a PATCH echoing the whole record with no owner).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { startTestServer, type TestServer } from '../support/server.ts';
import { request } from '../support/http.ts';
import { token } from '../oauth/helpers.ts';
import { createUser } from '../../runtime/accounts/users.ts';

let server: TestServer;
before(async () => {
  server = await startTestServer();
  await createUser(server.ctx.db.knex, { name: 'wren', password: 'wren-password', roles: ['farm_worker'] });
});
after(() => server.close());

test('Field Kit signs in, syncs every bundle and saves a log as farmOS answers it', async () => {
  const signIn = await token(server, {
    grant_type: 'password',
    client_id: 'fieldkit',
    username: 'wren',
    password: 'wren-password',
  });
  assert.equal(signIn.status, 200, signIn.text);
  const bearer = signIn.body.access_token as string;
  const get = async (path: string) => {
    const res = await request(`${server.url}${path}`, { token: bearer });
    assert.equal(res.status, 200, `${path}: ${res.text.slice(0, 200)}`);
    return res.body;
  };

  // GET /api/ (with the slash Field Kit writes), then every bundle's schema from its links.
  const root = await get('/api/');
  const bundles = Object.keys(root.links).filter((k) => /^(asset|log|quantity|taxonomy_term|user)--/.test(k));
  assert.ok(bundles.length > 30, `${bundles.length} bundles listed`);
  for (const type of bundles) {
    const [entity, bundle] = type.split('--');
    const schema = await get(`/api/${entity}/${bundle}/resource/schema`);
    assert.ok(schema.properties?.attributes || schema.definitions || schema.allOf, `${type} has a schema`);
  }
  for (const config of ['log_type/log_type', 'asset_type/asset_type', 'quantity_type/quantity_type']) {
    const body = await get(`/api/${config}`);
    assert.ok(body.data.length > 0);
    for (const item of body.data)
      assert.ok(
        item.attributes.drupal_internal__id && item.attributes.label,
        `${config}: drupal_internal__id and label`,
      );
  }
  // The farm's name and the signed-in user, from /api's meta.
  const me = root.meta?.links?.me?.href as string;
  assert.ok(root.meta.farm?.name, 'meta.farm.name');
  assert.match(me, /\/api\/user\/user\/[0-9a-f-]{36}$/);
  const user = await get(new URL(me).pathname);
  assert.equal(user.data.attributes.name, 'wren');
  assert.deepEqual((await get('/api/field_module/field_module')).data, []);

  // First sync: a filtered collection over every asset, log, term and user bundle, as farmOS.js
  // writes `{ changed: { $gt: since } }` (a condition group per field, numbered).
  for (const type of bundles) {
    const [entity, bundle] = type.split('--');
    if (entity === 'quantity') continue;
    await get(
      `/api/${entity}/${bundle}?filter[changed-0-filter][condition][path]=changed&filter[changed-0-filter][condition][operator]=%3E&filter[changed-0-filter][condition][value]=0`,
    );
  }

  // Saving a new log: PATCH with the client's UUID (404), then POST with it.
  const id = randomUUID();
  const attributes = { name: 'Check fences', timestamp: 1700000000, status: 'pending' };
  const patch404 = await request(`${server.url}/api/log/activity/${id}`, {
    method: 'PATCH',
    token: bearer,
    json: { data: { id, type: 'log--activity', attributes } },
  });
  assert.equal(patch404.status, 404);
  const created = await request(`${server.url}/api/log/activity`, {
    method: 'POST',
    token: bearer,
    json: { data: { id, type: 'log--activity', attributes } },
  });
  assert.equal(created.status, 201, created.text);
  assert.equal(created.body.data.id, id);
  // Later it sends the whole record back, with owner emptied: farmOS gives the log its saver again.
  const echoed = await request(`${server.url}/api/log/activity/${id}`, {
    method: 'PATCH',
    token: bearer,
    json: {
      data: {
        id,
        type: 'log--activity',
        attributes: { ...created.body.data.attributes, status: 'done' },
        relationships: { owner: { data: [] } },
      },
    },
  });
  assert.equal(echoed.status, 200, echoed.text);
  assert.deepEqual(
    echoed.body.data.relationships.owner.data.map((r: { id: string }) => r.id),
    [user.data.id],
  );
  // Its task list: logs owned by the user.
  const tasks = await get(`/api/log/activity?filter[owner.id]=${user.data.id}`);
  assert.deepEqual(
    tasks.data.map((l: { id: string }) => l.id),
    [id],
  );

  // And the session lasts: the refresh grant with the same public client.
  const refreshed = await token(server, {
    grant_type: 'refresh_token',
    client_id: 'fieldkit',
    refresh_token: signIn.body.refresh_token,
  });
  assert.equal(refreshed.status, 200);
});
