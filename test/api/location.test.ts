// Asset location and geometry from movement logs, and log geometry from locations (farmos-behaviour.md §1.7,
// farmOS's LocationAPITest and LocationTest).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServerAsAdmin, type TestServer } from '../support/server.ts';
import { request } from '../support/http.ts';

let server: TestServer;
let token: string;
before(async () => ({ server, token } = await startTestServerAsAdmin()));
after(() => server.close());

const post = async (path: string, data: unknown) => {
  const res = await request(`${server.url}${path}`, { method: 'POST', token, json: { data } });
  assert.equal(res.status, 201, res.text);
  return res.body.data;
};
const get = async (path: string) => (await request(`${server.url}${path}`, { token })).body.data;

const NOW = Math.floor(Date.now() / 1000);
const FIELD = 'POLYGON ((0 0, 10 0, 10 10, 0 10, 0 0))';
const BARN = 'POINT (20 20)';

test('fixed assets take their intrinsic geometry and no location; movable ones follow done movement logs up to now', async () => {
  const field = await post('/api/asset/land', {
    type: 'asset--land',
    attributes: { name: 'Field', land_type: 'field', intrinsic_geometry: FIELD },
  });
  assert.equal(field.attributes.geometry.value, FIELD);
  assert.deepEqual(field.relationships.location.data, []);
  const barn = await post('/api/asset/structure', {
    type: 'asset--structure',
    attributes: { name: 'Barn', structure_type: 'building', intrinsic_geometry: BARN },
  });
  const type = await post('/api/taxonomy_term/animal_type', {
    type: 'taxonomy_term--animal_type',
    attributes: { name: 'Sheep' },
  });
  const ewe = await post('/api/asset/animal', {
    type: 'asset--animal',
    attributes: { name: 'Ewe' },
    relationships: { animal_type: { data: { type: 'taxonomy_term--animal_type', id: type.id } } },
  });
  assert.equal(ewe.attributes.geometry, null, 'a new movable asset has no geometry');
  assert.deepEqual(ewe.relationships.location.data, []);

  const move = (to: { id: string; type: string }, timestamp: number, status = 'done', geometry?: string) =>
    post('/api/log/activity', {
      type: 'log--activity',
      attributes: { timestamp, status, is_movement: true, ...(geometry ? { geometry } : {}) },
      relationships: { asset: { data: [{ type: 'asset--animal', id: ewe.id }] }, location: { data: [to] } },
    });
  const toField = await move({ type: 'asset--land', id: field.id }, NOW - 3600);
  assert.equal(toField.attributes.geometry.value, FIELD, "a movement without geometry takes its location's");
  let now = await get(`/api/asset/animal/${ewe.id}`);
  assert.deepEqual(
    now.relationships.location.data.map((r: { id: string }) => r.id),
    [field.id],
  );
  assert.equal(now.attributes.geometry.value, FIELD);

  await move({ type: 'asset--structure', id: barn.id }, NOW - 1800, 'pending');
  await move({ type: 'asset--structure', id: barn.id }, NOW + 86_400);
  now = await get(`/api/asset/animal/${ewe.id}`);
  assert.deepEqual(
    now.relationships.location.data.map((r: { id: string }) => r.id),
    [field.id],
    'pending and future movements do not count yet',
  );

  const toBarn = await move({ type: 'asset--structure', id: barn.id }, NOW - 60);
  now = await get(`/api/asset/animal/${ewe.id}`);
  assert.deepEqual(
    now.relationships.location.data.map((r: { id: string }) => r.id),
    [barn.id],
  );
  assert.equal(now.attributes.geometry.value, BARN);

  const custom = 'POINT (21 21)';
  const drawn = await move({ type: 'asset--structure', id: barn.id }, NOW - 30, 'done', custom);
  assert.equal(drawn.attributes.geometry.value, custom, 'a geometry the client drew is kept');
  assert.equal((await get(`/api/asset/animal/${ewe.id}`)).attributes.geometry.value, custom);

  for (const log of [drawn, toBarn])
    assert.equal((await request(`${server.url}/api/log/activity/${log.id}`, { method: 'DELETE', token })).status, 204);
  now = await get(`/api/asset/animal/${ewe.id}`);
  assert.deepEqual(
    now.relationships.location.data.map((r: { id: string }) => r.id),
    [field.id],
    'deleting the latest movement reverts to the one before',
  );
});

