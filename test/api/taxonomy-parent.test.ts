// A root taxonomy term's parent as Drupal's JSON:API shows it (issue 27 Part B row 5): the
// "virtual" resource identifier, core's stand-in for the unstored <root> term (target_id 0),
// which a client may send back as it read it. Filters on parent still see only real parents.
// And (row 6) a parent term is not deleted while children name it, as farmOS refuses it
// (entity_reference_integrity counts the parent field; issue 41 Part A).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, ADMIN, type TestServer } from '../support/server.ts';
import { passwordToken } from '../support/http.ts';
import { Api, ref } from '../support/fixtures.ts';

let server: TestServer;
let api: Api;

before(async () => {
  server = await startTestServer();
  api = new Api(server.url, await passwordToken(server.url, ADMIN.name, ADMIN.password));
});
after(() => server.close());

const TYPE = 'taxonomy_term--plant_type';
const path = (term: { id: string }) => `/api/taxonomy_term/plant_type/${term.id}`;
const VIRTUAL = {
  type: TYPE,
  id: 'virtual',
  meta: {
    links: {
      help: {
        href: 'https://www.drupal.org/docs/8/modules/json-api/core-concepts#virtual',
        meta: { about: "Usage and meaning of the 'virtual' resource identifier." },
      },
    },
  },
};

test("a root term's parent is Drupal's virtual identifier, in the resource, the relationship route and collections", async () => {
  const root = await api.create(TYPE, { name: `Root ${Date.now()}` });
  assert.deepEqual(root.relationships.parent.data, [VIRTUAL]);
  const read = await api.get(path(root));
  assert.deepEqual(read.body.data.relationships.parent.data, [VIRTUAL]);
  const rel = await api.get(`${path(root)}/relationships/parent`);
  assert.equal(rel.status, 200);
  assert.deepEqual(rel.body.data, [VIRTUAL]);
  const related = await api.get(`${path(root)}/parent`);
  assert.equal(related.status, 200);
  assert.deepEqual(related.body.data, [], 'the virtual root is not a resource');
  const included = await api.get(`${path(root)}?include=parent`);
  assert.equal(included.status, 200, included.text);
  assert.deepEqual(included.body.included ?? [], []);
  const child = await api.create(TYPE, { name: 'Child' }, { parent: { data: [ref(root)] } });
  assert.deepEqual(
    child.relationships.parent.data.map((p: any) => p.id),
    [root.id],
    'a real parent is shown as itself',
  );
});

test('sending back the parent as read works: the virtual identifier means the root', async () => {
  const root = await api.create(TYPE, { name: 'Brassicas' });
  const child = await api.create(TYPE, { name: 'Kale' }, { parent: { data: [ref(root)] } });
  // A client PATCHes back the whole resource it read.
  const read = (await api.get(path(root))).body.data;
  const echoed = await api.patch(path(root), {
    data: {
      type: TYPE,
      id: root.id,
      attributes: { name: 'Brassicas!' },
      relationships: { parent: read.relationships.parent },
    },
  });
  assert.equal(echoed.status, 200, echoed.text);
  assert.deepEqual(echoed.body.data.relationships.parent.data, [VIRTUAL]);
  // Making a child a root by sending the virtual identifier, with or without its meta.
  const moved = await api.patch(path(child), {
    data: { type: TYPE, id: child.id, relationships: { parent: { data: [{ type: TYPE, id: 'virtual' }] } } },
  });
  assert.equal(moved.status, 200, moved.text);
  assert.deepEqual(moved.body.data.relationships.parent.data, [VIRTUAL]);
  // Through the relationship route too.
  const back = await api.patch(`${path(child)}/relationships/parent`, { data: [ref(root)] });
  assert.ok([200, 204].includes(back.status), back.text);
  const again = await api.patch(`${path(child)}/relationships/parent`, { data: [VIRTUAL] });
  assert.ok([200, 204].includes(again.status), again.text);
  assert.deepEqual((await api.get(path(child))).body.data.relationships.parent.data, [VIRTUAL]);
  // A new term may be created with the virtual parent; a real parent beside it is kept.
  const made = await api.create(TYPE, { name: 'Created at the root' }, { parent: { data: [VIRTUAL] } });
  assert.deepEqual(made.relationships.parent.data, [VIRTUAL]);
  const both = await api.create(TYPE, { name: 'Both' }, { parent: { data: [VIRTUAL, ref(root)] } });
  assert.deepEqual(
    both.relationships.parent.data.map((p: any) => p.id),
    [root.id],
  );
  // The virtual identifier of another vocabulary is refused, as any wrong type is.
  const wrong = await api.patch(path(child), {
    data: {
      type: TYPE,
      id: child.id,
      relationships: { parent: { data: [{ type: 'taxonomy_term--unit', id: 'virtual' }] } },
    },
  });
  assert.equal(wrong.status, 422, wrong.text);
});

test('filters on parent see real parents only', async () => {
  const root = await api.create(TYPE, { name: `Filter root ${Date.now()}` });
  const child = await api.create(TYPE, { name: 'Filter child' }, { parent: { data: [ref(root)] } });
  const children = await api.get(`/api/taxonomy_term/plant_type?filter[parent.id]=${root.id}`);
  assert.deepEqual(
    children.body.data.map((t: any) => t.id),
    [child.id],
  );
  const roots = await api.all(
    `/api/taxonomy_term/plant_type?filter[r][condition][path]=parent.id&filter[r][condition][operator]=IS NULL`,
  );
  const ids = roots.map((t: any) => t.id);
  assert.ok(ids.includes(root.id), 'a root term has no parent to match');
  assert.ok(!ids.includes(child.id));
  const byName = await api.get(
    `/api/taxonomy_term/plant_type?filter[parent.name]=${encodeURIComponent(root.attributes.name)}`,
  );
  assert.deepEqual(
    byName.body.data.map((t: any) => t.id),
    [child.id],
  );
});

test('a parent term is not deleted while children name it (403, as in farmOS); once they are gone or moved it is', async () => {
  const parent = await api.create(TYPE, { name: 'Doomed parent' });
  const other = await api.create(TYPE, { name: 'Other parent' });
  const orphan = await api.create(TYPE, { name: 'Orphan' }, { parent: { data: [ref(parent)] } });
  const stepchild = await api.create(TYPE, { name: 'Two parents' }, { parent: { data: [ref(parent), ref(other)] } });
  const refused = await api.delete(path(parent));
  assert.equal(refused.status, 403, refused.text);
  assert.match(refused.body.errors[0].detail, /is referenced by 2 taxonomy_term\(s\) \(parent\)/);
  assert.deepEqual(
    (await api.get(path(stepchild))).body.data.relationships.parent.data.map((p: any) => p.id),
    [parent.id, other.id],
    'the children keep their parents',
  );
  assert.equal((await api.delete(path(orphan))).status, 204);
  const moved = await api.patch(path(stepchild), {
    data: { type: TYPE, id: stepchild.id, relationships: { parent: { data: [ref(other)] } } },
  });
  assert.equal(moved.status, 200, moved.text);
  assert.equal((await api.delete(path(parent))).status, 204);
  assert.deepEqual(
    (await api.get(path(stepchild))).body.data.relationships.parent.data.map((p: any) => p.id),
    [other.id],
  );
});
