// A filter on a compound field by its bare name means its main property, as Drupal resolves it
// (issue 8 item 11): farmOS.js sends `notes: null` as an IS NULL condition on the path `notes`.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServerAsAdmin, type TestServer } from '../support/server.ts';
import { request } from '../support/http.ts';

let server: TestServer;
let token: string;

before(async () => {
  ({ server, token } = await startTestServerAsAdmin());
  for (const [name, notes, geometry] of [
    ['With notes', 'Clover', 'POINT (1 2)'],
    ['Without notes', null, null],
  ] as const) {
    const res = await request(`${server.url}/api/log/observation`, {
      method: 'POST',
      token,
      json: {
        data: {
          type: 'log--observation',
          attributes: { name, ...(notes ? { notes: { value: notes } } : {}), ...(geometry ? { geometry } : {}) },
        },
      },
    });
    assert.equal(res.status, 201, res.text);
  }
  const tagged = await request(`${server.url}/api/asset/equipment`, {
    method: 'POST',
    token,
    json: {
      data: { type: 'asset--equipment', attributes: { name: 'Bessie', id_tag: [{ id: 'EID-42', type: 'eid' }] } },
    },
  });
  assert.equal(tagged.status, 201, tagged.text);
});
after(() => server.close());

const names = async (query: string, path = 'log/observation') => {
  const res = await request(`${server.url}/api/${path}?${query}`, { token });
  assert.equal(res.status, 200, `${query}: ${res.text}`);
  return res.body.data.map((r: any) => r.attributes.name).sort();
};

test('a bare compound field name means its main property, for every operator', async () => {
  assert.deepEqual(await names('filter[notes]=Clover'), ['With notes']);
  assert.deepEqual(
    await names('filter[n][condition][path]=notes&filter[n][condition][operator]=IS%20NULL'),
    ['Without notes'],
    "farmOS.js's notes: null",
  );
  assert.deepEqual(await names('filter[n][condition][path]=notes&filter[n][condition][operator]=IS%20NOT%20NULL'), [
    'With notes',
  ]);
  assert.deepEqual(
    await names(
      'filter[n][condition][path]=notes&filter[n][condition][operator]=CONTAINS&filter[n][condition][value]=lov',
    ),
    ['With notes'],
  );
  assert.deepEqual(await names('filter[g][condition][path]=geometry&filter[g][condition][operator]=IS%20NULL'), [
    'Without notes',
  ]);
  assert.deepEqual(await names('filter[notes.value]=Clover'), ['With notes'], 'naming the property still works');
  assert.deepEqual(await names('filter[id_tag]=EID-42', 'asset/equipment'), ['Bessie'], 'an ID tag by its id');
  const single = await request(`${server.url}/api/log/observation?filter[name.value]=x`, { token });
  assert.equal(single.status, 400, 'single-property fields still take no property');
});
