// Smaller farmOS differences in the JSON:API layer (issue 41 Part C), each as a client sees it:
// relationship routes refusing what Drupal refuses, with `meta.arity` on parallel identifiers;
// sparse fieldsets leaving out empty members; `links.via` on error objects; blocked users shown
// to non-administrators as their name only (farmos-behaviour.md §4.3, §4.8, §4.9, §4.10).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, ADMIN, type TestServer } from '../support/server.ts';
import { passwordToken, request, JSONAPI } from '../support/http.ts';
import { Api, ref } from '../support/fixtures.ts';
import { createUser, setBlocked } from '../../runtime/accounts/users.ts';

let server: TestServer;
let api: Api;
let tractor: any;
let baler: any;
let kg: any;

before(async () => {
  server = await startTestServer();
  api = new Api(server.url, await passwordToken(server.url, ADMIN.name, ADMIN.password));
  tractor = await api.create('asset--equipment', { name: 'Tractor' });
  baler = await api.create('asset--equipment', { name: 'Baler' });
  kg = await api.create('taxonomy_term--unit', { name: 'kg' });
});
after(() => server.close());

const ids = (data: any[]) => data.map((i) => i.id);

test('relationship routes answer 400, changing nothing, to duplicates, the wrong shape and a type the field does not take', async () => {
  const log = await api.create('log--harvest', { name: 'Shapes' }, { asset: { data: [ref(tractor)] } });
  const rel = `/api/log/harvest/${log.id}/relationships/asset`;
  const q = await api.create('quantity--standard', { measure: 'weight' }, { units: { data: ref(kg) } });
  const units = `/api/quantity/standard/${q.id}/relationships/units`;
  const refused = async (
    method: 'post' | 'patch' | 'delete',
    path: string,
    body: unknown,
    detail: RegExp,
    label: string,
  ) => {
    const res = await api[method](path, body);
    assert.equal(res.status, 400, `${label}: ${res.status} ${res.text.slice(0, 300)}`);
    assert.match(res.body.errors[0].detail, detail, label);
  };
  const duplicate =
    /^Duplicate relationships are not permitted\. Use `meta\.arity` to distinguish resource identifiers with matching `type` and `id` values\.$/;
  for (const method of ['post', 'patch', 'delete'] as const) {
    await refused(method, rel, { data: [ref(baler), ref(baler)] }, duplicate, `${method} of the same identifier twice`);
    await refused(
      method,
      rel,
      { data: ref(baler) },
      /Invalid body payload for the relationship/,
      `${method} of one object to a to-many relationship`,
    );
    await refused(
      method,
      rel,
      { data: [ref(kg)] },
      /The provided type \(taxonomy_term--unit\) does not match the destination resource types \(.*asset--equipment.*\)\./,
      `${method} of a unit as an asset`,
    );
  }
  await refused(
    'patch',
    units,
    { data: [ref(kg)] },
    /Invalid body payload for the relationship/,
    'an array to a to-one relationship',
  );
  await refused(
    'patch',
    units,
    { data: ref(tractor) },
    /The provided type \(asset--equipment\) does not match the destination resource types \(taxonomy_term--unit\)\./,
    'an asset as a unit',
  );
  assert.deepEqual(ids((await api.get(rel)).body.data), [tractor.id], 'the to-many relationship is unchanged');
  assert.equal((await api.get(units)).body.data.id, kg.id, 'the to-one relationship is unchanged');
});

test('parallel identifiers told apart by meta.arity are stored, and served with their arity', async () => {
  const log = await api.create('log--harvest', { name: 'Twice' }, { asset: { data: [ref(tractor)] } });
  const rel = `/api/log/harvest/${log.id}/relationships/asset`;
  const res = await api.patch(rel, {
    data: [{ ...ref(baler), meta: { arity: 0 } }, ref(tractor), { ...ref(baler), meta: { arity: 1 } }],
  });
  assert.ok([200, 204].includes(res.status), `${res.status} ${res.text.slice(0, 300)}`);
  const data = (await api.get(rel)).body.data;
  assert.deepEqual(ids(data), [baler.id, tractor.id, baler.id]);
  assert.deepEqual(
    data.map((i: any) => i.meta.arity),
    [0, undefined, 1],
    'arity only on the identifiers that repeat',
  );
  const resource = (await api.get(`/api/log/harvest/${log.id}`)).body.data;
  assert.deepEqual(
    resource.relationships.asset.data.map((i: any) => i.meta.arity),
    [0, undefined, 1],
    'the same on the resource',
  );
});

test('a sparse fieldset that leaves no attributes or no relationships leaves out the member', async () => {
  const log = await api.create('log--harvest', { name: 'Sparse' }, { asset: { data: [ref(tractor)] } });
  let res = await api.get(`/api/log/harvest/${log.id}?fields[log--harvest]=asset`);
  assert.equal(res.status, 200);
  assert.equal('attributes' in res.body.data, false, `no attributes member: ${JSON.stringify(res.body.data)}`);
  assert.deepEqual(ids(res.body.data.relationships.asset.data), [tractor.id]);
  res = await api.get(`/api/log/harvest?fields[log--harvest]=name&filter[id]=${log.id}`);
  assert.equal(res.body.data[0].attributes.name, 'Sparse');
  assert.equal(
    'relationships' in res.body.data[0],
    false,
    `no relationships member: ${JSON.stringify(res.body.data[0])}`,
  );
});

