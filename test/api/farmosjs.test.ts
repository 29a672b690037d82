// End to end with the published farmOS.js client (farmos@2.0.0-beta.16; clients.md §1): what a
// user of the library does and sees. Authorize with the password grant, fetch schemata, create
// terms, assets, a quantity and logs with create + send (PATCH first, 404, then POST with the
// client's UUID), fetch with filters, page through more than 50 records, update, delete.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import farmosPkg from 'farmos';
import { startTestServer, ADMIN, type TestServer } from '../support/server.ts';
import { passwordToken } from '../support/http.ts';
import { Api } from '../support/fixtures.ts';

// From plain Node ESM the package resolves to its CommonJS build (clients.md §1.1).
const farmOS = (farmosPkg as unknown as { default: (config: unknown) => any }).default;

interface Seen {
  method: string;
  url: string;
  status: number;
}

let server: TestServer;
let farm: any;
let token: any = null;
const seen: Seen[] = [];
let api: Api;

/** A farmOS.js instance against the test server, recording every response of its axios instance. */
function makeFarm(getToken: () => any, setToken: (t: any) => void, log?: Seen[]): any {
  const f = farmOS({ remote: { host: server.url, clientId: 'farm', getToken, setToken } });
  if (log) {
    const record = (config: any, status: number) =>
      log.push({ method: String(config?.method ?? 'get').toUpperCase(), url: String(config?.url ?? ''), status });
    f.remote.request.interceptors.response.use(
      (res: any) => {
        record(res.config, res.status);
        return res;
      },
      (err: any) => {
        record(err.config, err.response?.status ?? 0);
        return Promise.reject(err);
      },
    );
  }
  return f;
}

const T = '2023-11-14T22:13:20.000Z'; // what farmOS.js shows for 1700000000
const ref = (e: { id: string; type: string }) => ({ id: e.id, type: e.type });

before(async () => {
  server = await startTestServer();
  farm = makeFarm(
    () => token,
    (t) => {
      token = t;
    },
    seen,
  );
  api = new Api(server.url, await passwordToken(server.url, ADMIN.name, ADMIN.password));
});
after(() => server.close());

test('authorize with the password grant (client id farm), then read the farm info', async () => {
  const t = await farm.remote.authorize(ADMIN.name, ADMIN.password);
  assert.equal(typeof t.access_token, 'string');
  assert.ok(t.access_token.length > 10);
  assert.equal(String(t.token_type).toLowerCase(), 'bearer');
  assert.ok(Number(t.expires_in) > 60, 'expires_in in seconds');
  assert.ok(t.expires > Date.now(), 'farmOS.js computed the expiry from expires_in');
  assert.equal(token, t, 'setToken was called');
  const info = await farm.remote.info();
  assert.equal(info.data.meta.farm.name, 'Test Farm');
  assert.equal(info.data.meta.links.me.meta.id.length, 36);
});

test('schema.fetch() loads every bundle farmOS.js knows; schema.set() installs them', async () => {
  const res = await farm.schema.fetch();
  assert.deepEqual(res.rejected, [], 'no schema request failed');
  for (const [entity, bundle] of [
    ['log', 'activity'],
    ['log', 'harvest'],
    ['asset', 'animal'],
    ['asset', 'land'],
    ['quantity', 'standard'],
    ['quantity', 'quantity'],
    ['taxonomy_term', 'unit'],
    ['user', 'user'],
  ]) {
    assert.ok(res.data[entity]?.[bundle], `schema of ${entity}--${bundle}`);
  }
  assert.equal(res.data.log.sale, undefined, 'no optional-module bundle');
  farm.schema.set(res.data);
  assert.ok(farm.schema.get('log', 'activity').properties.attributes.properties.timestamp);
  // Defaults farmOS.js derives from the schema.
  const log = farm.log.create({ type: 'log--activity', name: 'Draft' });
  assert.equal(log.attributes.status, 'pending');
  assert.deepEqual(log.relationships.asset, []);
});

let kg: any;
let sheep: any;
let feeding: any;
let tractor: any;
let dolly: any;
let pasture: any;
let hay: any;
let mowing: any;

