// Save-time behaviour clients see when they send whole records back (farmOS.js, Field Kit): a log
// without an owner gets the saving user on every save (farm_owner's presave), an automatic log
// geometry follows new locations even when the old geometry is echoed back (farm_location's
// LogEventSubscriber), and inventory lists every (measure, units) pair, rendered as farmOS renders
// fractions (fraction's toDecimal(0, TRUE)).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, ADMIN, type TestServer } from '../support/server.ts';
import { request, passwordToken } from '../support/http.ts';
import { createUser } from '../../runtime/accounts/users.ts';

let server: TestServer;
let token: string;
let managerToken: string;
let managerId: string;
before(async () => {
  server = await startTestServer();
  managerId = (
    await createUser(server.ctx.db.knex, {
      name: 'mara',
      password: 'mara-password',
      mail: 'mara@example.org',
      roles: ['farm_manager'],
    })
  ).uuid;
  token = await passwordToken(server.url, ADMIN.name, ADMIN.password);
  managerToken = await passwordToken(server.url, 'mara', 'mara-password');
});
after(() => server.close());

const send = (method: string, path: string, data: unknown, as = token) =>
  request(`${server.url}${path}`, { method, token: as, json: { data } });
const post = async (path: string, data: unknown) => {
  const res = await send('POST', path, data);
  assert.equal(res.status, 201, res.text);
  return res.body.data;
};
const get = async (path: string) => (await request(`${server.url}${path}`, { token })).body.data;
const ref = (r: { type: string; id: string }) => ({ type: r.type, id: r.id });
const NOW = Math.floor(Date.now() / 1000);

test('a log saved with no owner gets the saving user as owner, on PATCH as on POST', async () => {
  const log = await post('/api/log/observation', {
    type: 'log--observation',
    attributes: { name: 'Scouting', status: 'done' },
  });
  assert.equal(log.relationships.owner.data.length, 1);
  const res = await send(
    'PATCH',
    `/api/log/observation/${log.id}`,
    { type: log.type, id: log.id, attributes: { name: 'Scouting 2' }, relationships: { owner: { data: [] } } },
    managerToken,
  );
  assert.equal(res.status, 200, res.text);
  assert.deepEqual(
    res.body.data.relationships.owner.data.map((r: { id: string }) => r.id),
    [managerId],
  );
  assert.deepEqual(
    (await get(`/api/log/observation/${log.id}`)).relationships.owner.data.map((r: { id: string }) => r.id),
    [managerId],
  );
  // An owner that is set stays.
  const kept = await send('PATCH', `/api/log/observation/${log.id}`, {
    type: log.type,
    id: log.id,
    attributes: { name: 'Scouting 3' },
  });
  assert.deepEqual(
    kept.body.data.relationships.owner.data.map((r: { id: string }) => r.id),
    [managerId],
  );
});

test("a log's automatic geometry follows its new location even when the client sends the old geometry back", async () => {
  const FIELD = 'POLYGON ((0 0, 10 0, 10 10, 0 10, 0 0))';
  const BARN = 'POINT (20 20)';
  const DRAWN = 'POINT (5 5)';
  const field = await post('/api/asset/land', {
    type: 'asset--land',
    attributes: { name: 'North field', land_type: 'field', is_fixed: true, intrinsic_geometry: FIELD },
  });
  const barn = await post('/api/asset/structure', {
    type: 'asset--structure',
    attributes: { name: 'Barn', structure_type: 'building', is_fixed: true, intrinsic_geometry: BARN },
  });
  const tractor = await post('/api/asset/equipment', { type: 'asset--equipment', attributes: { name: 'Tractor' } });
  const move = (geometry?: string) =>
    post('/api/log/activity', {
      type: 'log--activity',
      attributes: {
        name: 'Park',
        timestamp: NOW - 60,
        status: 'done',
        is_movement: true,
        ...(geometry ? { geometry } : {}),
      },
      relationships: { asset: { data: [ref(tractor)] }, location: { data: [ref(field)] } },
    });
  // What farmOS.js does: GET the whole record, change the location, PATCH all of it back.
  const echo = async (log: { id: string }) => {
    const whole = await get(`/api/log/activity/${log.id}`);
    const res = await send('PATCH', `/api/log/activity/${log.id}`, {
      type: whole.type,
      id: whole.id,
      attributes: whole.attributes,
      relationships: {
        ...Object.fromEntries(Object.entries(whole.relationships).filter(([k]) => ['asset', 'owner'].includes(k))),
        location: { data: [ref(barn)] },
      },
    });
    assert.equal(res.status, 200, res.text);
    return res.body.data;
  };
  const automatic = await move();
  assert.equal(automatic.attributes.geometry.value, FIELD);
  assert.equal(
    (await echo(automatic)).attributes.geometry.value,
    BARN,
    "the computed geometry follows the log's new location",
  );
  assert.equal(
    (await get(`/api/asset/equipment/${tractor.id}`)).attributes.geometry.value,
    BARN,
    'the asset shows where it is now',
  );
  // The whole record echoed back with only its name changed: the location is the same, so is its geometry.
  const whole = await get(`/api/log/activity/${automatic.id}`);
  const renamed = await send('PATCH', `/api/log/activity/${automatic.id}`, {
    type: whole.type,
    id: whole.id,
    attributes: { ...whole.attributes, name: 'Parked' },
  });
  assert.equal(renamed.status, 200, renamed.text);
  assert.equal(renamed.body.data.attributes.geometry.value, BARN);

  const drawn = await move(DRAWN);
  assert.equal(drawn.attributes.geometry.value, DRAWN);
  assert.equal((await echo(drawn)).attributes.geometry.value, DRAWN, 'a geometry a person drew stays');
});

