// An asset's inventory from the quantities that adjust it (farmos-behaviour.md §1.8, farmOS's InventoryTest).
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

test('inventory follows increments, decrements and resets of done logs up to now, per measure and unit', async () => {
  const now = Math.floor(Date.now() / 1000);
  const tank = await post('/api/asset/water', { type: 'asset--water', attributes: { name: 'Tank' } });
  const liters = await post('/api/taxonomy_term/unit', { type: 'taxonomy_term--unit', attributes: { name: 'liters' } });
  const gallons = await post('/api/taxonomy_term/unit', {
    type: 'taxonomy_term--unit',
    attributes: { name: 'gallons' },
  });
  const inventory = async () =>
    (await request(`${server.url}/api/asset/water/${tank.id}`, { token })).body.data.attributes.inventory;
  let at = now - 10_000;
  const adjust = async (
    kind: string,
    decimal: string,
    opts: { status?: string; timestamp?: number; unit?: { id: string }; bundle?: 'standard' | 'quantity' } = {},
  ) => {
    const bundle = opts.bundle ?? 'standard';
    const unitField = bundle === 'standard' ? 'units' : 'unit';
    const q = await post(`/api/quantity/${bundle}`, {
      type: `quantity--${bundle}`,
      attributes: { measure: 'volume', value: { decimal }, inventory_adjustment: kind },
      relationships: {
        inventory_asset: { data: { type: 'asset--water', id: tank.id } },
        [unitField]: { data: { type: 'taxonomy_term--unit', id: (opts.unit ?? liters).id } },
      },
    });
    return post('/api/log/activity', {
      type: 'log--activity',
      attributes: { status: opts.status ?? 'done', timestamp: opts.timestamp ?? (at += 60) },
      relationships: { quantity: { data: [{ type: `quantity--${bundle}`, id: q.id }] } },
    });
  };
  assert.deepEqual(await inventory(), []);
  await adjust('increment', '1');
  assert.deepEqual(await inventory(), [{ measure: 'volume', value: '1', units: 'liters' }]);
  await adjust('increment', '5');
  await adjust('decrement', '1.1', { bundle: 'quantity' });
  assert.deepEqual(
    await inventory(),
    [{ measure: 'volume', value: '4.9', units: 'liters' }],
    'exact decimals, whichever name the unit goes by',
  );
  await adjust('increment', '100', { status: 'pending' });
  await adjust('increment', '100', { timestamp: now + 86_400 });
  assert.deepEqual(
    await inventory(),
    [{ measure: 'volume', value: '4.9', units: 'liters' }],
    'pending and future adjustments wait',
  );
  const reset = await adjust('reset', '2.5');
  await adjust('increment', '0.3');
  await adjust('increment', '2', { unit: gallons });
  assert.deepEqual(await inventory(), [
    { measure: 'volume', value: '2.8', units: 'liters' },
    { measure: 'volume', value: '2', units: 'gallons' },
  ]);
  assert.equal((await request(`${server.url}/api/log/activity/${reset.id}`, { method: 'DELETE', token })).status, 204);
  assert.deepEqual(
    (await inventory())[0],
    { measure: 'volume', value: '5.2', units: 'liters' },
    'deleting the reset log undoes it',
  );
});

test("a material quantity takes the material type of the material asset whose inventory it adjusts (farmOS's QuantityEventSubscriber)", async () => {
  const term = (name: string) =>
    post('/api/taxonomy_term/material_type', { type: 'taxonomy_term--material_type', attributes: { name } });
  const compost = await term('Compost');
  const lime = await term('Lime');
  const straw = await term('Straw');
  const pile = await post('/api/asset/material', {
    type: 'asset--material',
    attributes: { name: 'Compost pile' },
    relationships: { material_type: { data: { type: 'taxonomy_term--material_type', id: compost.id } } },
  });
  const tractor = await post('/api/asset/equipment', { type: 'asset--equipment', attributes: { name: 'Spreader' } });
  const types = (q: any) => q.relationships.material_type.data.map((t: any) => t.id);
  const quantity = (relationships: Record<string, unknown>) =>
    post('/api/quantity/material', {
      type: 'quantity--material',
      attributes: { measure: 'weight', value: { decimal: '2' }, inventory_adjustment: 'decrement' },
      relationships,
    });
  const asTypes = (...terms: any[]) => ({
    data: terms.map((t) => ({ type: 'taxonomy_term--material_type', id: t.id })),
  });

  // What was sent is overwritten by the asset's type...
  const q = await quantity({
    inventory_asset: { data: { type: 'asset--material', id: pile.id } },
    material_type: asTypes(lime, straw),
  });
  assert.deepEqual(types(q), [compost.id]);
  // ...and filled in when nothing was sent.
  const unsent = await quantity({ inventory_asset: { data: { type: 'asset--material', id: pile.id } } });
  assert.deepEqual(types(unsent), [compost.id]);
  // Not a material asset, or no inventory asset: what was sent is kept.
  assert.deepEqual(
    types(
      await quantity({
        inventory_asset: { data: { type: 'asset--equipment', id: tractor.id } },
        material_type: asTypes(lime),
      }),
    ),
    [lime.id],
  );
  assert.deepEqual(types(await quantity({ material_type: asTypes(lime, straw) })), [lime.id, straw.id]);
  // On every save: a PATCH of the types alone is overwritten again; pointing the quantity at the
  // asset later copies its type.
  const patched = await request(`${server.url}/api/quantity/material/${q.id}`, {
    method: 'PATCH',
    token,
    json: { data: { type: 'quantity--material', id: q.id, relationships: { material_type: asTypes(straw) } } },
  });
  assert.equal(patched.status, 200, patched.text);
  assert.deepEqual(types(patched.body.data), [compost.id]);
  const later = await quantity({ material_type: asTypes(straw) });
  const pointed = await request(`${server.url}/api/quantity/material/${later.id}`, {
    method: 'PATCH',
    token,
    json: {
      data: {
        type: 'quantity--material',
        id: later.id,
        relationships: { inventory_asset: { data: { type: 'asset--material', id: pile.id } } },
      },
    },
  });
  assert.deepEqual(types(pointed.body.data), [compost.id]);
});