test('create and send taxonomy terms, assets and a quantity', async () => {
  seen.length = 0;
  kg = await farm.term.send(farm.term.create({ type: 'taxonomy_term--unit', name: 'kg' }));
  assert.equal(kg.type, 'taxonomy_term--unit');
  assert.equal(kg.attributes.name, 'kg');
  // farmOS.js PATCHes its own UUID first, gets 404, then POSTs.
  assert.deepEqual(
    seen.map((s) => `${s.method} ${s.status}`),
    ['PATCH 404', 'POST 201'],
  );
  assert.match(seen[0]!.url, new RegExp(`/api/taxonomy_term/unit/${kg.id}$`));
  sheep = await farm.term.send(farm.term.create({ type: 'taxonomy_term--animal_type', name: 'Sheep' }));
  feeding = await farm.term.send(farm.term.create({ type: 'taxonomy_term--log_category', name: 'Feeding' }));

  const local = farm.asset.create({ type: 'asset--equipment', name: 'Tractor', manufacturer: 'Ford' });
  tractor = await farm.asset.send(local);
  assert.equal(tractor.id, local.id, 'the client-generated UUID is kept');
  assert.equal(tractor.attributes.name, 'Tractor');
  assert.equal(tractor.attributes.manufacturer, 'Ford');
  assert.equal(tractor.attributes.status, 'active');
  assert.equal(tractor.attributes.archived, null, 'farmOS.js sends archived = now with status active; active wins');
  dolly = await farm.asset.send(
    farm.asset.create({ type: 'asset--animal', name: 'Dolly', sex: 'F', animal_type: ref(sheep), birthdate: T }),
  );
  assert.equal(dolly.relationships.animal_type.id, sheep.id);
  assert.equal(dolly.attributes.sex, 'F');
  assert.equal(new Date(dolly.attributes.birthdate).toISOString(), T);
  pasture = await farm.asset.send(
    farm.asset.create({
      type: 'asset--land',
      name: 'Pasture',
      land_type: 'paddock',
      is_location: true,
      is_fixed: true,
      intrinsic_geometry: { value: 'POINT (-72.5 42.3)' },
    }),
  );
  assert.equal(pasture.attributes.geometry.value, 'POINT (-72.5 42.3)');

  hay = await farm.quantity.send(
    farm.quantity.create({
      type: 'quantity--standard',
      measure: 'weight',
      value: { numerator: 12, denominator: 1 },
      label: 'Hay',
      units: ref(kg),
    }),
  );
  assert.equal(hay.attributes.value.decimal, '12');
  assert.equal(hay.relationships.units.id, kg.id);
});

test('create and send logs referencing them; timestamps with and without farmOS.js transforms', async () => {
  const local = farm.log.create({
    type: 'log--activity',
    name: 'Feed the sheep',
    timestamp: T,
    status: 'done',
    asset: [ref(dolly)],
    quantity: [ref(hay)],
    category: [ref(feeding)],
    location: [ref(pasture)],
    equipment: [ref(tractor)],
    notes: { value: 'Two bales', format: 'default' },
  });
  mowing = await farm.log.send(local);
  assert.equal(mowing.id, local.id);
  assert.equal(mowing.attributes.name, 'Feed the sheep');
  assert.equal(mowing.attributes.timestamp, T);
  assert.equal(mowing.attributes.status, 'done');
  assert.deepEqual(
    mowing.relationships.asset.map((r: any) => r.id),
    [dolly.id],
  );
  assert.deepEqual(
    mowing.relationships.quantity.map((r: any) => r.id),
    [hay.id],
  );
  assert.deepEqual(
    mowing.relationships.category.map((r: any) => r.id),
    [feeding.id],
  );
  assert.deepEqual(
    mowing.relationships.location.map((r: any) => r.id),
    [pasture.id],
  );
  assert.equal(mowing.attributes.notes.value, 'Two bales');
  assert.ok(mowing.meta.remote.lastSync, 'the send response marks the entity synced');

  // A farm whose schemata came only from schema.fetch() has no date-time transforms: ISO strings are sent.
  let t2: any = token;
  const bare = makeFarm(
    () => t2,
    (t) => (t2 = t),
  );
  await bare.schema.fetch();
  const iso = await bare.log.send(
    bare.log.create({ type: 'log--observation', name: 'ISO timestamp', timestamp: '2023-11-14T22:13:20.123Z' }),
  );
  assert.equal(iso.attributes.timestamp, T);
  const unnamed = await farm.log.send(farm.log.create({ type: 'log--harvest', timestamp: T }));
  assert.match(unnamed.attributes.name, /^Harvest log \d+$/, 'the server names a log sent without a name');
});

