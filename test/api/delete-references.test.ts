// A DELETE of a record another record references is refused, as farmOS refuses it (issue 41 Part
// A): farmOS turns on entity_reference_integrity's enforcement for its entity types, which counts
// every entity_reference field but revision metadata, and JSON:API answers 403. Tilth used to
// answer 204 and strip the references: a log lost its asset, a plant its plant type, a child term
// its parent, without a word. What farmOS deletes together still goes together: a log's quantities.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServerAsAdmin, type TestServer } from '../support/server.ts';
import { Api, ref } from '../support/fixtures.ts';

let server: TestServer;
let api: Api;

before(async () => {
  const started = await startTestServerAsAdmin();
  server = started.server;
  api = new Api(server.url, started.token);
});
after(() => server.close());

const path = (r: { type: string; id: string }) => `/api/${r.type.replace('--', '/')}/${r.id}`;
const related = (r: any, field: string) =>
  Array.isArray(r.relationships[field].data)
    ? r.relationships[field].data.map((d: any) => d.id)
    : (r.relationships[field].data?.id ?? null);

/** The 403 farmOS gives, with a detail naming who holds the reference through which field. */
async function assertRefused(target: { type: string; id: string }, expected: RegExp): Promise<void> {
  const res = await api.delete(path(target));
  assert.equal(res.status, 403, res.text);
  const [error] = res.body.errors;
  assert.equal(error.status, '403');
  assert.match(error.detail, expected);
  assert.equal((await api.get(path(target))).status, 200, 'the record is still there');
}

test('an asset that logs and a data stream name is not deleted: 403 naming them; once they are gone it is', async () => {
  const plant = await api.create('asset--equipment', { name: 'Tractor' });
  const logs = await Promise.all(
    [1, 2, 3].map((n) =>
      api.create('log--activity', { name: `Service ${n}`, status: 'done' }, { asset: { data: [ref(plant)] } }),
    ),
  );
  const stream = await api.create('data_stream--basic', { name: 'Engine hours' }, { asset: { data: [ref(plant)] } });
  await assertRefused(
    plant,
    new RegExp(
      `^asset--equipment "Tractor" is referenced by .*1 data_stream\\(s\\) \\(asset\\): ${stream.id}.*3 log\\(s\\) \\(asset\\): `,
    ),
  );
  const detail = (await api.delete(path(plant))).body.errors[0].detail as string;
  for (const log of logs) assert.ok(detail.includes(log.id), `names log ${log.id}: ${detail}`);
  for (const log of logs)
    assert.deepEqual(related((await api.get(path(log))).body.data, 'asset'), [plant.id], 'the logs keep their asset');
  // What refuses the delete goes first, then the asset goes too.
  for (const r of [...logs, stream]) assert.equal((await api.delete(path(r))).status, 204);
  assert.equal((await api.delete(path(plant))).status, 204);
  assert.equal((await api.get(path(plant))).status, 404);
});

test("a plant's plant type, a child term's parent and a log's location are references too", async () => {
  const type = await api.create('taxonomy_term--plant_type', { name: 'Kale' });
  const plant = await api.create('asset--plant', { name: 'Kale bed' }, { plant_type: { data: [ref(type)] } });
  await assertRefused(
    type,
    new RegExp(`taxonomy_term--plant_type "Kale" is referenced by 1 asset\\(s\\) \\(plant_type\\): ${plant.id}`),
  );
  assert.deepEqual(
    related((await api.get(path(plant))).body.data, 'plant_type'),
    [type.id],
    'the plant keeps its required plant type',
  );

  const parent = await api.create('taxonomy_term--plant_type', { name: 'Brassicas' });
  const child = await api.create('taxonomy_term--plant_type', { name: 'Cabbage' }, { parent: { data: [ref(parent)] } });
  await assertRefused(parent, new RegExp(`referenced by 1 taxonomy_term\\(s\\) \\(parent\\): ${child.id}`));
  assert.equal((await api.delete(path(child))).status, 204);
  assert.equal((await api.delete(path(parent))).status, 204, 'a parent without children is deleted');

  const field = await api.create('asset--land', { name: 'North field', land_type: 'field', is_location: true });
  const move = await api.create(
    'log--activity',
    { name: 'Move', status: 'done', is_movement: true },
    { location: { data: [ref(field)] } },
  );
  await assertRefused(field, new RegExp(`1 log\\(s\\) \\(location\\): ${move.id}`));
  assert.deepEqual(
    related((await api.get(path(move))).body.data, 'location'),
    [field.id],
    'the log keeps its location',
  );
});

