// The API root and the schema endpoints, anonymous and authenticated (farmos-behaviour.md §3).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, ADMIN, type TestServer } from '../support/server.ts';
import { request, passwordToken } from '../support/http.ts';
import { addUser } from '../oauth/helpers.ts';

let server: TestServer;
before(async () => {
  server = await startTestServer();
});
after(() => server.close());

test('GET /api describes the farm and links every resource type, absolutely', async () => {
  for (const path of ['/api', '/api/']) {
    const res = await request(`${server.url}${path}`);
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /application\/vnd\.api\+json/);
    assert.deepEqual(res.body.data, []);
    assert.equal(res.body.jsonapi.version, '1.0');
    assert.deepEqual(res.body.meta.farm, {
      name: 'Test Farm',
      url: server.url,
      version: '2.x',
      system_of_measurement: 'metric',
    });
    assert.equal(res.body.meta.links, undefined, 'anonymous requests get no meta.links.me');
    assert.equal(res.body.links.self.href, `${server.url}/api`);
    for (const type of [
      'log--activity',
      'log--lab_test',
      'asset--land',
      'asset--water',
      'quantity--quantity',
      'quantity--standard',
      'taxonomy_term--unit',
      'user--user',
      'file--file',
    ]) {
      const [entity, bundle] = type.split('--');
      assert.equal(res.body.links[type]?.href, `${server.url}/api/${entity}/${bundle}`, type);
    }
    assert.equal(res.body.links['log--sale'], undefined, 'the ledger module is off by default');
  }
});

test('GET /api links the authenticated user as meta.links.me', async () => {
  const token = await passwordToken(server.url, ADMIN.name, ADMIN.password);
  const res = await request(`${server.url}/api`, { token });
  assert.equal(res.status, 200);
  const me = res.body.meta.links.me;
  assert.match(me.meta.id, /^[0-9a-f-]{36}$/);
  assert.equal(me.href, `${server.url}/api/user/user/${me.meta.id}`);
});

test('GET /api answers each user with their own meta.links.me, asked in turn', async () => {
  const other = await addUser(server, ['farm_viewer']);
  const tokens = [
    await passwordToken(server.url, ADMIN.name, ADMIN.password),
    await passwordToken(server.url, other.name, other.password),
  ];
  const admin = (await server.ctx.db.knex('users').where('id', 1).first('uuid')).uuid;
  const expected = [admin, other.uuid];
  assert.notEqual(expected[0], expected[1]);
  // Each user's document is kept once made: ask in turn, so a second ask of each is served from it.
  for (const i of [0, 1, 0, 1]) {
    const res = await request(`${server.url}/api`, { token: tokens[i] });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'application/vnd.api+json; charset=utf-8');
    assert.equal(res.body.meta.links.me.meta.id, expected[i]);
    assert.equal(res.body.meta.links.me.href, `${server.url}/api/user/user/${expected[i]}`);
  }
  const anonymous = await request(`${server.url}/api`);
  assert.equal(anonymous.body.meta.links, undefined);
  assert.equal(anonymous.headers.get('content-type'), 'application/vnd.api+json; charset=utf-8');
});

test('schemas are served without a token in the shape farmOS.js reads', async () => {
  const index = await request(`${server.url}/api/schema`);
  assert.equal(index.status, 200);
  const links = index.body.allOf[1].links as Array<{
    templatePointers: { instanceHref: string };
    targetSchema: { $ref: string };
  }>;
  assert.ok(
    links.some(
      (l) =>
        l.templatePointers.instanceHref === '/links/log--activity/href' &&
        l.targetSchema.$ref === `${server.url}/api/log/activity/collection/schema`,
    ),
  );

  const res = await request(`${server.url}/api/log/activity/resource/schema`);
  assert.equal(res.status, 200);
  const defs = res.body.definitions;
  assert.equal(defs.type.const, 'log--activity');
  assert.equal(defs.attributes.properties.timestamp.format, 'date-time');
  for (const [name, rel] of Object.entries<any>(defs.relationships.properties)) {
    assert.ok(
      ['object', 'array'].includes(rel.properties.data.type),
      `relationship ${name} has data.type object or array`,
    );
  }
  assert.deepEqual(
    defs.attributes.properties.status.oneOf.map((o: { const: string }) => o.const),
    ['pending', 'done'],
  );
  for (const suffix of ['schema', 'collection/schema', 'resource/relationships/asset/related/schema']) {
    const doc = await request(`${server.url}/api/log/activity/${suffix}`);
    assert.equal(doc.status, 200, suffix);
    assert.ok(doc.body.definitions.data, suffix);
  }
});

test('an unknown path under /api is a JSON:API 404 and a wrong method a 405 with Allow', async () => {
  const missing = await request(`${server.url}/api/log/nonsense`);
  assert.equal(missing.status, 404);
  assert.equal(missing.body.errors[0].status, '404');
  const wrong = await request(`${server.url}/api/log/activity`, { method: 'PUT' });
  assert.equal(wrong.status, 405);
  assert.equal(wrong.headers.get('allow'), 'GET, POST');
  assert.equal(wrong.body.errors[0].status, '405');
});