test('fetch with filters, as a library user writes them', async () => {
  // A few more logs to tell filters apart.
  for (const [name, status, ts] of [
    ['Mow north', 'done', 1700003600],
    ['Mow south', 'pending', 1700007200],
    ['Fence check', 'pending', 1700010800],
  ] as const) {
    await farm.log.send(
      farm.log.create({
        type: 'log--activity',
        name,
        status,
        timestamp: new Date(ts * 1000).toISOString(),
        asset: name.startsWith('Mow') ? [ref(tractor)] : [],
      }),
    );
  }
  const names = async (filter: unknown, options: Record<string, unknown> = {}) => {
    const res = await farm.log.fetch({ filter, ...options });
    assert.deepEqual(res.rejected, [], JSON.stringify(filter));
    return res.data.map((e: any) => e.attributes.name).sort();
  };
  assert.deepEqual(await names({ type: 'log--activity', status: 'done' }), ['Feed the sheep', 'Mow north']);
  assert.deepEqual(await names({ type: 'log--activity', status: { $ne: 'done' } }), ['Fence check', 'Mow south']);
  assert.deepEqual(
    await names({ type: 'log--activity', status: { $in: ['done', 'pending'] }, name: { $ne: 'Fence check' } }),
    ['Feed the sheep', 'Mow north', 'Mow south'],
  );
  assert.deepEqual(await names({ type: 'log--activity', timestamp: { $gt: '2023-11-14T23:13:20.000Z' } }), [
    'Fence check',
    'Mow south',
  ]);
  assert.deepEqual(
    await names({
      type: 'log--activity',
      timestamp: { $gte: '2023-11-14T23:13:20.000Z', $lt: '2023-11-15T01:13:20.000Z' },
    }),
    ['Mow north', 'Mow south'],
  );
  assert.deepEqual(await names({ type: 'log--activity', 'asset.id': tractor.id }), ['Mow north', 'Mow south']);
  assert.deepEqual(await names({ type: 'log--activity', 'asset.name': 'Dolly' }), ['Feed the sheep']);
  assert.deepEqual(await names({ type: 'log--activity', 'location.id': { $in: [pasture.id] } }), ['Feed the sheep']);
  // A top-level $or: farmOS.js drops `type` and queries every log bundle; both branches filter on
  // `name`, so it labels both conditions `name-0-filter` and, PHP-style, the last one counts.
  assert.deepEqual(await names({ type: 'log--activity', $or: [{ name: 'Fence check' }, { name: 'Mow north' }] }), [
    'Mow north',
  ]);
  const either = await names({ $or: [{ status: 'pending' }, { name: 'Feed the sheep' }] });
  for (const n of ['Feed the sheep', 'Fence check', 'Mow south', 'ISO timestamp'])
    assert.ok(either.includes(n), `$or over every log bundle includes ${n}`);
  assert.ok(!either.includes('Mow north'));
  assert.deepEqual(
    await names([
      { type: 'log--activity', status: 'done' },
      { type: 'log--activity', name: 'Fence check' },
    ]),
    ['Feed the sheep', 'Fence check', 'Mow north'],
  );
  assert.deepEqual(await names({ type: 'log--activity', is_movement: false, status: 'done' }), [
    'Feed the sheep',
    'Mow north',
  ]);
  // {status: {$or: [...]}} sends two conditions under one key; as in farmOS, the last one counts.
  assert.deepEqual(await names({ type: 'log--activity', status: { $or: ['done', 'pending'] } }), [
    'Fence check',
    'Mow south',
  ]);
  // Sort, limit and include.
  const sorted = await farm.log.fetch({ filter: { type: 'log--activity' }, sort: { timestamp: 'DESC' }, limit: 2 });
  assert.deepEqual(
    sorted.data.map((e: any) => e.attributes.name),
    ['Fence check', 'Mow south'],
  );
  const withInclude = await farm.log.fetch({
    filter: { type: 'log--activity', name: 'Feed the sheep' },
    include: ['asset', 'quantity'],
  });
  assert.deepEqual(withInclude.data.map((e: any) => e.type).sort(), [
    'asset--animal',
    'log--activity',
    'quantity--standard',
  ]);
  // Without a type, every bundle of the entity type is queried.
  const everywhere = await farm.log.fetch({ filter: { name: 'ISO timestamp' } });
  assert.deepEqual(everywhere.rejected, []);
  assert.deepEqual(
    everywhere.data.map((e: any) => e.type),
    ['log--observation'],
  );
  // Fetched entities look the way farmOS.js shapes them.
  const one = (await farm.log.fetch({ filter: { type: 'log--activity', id: mowing.id } })).data[0];
  assert.equal(one.attributes.timestamp, T);
  assert.equal(one.attributes.drupal_internal__id, undefined, 'Drupal meta fields are moved to meta');
  assert.equal(typeof one.meta.remote.meta.attributes.drupal_internal__id, 'number');
  assert.deepEqual(
    one.relationships.asset.map((r: any) => r.id),
    [dolly.id],
  );
  // Terms and users.
  const terms = await farm.term.fetch({ filter: { type: 'taxonomy_term--unit', name: 'kg' } });
  assert.deepEqual(
    terms.data.map((e: any) => e.id),
    [kg.id],
  );
  const users = await farm.user.fetch({ filter: { type: 'user--user', name: ADMIN.name } });
  assert.deepEqual(users.rejected, []);
  assert.equal(users.data.length, 1);
});

