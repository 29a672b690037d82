// Validation farmOS enforces (issue 8 item 2), each a 422 naming the field: parent chains that
// loop or list a parent twice, on assets and on terms.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServerAsAdmin, type TestServer } from '../support/server.ts';
import { request } from '../support/http.ts';

let server: TestServer;
let token: string;

before(async () => ({ server, token } = await startTestServerAsAdmin()));
after(() => server.close());

async function make(path: string, type: string, name: string, parents: string[] = []): Promise<string> {
  const res = await request(`${server.url}/api/${path}`, {
    method: 'POST',
    token,
    json: {
      data: { type, attributes: { name }, relationships: { parent: { data: parents.map((id) => ({ type, id })) } } },
    },
  });
  assert.equal(res.status, 201, res.text);
  return res.body.data.id;
}

const setParents = (path: string, type: string, id: string, parents: string[]) =>
  request(`${server.url}/api/${path}/${id}`, {
    method: 'PATCH',
    token,
    json: { data: { type, id, relationships: { parent: { data: parents.map((p) => ({ type, id: p })) } } } },
  });

for (const [path, type] of [
  ['asset/equipment', 'asset--equipment'],
  ['taxonomy_term/plant_type', 'taxonomy_term--plant_type'],
] as const) {
  test(`${type}: a parent chain may not loop, nor list a parent twice`, async () => {
    const a = await make(path, type, 'A');
    const b = await make(path, type, 'B', [a]);
    const c = await make(path, type, 'C', [b]);
    for (const [parents, why, detail] of [
      [[c], 'a grandchild as parent', /loop/],
      [[b], 'a child as parent', /loop/],
      [[a], 'itself', /its own parent/],
    ] as const) {
      const res = await setParents(path, type, a, [...parents]);
      assert.equal(res.status, 422, `${why}: ${res.text}`);
      assert.equal(res.body.errors[0].source.pointer, '/data/relationships/parent');
      assert.match(res.body.errors[0].detail, detail);
    }
    const twice = await request(`${server.url}/api/${path}`, {
      method: 'POST',
      token,
      json: {
        data: {
          type,
          attributes: { name: 'D' },
          relationships: {
            parent: {
              data: [
                { type, id: a },
                { type, id: a },
              ],
            },
          },
        },
      },
    });
    assert.equal(twice.status, 422);
    assert.match(twice.body.errors[0].detail, /twice/);
    const fine = await setParents(path, type, c, [a, b]);
    assert.equal(fine.status, 200, 'two ancestors as parents do not make a loop');
  });
}

test('ID tag types: eid and other on any asset, brand, ear_tag, leg_band and tattoo on animals only', async () => {
  const equipment = await request(`${server.url}/api/asset/equipment`, {
    method: 'POST',
    token,
    json: {
      data: {
        type: 'asset--equipment',
        attributes: { name: 'Branded tractor', id_tag: [{ id: 'B-1', type: 'brand' }] },
      },
    },
  });
  assert.equal(equipment.status, 422, equipment.text);
  assert.match(equipment.body.errors[0].detail, /^id_tag: .*"brand".*eid, other/);
  assert.equal(equipment.body.errors[0].source.pointer, '/data/attributes/id_tag/0');
  const eid = await request(`${server.url}/api/asset/equipment`, {
    method: 'POST',
    token,
    json: {
      data: { type: 'asset--equipment', attributes: { name: 'Chipped tractor', id_tag: [{ id: 'E-1', type: 'eid' }] } },
    },
  });
  assert.equal(eid.status, 201, eid.text);
  const breed = await request(`${server.url}/api/taxonomy_term/animal_type`, {
    method: 'POST',
    token,
    json: { data: { type: 'taxonomy_term--animal_type', attributes: { name: 'Angus' } } },
  });
  const cow = await request(`${server.url}/api/asset/animal`, {
    method: 'POST',
    token,
    json: {
      data: {
        type: 'asset--animal',
        attributes: {
          name: 'Bess',
          id_tag: [
            { id: 'B-2', type: 'brand' },
            { id: 'T-9', type: 'ear_tag' },
          ],
        },
        relationships: { animal_type: { data: { type: 'taxonomy_term--animal_type', id: breed.body.data.id } } },
      },
    },
  });
  assert.equal(cow.status, 201, cow.text);
  const schema = await request(`${server.url}/api/asset/equipment/resource/schema`);
  const types = schema.body.definitions.attributes.properties.id_tag.items.properties.type.anyOf.map(
    (t: any) => t.const,
  );
  assert.deepEqual(types, ['eid', 'other'], 'the schema says which types a bundle takes');
});
