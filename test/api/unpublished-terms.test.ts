// Unpublished taxonomy terms (status: false) are hidden from the farm roles, as in farmOS
// (issue 41 B.5; Drupal's TermAccessControlHandler lets only "view unpublished terms" or
// "administer taxonomy" see them, which no farm role has): a GET is 403, collections leave them
// out, filters through them match nothing, includes and the change feed leave them out. The
// administrator sees them.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, ADMIN, type TestServer } from '../support/server.ts';
import { passwordToken } from '../support/http.ts';
import { Api, ref } from '../support/fixtures.ts';
import { addUser } from '../oauth/helpers.ts';

let server: TestServer;
let admin: Api;
let secret: any;
let plant: any;

before(async () => {
  server = await startTestServer();
  admin = new Api(server.url, await passwordToken(server.url, ADMIN.name, ADMIN.password));
  secret = await admin.create('taxonomy_term--plant_type', { name: 'Secret variety', status: false });
  await admin.create('taxonomy_term--plant_type', { name: 'Public variety' });
  plant = await admin.create('asset--plant', { name: 'Trial bed' }, { plant_type: { data: [ref(secret)] } });
});
after(() => server.close());

for (const role of ['farm_viewer', 'farm_manager']) {
  test(`a ${role} does not see an unpublished term: GET 403, not listed, not matched through, not included, not in the feed`, async () => {
    const user = await addUser(server, [role]);
    const api = new Api(server.url, await passwordToken(server.url, user.name, user.password));
    assert.equal((await api.get(`/api/taxonomy_term/plant_type/${secret.id}`)).status, 403);
    const list = await api.get('/api/taxonomy_term/plant_type');
    assert.deepEqual(
      list.body.data.map((t: any) => t.attributes.name),
      ['Public variety'],
    );
    assert.deepEqual(
      (await api.get('/api/asset/plant?filter[plant_type.name]=Secret%20variety')).body.data,
      [],
      'a filter through it matches nothing',
    );
    const included = await api.get(`/api/asset/plant/${plant.id}?include=plant_type`);
    assert.equal(included.status, 200);
    assert.deepEqual(included.body.included ?? [], [], 'not included');
    const feed = await api.get(
      '/api/changes?since=0&include=records&page[limit]=50&filter[type]=taxonomy_term--plant_type',
    );
    assert.equal(feed.status, 200, feed.text.slice(0, 300));
    assert.ok(!JSON.stringify(feed.body).includes(secret.id), 'not in the change feed');
  });
}

test('the administrator sees it everywhere', async () => {
  assert.equal((await admin.get(`/api/taxonomy_term/plant_type/${secret.id}`)).status, 200);
  assert.equal((await admin.get('/api/taxonomy_term/plant_type')).body.data.length, 2);
  assert.equal((await admin.get('/api/asset/plant?filter[plant_type.name]=Secret%20variety')).body.data.length, 1);
  const feed = await admin.get('/api/changes?since=0&page[limit]=50&filter[type]=taxonomy_term--plant_type');
  assert.ok(JSON.stringify(feed.body).includes(secret.id));
});