test('a log location must be a location asset', async () => {
  const tractor = await post('/api/asset/equipment', { type: 'asset--equipment', attributes: { name: 'Tractor' } });
  const res = await request(`${server.url}/api/log/activity`, {
    method: 'POST',
    token,
    json: {
      data: {
        type: 'log--activity',
        relationships: { location: { data: [{ type: 'asset--equipment', id: tractor.id }] } },
      },
    },
  });
  assert.equal(res.status, 422);
  assert.match(res.body.errors[0].detail, /location: "Tractor" .* is_location/);
});

test("group members take the group's location when the group moved after them, and leave it when unassigned", async () => {
  const field = await post('/api/asset/land', {
    type: 'asset--land',
    attributes: { name: 'Paddock', land_type: 'paddock', intrinsic_geometry: FIELD },
  });
  const barn = await post('/api/asset/structure', {
    type: 'asset--structure',
    attributes: { name: 'Shed', structure_type: 'building', intrinsic_geometry: BARN },
  });
  const herd = await post('/api/asset/group', { type: 'asset--group', attributes: { name: 'Herd' } });
  const mower = await post('/api/asset/equipment', { type: 'asset--equipment', attributes: { name: 'Mower' } });
  const asset = (a: { id: string; type: string }) => ({ type: a.type, id: a.id });
  const log = (attributes: Record<string, unknown>, relationships: Record<string, unknown>) =>
    post('/api/log/activity', { type: 'log--activity', attributes: { status: 'done', ...attributes }, relationships });
  const locationOf = async () =>
    (await get(`/api/asset/equipment/${mower.id}`)).relationships.location.data.map((r: { id: string }) => r.id);

  await log(
    { timestamp: NOW - 500, is_movement: true },
    { asset: { data: [asset(mower)] }, location: { data: [asset(field)] } },
  );
  await log(
    { timestamp: NOW - 400, is_group_assignment: true },
    { asset: { data: [asset(mower)] }, group: { data: [asset(herd)] } },
  );
  const member = await get(`/api/asset/equipment/${mower.id}`);
  assert.deepEqual(
    member.relationships.group.data.map((r: { id: string }) => r.id),
    [herd.id],
  );
  assert.deepEqual(await locationOf(), [field.id], 'its own location until the group moves');

  await log(
    { timestamp: NOW - 300, is_movement: true },
    { asset: { data: [asset(herd)] }, location: { data: [asset(barn)] } },
  );
  assert.deepEqual(await locationOf(), [barn.id], 'the group moved after it: it goes with the group');

  await log(
    { timestamp: NOW - 200, is_movement: true },
    { asset: { data: [asset(mower)] }, location: { data: [asset(field)] } },
  );
  assert.deepEqual(await locationOf(), [field.id], 'its own later movement wins');

  await log(
    { timestamp: NOW - 150, is_movement: true },
    { asset: { data: [asset(herd)] }, location: { data: [asset(barn)] } },
  );
  assert.deepEqual(await locationOf(), [barn.id]);
  await log({ timestamp: NOW - 100, is_group_assignment: true }, { asset: { data: [asset(mower)] } });
  assert.deepEqual(
    (await get(`/api/asset/equipment/${mower.id}`)).relationships.group.data,
    [],
    'an assignment without groups unassigns',
  );
  assert.deepEqual(await locationOf(), [field.id], 'out of the group, back to its own latest movement');
});