test('page through more than 50 records: every one, once', async () => {
  const created: string[] = [];
  for (let i = 0; i < 62; i++) {
    const log = await api.create('log--maintenance', {
      name: `Maintenance ${String(i).padStart(2, '0')}`,
      timestamp: 1700000000 + i * 60,
      status: 'done',
    });
    created.push(log.id);
  }
  seen.length = 0;
  const all = await farm.log.fetch({ filter: { type: 'log--maintenance' } });
  assert.deepEqual(all.rejected, []);
  assert.equal(all.data.length, 62);
  assert.deepEqual(all.data.map((e: any) => e.id).sort(), [...created].sort());
  assert.equal(seen.filter((s) => s.method === 'GET').length, 2, 'two pages of at most 50');
  // With a limit above one page: farmOS.js appends &page[limit]=<rest> to links.next.
  const limited = await farm.log.fetch({ filter: { type: 'log--maintenance' }, limit: 55, sort: { name: 'ASC' } });
  assert.equal(limited.data.length, 55);
  assert.deepEqual(
    limited.data.map((e: any) => e.attributes.name),
    created.map((_, i) => `Maintenance ${String(i).padStart(2, '0')}`).slice(0, 55),
  );
  const filtered = await farm.log.fetch({
    filter: { type: 'log--maintenance', timestamp: { $gte: new Date((1700000000 + 10 * 60) * 1000).toISOString() } },
    sort: { timestamp: 'ASC' },
  });
  assert.equal(filtered.data.length, 52);
  assert.equal(filtered.data[0].attributes.name, 'Maintenance 10');
});

test('update and send: a PATCH that changes only what was updated', async () => {
  seen.length = 0;
  const updated = farm.log.update(mowing, { name: 'Fed the sheep', status: 'pending' });
  const sent = await farm.log.send(updated);
  assert.deepEqual(
    seen.map((s) => `${s.method} ${s.status}`),
    ['PATCH 200'],
  );
  assert.equal(sent.attributes.name, 'Fed the sheep');
  assert.equal(sent.attributes.status, 'pending');
  assert.equal(sent.attributes.timestamp, T);
  assert.deepEqual(
    sent.relationships.asset.map((r: any) => r.id),
    [dolly.id],
  );
  assert.deepEqual(
    sent.relationships.quantity.map((r: any) => r.id),
    [hay.id],
  );
  // Merging the server's copy into the local one gives the user a synced entity.
  const merged = farm.log.merge(updated, sent);
  assert.equal(merged.attributes.name, 'Fed the sheep');
  assert.equal(farm.meta.isUnsynced(merged), false);
  // An asset update too: archive it.
  const archived = await farm.asset.send(farm.asset.update(tractor, { status: 'archived' }));
  assert.equal(archived.attributes.status, 'archived');
  assert.ok(archived.attributes.archived);
});