test('every JSON:API error object names the request in links.via; /oauth/token errors stay RFC 6749', async () => {
  const path = '/api/log/harvest?filter[nope]=1&sort=nope';
  const res = await api.get(path);
  assert.equal(res.status, 400);
  for (const e of res.body.errors) {
    assert.deepEqual(e.links?.via, { href: `${server.url}${path}` }, JSON.stringify(e));
    assert.ok(e.code, 'the code is kept');
  }
  const missing = await api.get('/api/log/harvest/00000000-0000-4000-8000-000000000000');
  assert.equal(
    missing.body.errors[0].links.via.href,
    `${server.url}/api/log/harvest/00000000-0000-4000-8000-000000000000`,
  );
  const invalid = await api.post('/api/log/harvest', {
    data: { type: 'log--harvest', attributes: { timestamp: 'soon' } },
  });
  assert.equal(invalid.status, 422);
  for (const e of invalid.body.errors)
    assert.equal(e.links?.via?.href, `${server.url}/api/log/harvest`, JSON.stringify(e));

  const sub = await request(`${server.url}/subrequests?_format=json`, {
    method: 'POST',
    token: api.token,
    headers: { 'Content-Type': JSONAPI },
    body: JSON.stringify([
      { requestId: 'missing', uri: '/api/asset/equipment/00000000-0000-4000-8000-000000000000', action: 'view' },
      { requestId: 'outside', uri: '/oauth/token', action: 'view' },
    ]),
  });
  assert.equal(sub.status, 200, sub.text.slice(0, 300));
  const bodyOf = (id: string) => JSON.parse(sub.body[id].body);
  assert.equal(
    bodyOf('missing').errors[0].links.via.href,
    `${server.url}/api/asset/equipment/00000000-0000-4000-8000-000000000000`,
    'a sub-request names its own uri',
  );
  assert.equal(
    bodyOf('outside').errors[0].links.via.href,
    `${server.url}/oauth/token`,
    'a sub-request never sent names its uri too',
  );

  const token = await request(`${server.url}/oauth/token`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    body: 'grant_type=password&client_id=farm&username=admin&password=wrong',
  });
  assert.equal(token.status, 400);
  assert.deepEqual(Object.keys(token.body).sort(), ['error', 'error_description'], 'RFC 6749 errors are unchanged');
});

test('a blocked user is its name only to a non-administrator: listed, read, included and in the change feed', async () => {
  const knex = server.ctx.db.knex;
  const sam = await createUser(knex, {
    name: 'sam',
    password: 'sam-password',
    mail: 'sam@example.org',
    roles: ['farm_worker'],
  });
  await setBlocked(knex, 'sam', true);
  await createUser(knex, { name: 'vic', password: 'vic-password', roles: ['farm_viewer'] });
  const viewer = new Api(server.url, await passwordToken(server.url, 'vic', 'vic-password'));
  const log = await api.create(
    'log--activity',
    { name: "Sam's mowing", status: 'done' },
    { owner: { data: [{ type: 'user--user', id: sam.uuid }] } },
  );
  const labelOnly = (u: any, where: string) => {
    assert.equal(u.id, sam.uuid, where);
    assert.deepEqual(u.attributes, { display_name: 'sam' }, `${where}: the name only`);
    assert.equal('relationships' in u, false, `${where}: no relationships`);
  };

  const list = await viewer.get('/api/user/user?page[limit]=50');
  assert.equal(list.status, 200);
  labelOnly(
    list.body.data.find((u: any) => u.id === sam.uuid),
    'the list',
  );
  const one = await viewer.get(`/api/user/user/${sam.uuid}`);
  assert.equal(one.status, 200, one.text.slice(0, 300));
  labelOnly(one.body.data, 'GET');
  const owner = await viewer.get(`/api/log/activity/${log.id}?include=owner`);
  labelOnly(owner.body.included[0], 'included as the owner');
  assert.ok(!JSON.stringify([list.body, one.body, owner.body]).includes('sam@example.org'));

  const feed = await viewer.get('/api/changes?since=0&filter[type]=user--user&include=records&page[limit]=50');
  assert.equal(feed.status, 200, feed.text.slice(0, 300));
  assert.ok(
    feed.body.data.some((e: any) => e.id === sam.uuid),
    'the change feed lists the blocked user, as the collection does',
  );
  labelOnly(
    feed.body.included.find((u: any) => u.id === sam.uuid),
    'the change feed',
  );

  const csv = await viewer.get(`/api/log/activity?_format=csv&filter[id]=${log.id}`);
  assert.equal(csv.status, 200, csv.text.slice(0, 300));
  assert.match(csv.text, /"sam"/, 'the CSV names the blocked owner, as the document does');
  assert.ok(!csv.text.includes('sam@example.org'));

  const full = await api.get(`/api/user/user/${sam.uuid}`);
  assert.equal(full.body.data.attributes.mail, 'sam@example.org', 'an administrator sees the whole account');
  assert.equal(full.body.data.attributes.status, false);
  const edit = await viewer.patch(`/api/user/user/${sam.uuid}`, {
    data: { type: 'user--user', id: sam.uuid, attributes: { name: 'samuel' } },
  });
  assert.equal(edit.status, 403, 'seeing the name gives no right to edit');
});