test('a user who owns or wrote records is not deleted (its owner and its author, uid, both count)', async () => {
  const made = await api.post('/api/user/user', {
    data: { type: 'user--user', attributes: { name: `keeper-${Date.now()}`, status: true } },
  });
  assert.equal(made.status, 201, made.text);
  const user = made.body.data;
  const owned = await api.create('log--activity', { name: 'Owned', status: 'done' }, { owner: { data: [ref(user)] } });
  const written = await api.create(
    'log--observation',
    { name: 'Written', status: 'done' },
    { uid: { data: ref(user) } },
  );
  await assertRefused(
    user,
    new RegExp(
      `1 log\\(s\\) \\(owner\\): ${owned.id}.*1 log\\(s\\) \\(uid\\): ${written.id}|1 log\\(s\\) \\(uid\\): ${written.id}.*1 log\\(s\\) \\(owner\\): ${owned.id}`,
    ),
  );
  assert.deepEqual(related((await api.get(path(owned))).body.data, 'owner'), [user.id], 'the log keeps its owner');
  assert.equal(related((await api.get(path(written))).body.data, 'uid'), user.id, 'and its author');
});

test("a log's quantities go with it, and a quantity is not protected by the log naming it (an entity_reference_revisions field, which farmOS does not count)", async () => {
  const asset = await api.create('asset--equipment', { name: 'Sprayer' });
  const quantity = await api.create('quantity--standard', { measure: 'volume', value: { decimal: '5' } });
  const kept = await api.create('quantity--standard', { measure: 'volume', value: { decimal: '7' } });
  const log = await api.create(
    'log--input',
    { name: 'Spray', status: 'done' },
    { asset: { data: [ref(asset)] }, quantity: { data: [ref(quantity), ref(kept)] } },
  );
  assert.equal((await api.delete(path(kept))).status, 204, 'a quantity a log names may be deleted, as in farmOS');
  assert.deepEqual(related((await api.get(path(log))).body.data, 'quantity'), [quantity.id]);
  await assertRefused(asset, /1 log\(s\) \(asset\)/);
  assert.equal((await api.delete(path(log))).status, 204);
  assert.equal((await api.get(path(quantity))).status, 404, "the log's quantity went with it");
  assert.equal((await api.delete(path(asset))).status, 204);
});

test('a DELETE in a subrequests blueprint is refused the same way, and changes nothing', async () => {
  const asset = await api.create('asset--equipment', { name: 'Harrow' });
  const log = await api.create(
    'log--activity',
    { name: 'Harrowing', status: 'done' },
    { asset: { data: [ref(asset)] } },
  );
  const headers = { Accept: 'application/vnd.api+json', 'Content-Type': 'application/vnd.api+json' };
  const res = await api.raw(
    'POST',
    '/subrequests?_format=json',
    JSON.stringify([
      { requestId: 'delete-harrow', action: 'delete', uri: `/api/asset/equipment/${asset.id}`, headers },
    ]),
    headers,
  );
  assert.ok(res.status < 300, res.text);
  const [entry] = Object.values(res.body as Record<string, { headers: { status: [number] }; body: string }>);
  assert.equal(entry!.headers.status[0], 403, entry!.body);
  const error = JSON.parse(entry!.body).errors[0];
  assert.equal(error.code, 'referenced');
  assert.match(
    error.detail,
    new RegExp(`asset--equipment "Harrow" is referenced by 1 log\\(s\\) \\(asset\\): ${log.id}`),
  );
  assert.equal((await api.get(path(asset))).status, 200);
});