test('delete, then the record is gone', async () => {
  const res = await farm.log.delete('activity', mowing.id);
  assert.equal(res.status, 204);
  const after = await farm.log.fetch({ filter: { type: 'log--activity', id: mowing.id } });
  assert.deepEqual(after.data, []);
  const direct = await api.get(`/api/log/activity/${mowing.id}`);
  assert.equal(direct.status, 404);
  // The quantity went with its log (farmOS deletes a log's quantities).
  assert.equal((await api.get(`/api/quantity/standard/${hay.id}`)).status, 404);
  const term = await farm.term.delete('unit', kg.id);
  assert.equal(term.status, 204);
});

test('a sensor: send the asset, post readings as its device does, read them back through farm.remote.request', async () => {
  const sensor = await farm.asset.send(farm.asset.create({ type: 'asset--sensor', name: 'Soil probe' }));
  assert.equal(sensor.type, 'asset--sensor');
  assert.match(sensor.attributes.private_key, /^[0-9a-f]{32}$/, 'the server generated the key farmOS.js did not send');
  assert.match(sensor.attributes.public_key, /^[0-9a-f]{32}$/);
  // The device: plain JSON to the legacy listener URL with the private key.
  const device = await fetch(
    `${server.url}/farm/sensor/listener/${sensor.attributes.public_key}?private_key=${sensor.attributes.private_key}`,
    {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify([
        { timestamp: 1700000000, moisture: 31.5 },
        { timestamp: 1700003600, moisture: 30 },
      ]),
    },
  );
  assert.equal(device.status, 201);
  // farmOS.js has no data stream helpers: its axios instance, with the user's bearer token.
  const fetched = await farm.asset.fetch({ filter: { type: 'asset--sensor', id: sensor.id } });
  const streamRef = fetched.data[0].relationships.data_stream;
  assert.equal(streamRef.length, 1, 'the post created one data stream, linked to the sensor');
  const stream = await farm.remote.request(`/api/data_stream/basic/${streamRef[0].id}`);
  assert.equal(stream.data.data.attributes.name, 'moisture');
  const readings = await farm.remote.request(
    `/api/data_stream/${streamRef[0].id}/data?start=1700000000&end=1700003600`,
  );
  assert.deepEqual(readings.data, [
    { timestamp: 1700003600, moisture: '30' },
    { timestamp: 1700000000, moisture: '31.5' },
  ]);
});

test('a birth log sent with farmOS.js gives the lamb its birthdate and its mother as parent', async () => {
  const lamb = await farm.asset.send(
    farm.asset.create({ type: 'asset--animal', name: 'Lamb', animal_type: ref(sheep) }),
  );
  assert.deepEqual(lamb.relationships.parent, []);
  const born = '2024-03-01T05:30:00.000Z';
  const log = await farm.log.send(
    farm.log.create({
      type: 'log--birth',
      name: 'Lambing',
      timestamp: born,
      status: 'done',
      asset: [ref(lamb)],
      mother: ref(dolly),
    }),
  );
  assert.equal(log.type, 'log--birth');
  assert.equal(log.relationships.mother.id, dolly.id);
  const fetched = await farm.asset.fetch({ filter: { type: 'asset--animal', id: lamb.id } });
  const child = fetched.data[0];
  assert.equal(new Date(child.attributes.birthdate).toISOString(), born, "the log's timestamp");
  assert.deepEqual(
    child.relationships.parent.map((r: any) => r.id),
    [dolly.id],
    'the mother, as the only parent',
  );
  // A second birth log for the same lamb is refused, and farmOS.js surfaces the 422.
  await assert.rejects(
    farm.log.send(
      farm.log.create({ type: 'log--birth', name: 'Again', timestamp: born, status: 'done', asset: [ref(lamb)] }),
    ),
    (e: any) => e.response?.status === 422,
  );
});

test('before authorizing, farmOS.js sends `Bearer undefined`: a 401 the library surfaces as an error', async () => {
  let none: any = null;
  const anonymous = makeFarm(
    () => none,
    (t) => (none = t),
  );
  await assert.rejects(anonymous.remote.request('/api/log/activity'), (err: any) => err.response?.status === 401);
});
