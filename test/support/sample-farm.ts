/**
 * A small farm of every kind of record, built through the API of a test server: users, terms
 * with a parent stored after its child, assets with parents, a group and a movement, a fixed
 * location, quantities that adjust inventory, a birth, logs with files, notes, a back-dated
 * author, and a data stream with readings. `tilth import farmos` tests copy it and compare.
 */
import assert from 'node:assert/strict';
import { request } from './http.ts';

export interface SampleFarm {
  /** UUIDs of some records, for the tests' own checks. */
  field: string;
  cow: string;
  calf: string;
  herd: string;
  tank: string;
  fileLog: string;
  /** A log with two revisions: named "Moved herd", then "Moved the herd". */
  moved: string;
  stream: string;
  users: string[];
}

export async function buildSampleFarm(
  url: string,
  token: string,
  createUser: (name: string) => Promise<string>,
  size = 1,
): Promise<SampleFarm> {
  const post = async (path: string, data: unknown) => {
    const res = await request(`${url}${path}`, { method: 'POST', token, json: { data } });
    assert.equal(res.status, 201, `${path}: ${res.text.slice(0, 400)}`);
    return res.body.data as { id: string; type: string; attributes: any };
  };
  const ref = (r: { id: string; type: string }) => ({ type: r.type, id: r.id });
  const ann = await createUser('ann');
  const bob = await createUser('bob');
  // A child term stored before its parent: the parent has the higher number, so it comes later.
  const grain = await post('/api/taxonomy_term/plant_type', {
    type: 'taxonomy_term--plant_type',
    attributes: { name: 'Wheat' },
  });
  const cereals = await post('/api/taxonomy_term/plant_type', {
    type: 'taxonomy_term--plant_type',
    attributes: { name: 'Cereals', description: { value: '<p>Grasses</p>', format: 'plain_text' } },
  });
  const linked = await request(`${url}/api/taxonomy_term/plant_type/${grain.id}`, {
    method: 'PATCH',
    token,
    json: { data: { type: grain.type, id: grain.id, relationships: { parent: { data: [ref(cereals)] } } } },
  });
  assert.equal(linked.status, 200, linked.text);
  const liters = await post('/api/taxonomy_term/unit', { type: 'taxonomy_term--unit', attributes: { name: 'liters' } });
  const breed = await post('/api/taxonomy_term/animal_type', {
    type: 'taxonomy_term--animal_type',
    attributes: { name: 'Jersey' },
  });

  const field = await post('/api/asset/land', {
    type: 'asset--land',
    attributes: {
      name: 'North field',
      land_type: 'field',
      is_fixed: true,
      intrinsic_geometry: 'POLYGON ((0 0, 1 0, 1 1, 0 0))',
      notes: { value: 'Clay', format: 'default' },
    },
  });
  const barn = await post('/api/asset/structure', {
    type: 'asset--structure',
    attributes: { name: 'Barn', structure_type: 'building', is_fixed: true, intrinsic_geometry: 'POINT (5 5)' },
  });
  const cow = await post('/api/asset/animal', {
    type: 'asset--animal',
    attributes: { name: 'Daisy', created: '2019-03-01T10:00:00+00:00' },
    relationships: { animal_type: { data: ref(breed) }, uid: { data: { type: 'user--user', id: ann } } },
  });
  const calf = await post('/api/asset/animal', {
    type: 'asset--animal',
    attributes: { name: 'Buttercup' },
    relationships: {
      animal_type: { data: ref(breed) },
      parent: { data: [ref(cow)] },
      owner: { data: [{ type: 'user--user', id: bob }] },
    },
  });
  const herd = await post('/api/asset/group', { type: 'asset--group', attributes: { name: 'Herd' } });
  const tank = await post('/api/asset/water', { type: 'asset--water', attributes: { name: 'Tank' } });
  const wheat = await post('/api/asset/plant', {
    type: 'asset--plant',
    attributes: { name: 'Wheat 2024' },
    relationships: { plant_type: { data: [ref(grain)] } },
  });
  const stream = await post('/api/data_stream/basic', {
    type: 'data_stream--basic',
    attributes: { name: 'temperature' },
  });
  await post('/api/asset/sensor', {
    type: 'asset--sensor',
    attributes: { name: 'Thermometer' },
    relationships: { data_stream: { data: [ref(stream)] } },
  });
  const readings = await request(
    `${url}/api/data_stream/${stream.id}/data?private_key=${stream.attributes.private_key}`,
    {
      method: 'POST',
      json: [
        { timestamp: 1700000000, temperature: 12.5 },
        { timestamp: 1700000600, temperature: 13.25 },
        { timestamp: 1700001200, temperature: -1 },
      ],
    },
  );
  assert.ok(readings.status < 300, readings.text);

  const t0 = 1_700_000_000;
  const moved = await post('/api/log/activity', {
    type: 'log--activity',
    attributes: { name: 'Moved herd', timestamp: t0, status: 'done', is_movement: true, is_group_assignment: true },
    relationships: {
      asset: { data: [ref(cow), ref(calf)] },
      location: { data: [ref(field)] },
      group: { data: [ref(herd)] },
    },
  });
  // A second revision, with a message of its own.
  const fixed = await request(`${url}/api/log/activity/${moved.id}`, {
    method: 'PATCH',
    token,
    json: {
      data: {
        type: moved.type,
        id: moved.id,
        attributes: { name: 'Moved the herd', revision_log_message: 'Fixed the name' },
      },
    },
  });
  assert.equal(fixed.status, 200, fixed.text);
  for (let i = 0; i < size; i++) {
    await post('/api/log/observation', {
      type: 'log--observation',
      attributes: {
        name: `Looked ${i}`,
        timestamp: t0 + 100 + i,
        status: 'done',
        notes: { value: `note ${i}`, format: 'plain_text' },
        created: '2020-01-02T03:04:05+00:00',
        flag: ['review'],
      },
      relationships: { asset: { data: [ref(wheat)] }, uid: { data: { type: 'user--user', id: bob } } },
    });
  }
  await post('/api/log/activity', {
    type: 'log--activity',
    attributes: { name: 'Into the barn', timestamp: t0 + 5000, status: 'done', is_movement: true },
    relationships: { asset: { data: [ref(calf)] }, location: { data: [ref(barn)] } },
  });
  for (const [kind, decimal] of [
    ['increment', '100'],
    ['decrement', '30.5'],
  ] as const) {
    const q = await post('/api/quantity/standard', {
      type: 'quantity--standard',
      attributes: { measure: 'volume', value: { decimal }, inventory_adjustment: kind, label: kind },
      relationships: { inventory_asset: { data: ref(tank) }, units: { data: ref(liters) } },
    });
    await post('/api/log/harvest', {
      type: 'log--harvest',
      attributes: { name: `Water ${kind}`, timestamp: t0 + 6000, status: 'done' },
      relationships: { quantity: { data: [ref(q)] }, asset: { data: [ref(tank)] } },
    });
  }
  // A birth: the source gave the child its birthdate and mother; the import must not do it again.
  const clover = await post('/api/asset/animal', {
    type: 'asset--animal',
    attributes: { name: 'Clover' },
    relationships: { animal_type: { data: ref(breed) } },
  });
  await post('/api/log/birth', {
    type: 'log--birth',
    attributes: { timestamp: t0 + 6500, status: 'done' },
    relationships: { asset: { data: [ref(clover)] }, mother: { data: ref(cow) } },
  });
  const upload = await request(`${url}/api/log/observation/file`, {
    method: 'POST',
    token,
    headers: {
      'Content-Type': 'application/octet-stream',
      'Content-Disposition': 'file; filename="soil report.txt"',
      Accept: 'application/vnd.api+json',
    },
    body: 'pH 6.5, organic matter 4%\n'.repeat(50),
  });
  assert.equal(upload.status, 201, upload.text);
  const fileLog = await post('/api/log/observation', {
    type: 'log--observation',
    attributes: { name: 'Soil test', timestamp: t0 + 7000, status: 'pending' },
    relationships: {
      file: { data: [{ ...ref(upload.body.data), meta: { description: 'Lab report', display: true } }] },
    },
  });
  return {
    field: field.id,
    cow: cow.id,
    calf: calf.id,
    herd: herd.id,
    tank: tank.id,
    fileLog: fileLog.id,
    moved: moved.id,
    stream: stream.id,
    users: [ann, bob],
  };
}