test('inventory lists every measure and unit adjusted, from 0, and renders decimals as farmOS does', async () => {
  const bin = await post('/api/asset/water', { type: 'asset--water', attributes: { name: 'Feed bin' } });
  const unit = async (name: string) =>
    post('/api/taxonomy_term/unit', { type: 'taxonomy_term--unit', attributes: { name } });
  const [kg, bags, sacks] = [await unit('kg'), await unit('bags'), await unit('sacks')];
  const inventory = async () => (await get(`/api/asset/water/${bin.id}`)).attributes.inventory;
  let at = NOW - 10_000;
  const adjust = async (
    kind: string | null,
    value: Record<string, unknown>,
    u: { id: string; type: string },
    opts: { status?: string; timestamp?: number } = {},
  ) => {
    const q = await post('/api/quantity/standard', {
      type: 'quantity--standard',
      attributes: { measure: 'weight', value, ...(kind ? { inventory_adjustment: kind } : {}) },
      relationships: { inventory_asset: { data: ref(bin) }, units: { data: ref(u) } },
    });
    return post('/api/log/activity', {
      type: 'log--activity',
      attributes: { name: 'Feed', status: opts.status ?? 'done', timestamp: opts.timestamp ?? (at += 60) },
      relationships: { quantity: { data: [ref(q)] } },
    });
  };
  await adjust('increment', { decimal: '5' }, bags, { status: 'pending' });
  await adjust('increment', { decimal: '5' }, sacks, { timestamp: NOW + 86_400 });
  assert.deepEqual(
    await inventory(),
    [
      { measure: 'weight', value: '0', units: 'bags' },
      { measure: 'weight', value: '0', units: 'sacks' },
    ],
    'pairs whose adjustments do not count yet show 0',
  );

  await adjust('reset', { decimal: '1.50' }, kg);
  assert.deepEqual(
    (await inventory()).find((i: { units: string }) => i.units === 'kg'),
    { measure: 'weight', value: '1.50', units: 'kg' },
    'a reset keeps its written precision',
  );
  await adjust('reset', { numerator: 47, denominator: 6 }, kg);
  assert.equal(
    (await inventory()).find((i: { units: string }) => i.units === 'kg').value,
    '7.8',
    'a repeating fraction gets as many places as its denominator has digits, rounded',
  );
  await adjust('increment', { numerator: 1, denominator: 8 }, kg);
  assert.equal(
    (await inventory()).find((i: { units: string }) => i.units === 'kg').value,
    '7.96',
    '47/6 + 1/8 = 191/24: as many places as the denominator has digits',
  );
  await adjust('reset', { numerator: 7, denominator: 20 }, kg);
  assert.equal(
    (await inventory()).find((i: { units: string }) => i.units === 'kg').value,
    '0.4',
    'a base-10 denominator gives its zeros as places (7/20 → 1 place)',
  );
  await adjust('decrement', { numerator: 1, denominator: 4 }, kg);
  assert.equal(
    (await inventory()).find((i: { units: string }) => i.units === 'kg').value,
    '0.1',
    'sums are reduced (8/80 → 1/10)',
  );
  await adjust('decrement', { numerator: 3, denominator: 8 }, kg);
  assert.equal(
    (await inventory()).find((i: { units: string }) => i.units === 'kg').value,
    '-0.3',
    '-11/40, rounded away from zero at 1 place',
  );
  await adjust('reset', { numerator: 1, denominator: 8 }, kg);
  assert.equal(
    (await inventory()).find((i: { units: string }) => i.units === 'kg').value,
    '0.125',
    'a terminating fraction is exact',
  );
  await adjust(null, { decimal: '9' }, bags);
  assert.equal(
    (await inventory()).find((i: { units: string }) => i.units === 'bags').value,
    '0',
    'a quantity that is not an adjustment adds no value',
  );
});