test("a log's geometry from several or multi-part locations: farmOS's WktTrait::combineWkt, flattened into one GEOMETRYCOLLECTION", async () => {
  const place = async (name: string, wkt: string) =>
    (
      await post('/api/asset/land', {
        type: 'asset--land',
        attributes: { name, land_type: 'field', intrinsic_geometry: wkt },
      })
    ).id as string;
  const twoFields = await place('Two fields', 'MULTIPOLYGON(((0 0,1 0,1 1,0 0)),((2 2,3 2,3 3,2 2)))');
  const well = await place('Well', 'POINT(5 6)');
  const tight = await place('Tight', 'POLYGON((0 0,1 0,1 1,0 0))');
  const hedges = await place('Hedges', 'MULTILINESTRING((0 0,1 1),(2 2,3 3))');
  const trees = await place('Trees', 'MULTIPOINT((7 7),(8 8))');
  const mixed = await place('Mixed', 'GEOMETRYCOLLECTION(POINT(9 9),MULTIPOLYGON(((0 0,1 0,1 1,0 0))))');
  const precise = await place('Precise', 'POINT(-75.1234567 40.10)');
  const geometryOf = async (...locations: string[]) => {
    const log = await post('/api/log/activity', {
      type: 'log--activity',
      attributes: { name: 'Where', timestamp: NOW, status: 'done' },
      relationships: { location: { data: locations.map((id) => ({ type: 'asset--land', id })) } },
    });
    return log.attributes.geometry?.value;
  };
  const P1 = 'POLYGON ((0 0, 1 0, 1 1, 0 0))';
  const P2 = 'POLYGON ((2 2, 3 2, 3 3, 2 2))';
  // One multi-geometry: its parts, in a collection.
  assert.equal(await geometryOf(twoFields), `GEOMETRYCOLLECTION (${P1},${P2})`);
  assert.equal(await geometryOf(trees), 'GEOMETRYCOLLECTION (POINT (7 7),POINT (8 8))');
  // One simple geometry: itself, written as geoPHP writes WKT.
  assert.equal(await geometryOf(tight), P1);
  // Several: one collection (parts joined by a bare comma, as farmOS joins them), multi-geometries
  // flattened, in the order of the locations.
  assert.equal(await geometryOf(twoFields, well), `GEOMETRYCOLLECTION (${P1},${P2},POINT (5 6))`);
  assert.equal(await geometryOf(well, twoFields), `GEOMETRYCOLLECTION (POINT (5 6),${P1},${P2})`);
  // farmOS's list spells MultiLineString "MultiLineSting": a MULTILINESTRING is kept whole.
  assert.equal(await geometryOf(hedges), 'MULTILINESTRING ((0 0, 1 1), (2 2, 3 3))');
  assert.equal(
    await geometryOf(well, hedges),
    'GEOMETRYCOLLECTION (POINT (5 6),MULTILINESTRING ((0 0, 1 1), (2 2, 3 3)))',
  );
  // A collection is flattened one level: its parts as they are.
  assert.equal(await geometryOf(mixed), 'GEOMETRYCOLLECTION (POINT (9 9),MULTIPOLYGON (((0 0, 1 0, 1 1, 0 0))))');
  // Coordinates written again: no trailing zeros.
  assert.equal(await geometryOf(precise), 'POINT (-75.1234567 40.1)');

  // A log whose automatic geometry was combined the way Tilth did before (the stored WKTs, joined
  // by ", ") still follows its locations when they change.
  const log = await post('/api/log/activity', {
    type: 'log--activity',
    attributes: { name: 'Older', timestamp: NOW, status: 'done' },
    relationships: {
      location: {
        data: [
          { type: 'asset--land', id: well },
          { type: 'asset--land', id: hedges },
        ],
      },
    },
  });
  await server.ctx.db
    .knex('log')
    .where('uuid', log.id)
    .update({ geometry__value: 'GEOMETRYCOLLECTION (POINT(5 6), MULTILINESTRING((0 0,1 1),(2 2,3 3)))' });
  const moved = await request(`${server.url}/api/log/activity/${log.id}`, {
    method: 'PATCH',
    token,
    json: {
      data: {
        type: 'log--activity',
        id: log.id,
        relationships: { location: { data: [{ type: 'asset--land', id: tight }] } },
      },
    },
  });
  assert.equal(moved.status, 200, moved.text);
  assert.equal(moved.body.data.attributes.geometry.value, P1);
});
