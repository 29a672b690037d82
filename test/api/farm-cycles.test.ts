// Rules farmOS enforces when records are saved (farmos-behaviour.md §1.7, §1.8): no asset located or
// grouped within itself, directly or through the locations (members) of its locations (groups).
// Ported from farmOS's LocationTest and GroupTest. (Parents, ID tags, births: farm-validation.test.ts,
// births-owner.test.ts.)
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServerAsAdmin, type TestServer } from '../support/server.ts';
import { request, type ApiResponse } from '../support/http.ts';

let server: TestServer;
let token: string;
before(async () => ({ server, token } = await startTestServerAsAdmin()));
after(() => server.close());

type Ref = { type: string; id: string };
const send = (method: string, path: string, data: unknown) =>
  request(`${server.url}${path}`, { method, token, json: { data } });
const post = async (path: string, data: unknown) => {
  const res = await send('POST', path, data);
  assert.equal(res.status, 201, res.text);
  return res.body.data;
};
const get = async (path: string) => (await request(`${server.url}${path}`, { token })).body.data;
const ref = (r: { type: string; id: string }): Ref => ({ type: r.type, id: r.id });
const count = async (path: string) => (await request(`${server.url}${path}`, { token })).body.data.length;

/** A 422 whose one error names the field and says what farmOS says. */
function assertRefused(res: ApiResponse, pointer: string, detail: RegExp) {
  assert.equal(res.status, 422, res.text);
  assert.equal(res.body.errors.length, 1, res.text);
  assert.equal(res.body.errors[0].source.pointer, pointer);
  assert.match(res.body.errors[0].detail, detail);
}

const NOW = Math.floor(Date.now() / 1000);

test('an asset cannot be moved into itself, directly or through the locations of its locations', async () => {
  const land = async (name: string) =>
    post('/api/asset/land', { type: 'asset--land', attributes: { name, land_type: 'field', is_fixed: false } });
  const [a, b, c] = [await land('Paddock A'), await land('Paddock B'), await land('Paddock C')];
  const move = (asset: Ref, to: Ref, timestamp: number) => ({
    type: 'log--activity',
    attributes: { name: `move ${timestamp}`, timestamp, status: 'done', is_movement: true },
    relationships: { asset: { data: [ref(asset)] }, location: { data: [ref(to)] } },
  });
  const before = await count('/api/log/activity');

  assertRefused(
    await send('POST', '/api/log/activity', move(a, a, NOW - 300)),
    '/data/relationships/asset/data/0',
    /Paddock A cannot be located within itself/,
  );
  await post('/api/log/activity', move(a, b, NOW - 300)); // A is in B
  assertRefused(
    await send('POST', '/api/log/activity', move(b, a, NOW - 200)),
    '/data/relationships/asset/data/0',
    /Paddock B cannot be located within itself/,
  );
  await post('/api/log/activity', move(b, c, NOW - 200)); // B is in C
  assertRefused(
    await send('POST', '/api/log/activity', move(c, a, NOW - 100)),
    '/data/relationships/asset/data/0',
    /Paddock C cannot be located within itself/,
  );

  // A harmless log turned circular by PATCH is refused too, and stays as it was.
  const other = await post('/api/log/activity', move(c, await land('Paddock D'), NOW - 100));
  const patched = await send('PATCH', `/api/log/activity/${other.id}`, {
    type: 'log--activity',
    id: other.id,
    relationships: { location: { data: [ref(a)] } },
  });
  assertRefused(patched, '/data/relationships/asset/data/0', /Paddock C cannot be located within itself/);
  assert.equal(
    (await get(`/api/log/activity/${other.id}`)).relationships.location.data[0].id !== a.id,
    true,
    'a refused PATCH changes nothing',
  );
  assert.equal(await count('/api/log/activity'), before + 3, 'refused logs leave no trace');

  // Not a movement: no location rule.
  await post('/api/log/activity', {
    ...move(a, a, NOW),
    attributes: { name: 'observe', timestamp: NOW, status: 'done', is_movement: false },
  });
});

test('a group cannot become a member of itself, directly or through its members', async () => {
  const group = async (name: string) => post('/api/asset/group', { type: 'asset--group', attributes: { name } });
  const [g1, g2, g3] = [await group('Flock 1'), await group('Flock 2'), await group('Flock 3')];
  const assign = (asset: Ref, to: Ref, timestamp: number) => ({
    type: 'log--activity',
    attributes: { name: `assign ${timestamp}`, timestamp, status: 'done', is_group_assignment: true },
    relationships: { asset: { data: [ref(asset)] }, group: { data: [ref(to)] } },
  });
  assertRefused(
    await send('POST', '/api/log/activity', assign(g1, g1, NOW - 300)),
    '/data/relationships/asset/data/0',
    /Flock 1 cannot be a member of itself/,
  );
  await post('/api/log/activity', assign(g1, g2, NOW - 300)); // G1 in G2
  assertRefused(
    await send('POST', '/api/log/activity', assign(g2, g1, NOW - 200)),
    '/data/relationships/asset/data/0',
    /Flock 2 cannot be a member of itself/,
  );
  await post('/api/log/activity', assign(g2, g3, NOW - 200)); // G2 in G3
  assertRefused(
    await send('POST', '/api/log/activity', assign(g3, g1, NOW - 100)),
    '/data/relationships/asset/data/0',
    /Flock 3 cannot be a member of itself/,
  );
  // An animal (not a group) may join any group.
  const sheep = await post('/api/taxonomy_term/animal_type', {
    type: 'taxonomy_term--animal_type',
    attributes: { name: 'Sheep' },
  });
  const ewe = await post('/api/asset/animal', {
    type: 'asset--animal',
    attributes: { name: 'Ewe' },
    relationships: { animal_type: { data: ref(sheep) } },
  });
  await post('/api/log/activity', assign(ewe, g1, NOW - 100));
});
