// The change feed for offline clients (issue 25 items 1–4): `GET /api/changes?since=<cursor>`
// lists every record created, changed or deleted since the cursor, each once with its latest
// state, tombstones for deletions (cascades included), filtered by type and by what the caller
// may read; `since=0&include=records` is the whole farm as the collections show it; a cursor
// older than TILTH_TOMBSTONE_DAYS is a 410 `cursor_expired`.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createTestDatabase, startTestServer, ADMIN, type TestServer } from '../support/server.ts';
import { passwordToken, request } from '../support/http.ts';
import { Api, ref } from '../support/fixtures.ts';
import { addUser } from '../oauth/helpers.ts';
import { pruneTombstones } from '../../runtime/storage/change-feed.ts';

let server: TestServer;
let api: Api;

before(async () => {
  server = await startTestServer();
  api = new Api(server.url, await passwordToken(server.url, ADMIN.name, ADMIN.password));
});
after(() => server.close());

/** Every entry after `since`, following links.next; and the cursor to go on from. */
async function follow(
  client: Api,
  since: string,
  query = '',
): Promise<{ entries: any[]; included: any[]; cursor: string; pages: number }> {
  const entries: any[] = [];
  const included: any[] = [];
  let next: string | undefined = `/api/changes?since=${encodeURIComponent(since)}${query}`;
  let cursor = since;
  let pages = 0;
  while (next) {
    const res: { status: number; text: string; body: any } = await client.get(next);
    assert.equal(res.status, 200, res.text.slice(0, 500));
    assert.equal(typeof res.body.meta.cursor, 'string', 'meta.cursor is always present');
    entries.push(...res.body.data);
    included.push(...(res.body.included ?? []));
    cursor = res.body.meta.cursor;
    next = res.body.links.next?.href;
    pages++;
  }
  return { entries, included, cursor, pages };
}

/** The feed read until it has caught up with every committed write (PostgreSQL's trails running transactions). */
async function caughtUp(
  client: Api,
  since: string,
  query: string,
  done: (entries: any[]) => boolean,
): Promise<{ entries: any[]; included: any[]; cursor: string }> {
  const all = { entries: [] as any[], included: [] as any[], cursor: since };
  for (let i = 0; i < 50; i++) {
    const page = await follow(client, all.cursor, query);
    all.entries.push(...page.entries);
    all.included.push(...page.included);
    all.cursor = page.cursor;
    if (done(all.entries)) return all;
    await new Promise((r) => setTimeout(r, 50));
  }
  return all;
}

const has =
  (uuid: string, deleted = false) =>
  (entries: any[]) =>
    entries.some((e) => e.id === uuid && Boolean(e.meta.deleted) === deleted);

test('a cursor taken before a write sees it; each record appears once with its latest state; deletions are tombstones', async () => {
  const start = (await api.get('/api/changes?since=0&page[limit]=1')).body.meta.cursor as string;
  // The newest cursor: read to the end.
  const { cursor } = await follow(api, start);
  const kept = await api.create('log--activity', { name: 'Kept', status: 'done', timestamp: '2024-05-01T08:00:00Z' });
  const edited = await api.create('asset--equipment', { name: 'Tractor' });
  assert.equal(
    (
      await api.patch(`/api/asset/equipment/${edited.id}`, {
        data: { type: 'asset--equipment', id: edited.id, attributes: { name: 'Tractor 2' } },
      })
    ).status,
    200,
  );
  assert.equal(
    (
      await api.patch(`/api/asset/equipment/${edited.id}`, {
        data: { type: 'asset--equipment', id: edited.id, attributes: { name: 'Tractor 3' } },
      })
    ).status,
    200,
  );
  const gone = await api.create('log--observation', {
    name: 'Gone',
    status: 'done',
    timestamp: '2024-05-01T08:00:00Z',
  });
  assert.equal((await api.delete(`/api/log/observation/${gone.id}`)).status, 204);

  const { entries } = await caughtUp(api, cursor, '', has(gone.id, true));
  const ids = entries.map((e) => e.id);
  assert.deepEqual(
    ids.filter((id) => [kept.id, edited.id, gone.id].includes(id)),
    [kept.id, edited.id, gone.id],
    'in commit order, each once',
  );
  const byId = new Map(entries.map((e) => [e.id, e]));
  assert.equal(byId.get(kept.id).type, 'log--activity');
  assert.equal(byId.get(kept.id).meta.deleted, undefined);
  assert.equal(typeof byId.get(kept.id).meta.version, 'number');
  assert.match(byId.get(kept.id).meta.changed, /^\d{4}-\d\d-\d\dT/);
  assert.equal(byId.get(gone.id).meta.deleted, true);
  assert.equal(byId.get(gone.id).type, 'log--observation');
  assert.ok(byId.get(edited.id).meta.version > byId.get(kept.id).meta.version, 'a later change has a higher version');

  // Nothing new since: an empty page, and a cursor to keep.
  const again = await caughtUp(api, (await follow(api, cursor)).cursor, '', () => true);
  assert.deepEqual(
    again.entries.filter((e) => [kept.id, edited.id, gone.id].includes(e.id)),
    [],
  );
});

test('filter[type] (several), page[limit] with links.next, include=records rendered as the collection renders them', async () => {
  const { cursor } = await follow(api, '0');
  const logs: any[] = [];
  for (let i = 0; i < 5; i++)
    logs.push(
      await api.create('log--harvest', { name: `Harvest ${i}`, status: 'done', timestamp: '2024-05-01T08:00:00Z' }),
    );
  const seed = await api.create(
    'asset--plant',
    { name: 'Kale' },
    { plant_type: { data: [ref(await api.create('taxonomy_term--plant_type', { name: 'Kale' }))] } },
  );
  await api.create('asset--equipment', { name: 'Not asked for' });

  const wanted = new Set([...logs.map((l) => l.id), seed.id]);
  const read = await caughtUp(
    api,
    cursor,
    '&filter[type][]=log--harvest&filter[type][]=asset--plant&page[limit]=2&include=records',
    (e) => [...wanted].every((id) => e.some((x) => x.id === id)),
  );
  assert.deepEqual(
    new Set(read.entries.map((e) => e.type)),
    new Set(['log--harvest', 'asset--plant']),
    'only the types asked for',
  );
  assert.deepEqual(new Set(read.entries.map((e) => e.id)), wanted);
  const harvest = (await api.get(`/api/log/harvest/${logs[0].id}`)).body.data;
  assert.deepEqual(
    read.included.find((r) => r.id === logs[0].id),
    harvest,
    'the included record is the resource the API serves',
  );
  // Comma-separated works as well.
  const comma = await follow(api, cursor, '&filter[type]=log--harvest,asset--plant');
  assert.deepEqual(new Set(comma.entries.map((e) => e.id)), wanted);
});

test('cascades: quantities deleted with their log, children of a birth log, assets a movement log moves', async () => {
  const { cursor } = await follow(api, '0');
  const q = await api.create('quantity--standard', { label: 'Eggs', measure: 'count', value: { decimal: '12' } });
  const log = await api.create(
    'log--harvest',
    { name: 'Eggs', status: 'done', timestamp: '2024-05-01T08:00:00Z' },
    { quantity: { data: [ref(q)] } },
  );
  const mother = await api.create(
    'asset--animal',
    { name: 'Daisy' },
    { animal_type: { data: ref(await api.create('taxonomy_term--animal_type', { name: 'Cow' })) } },
  );
  const calf = await api.create(
    'asset--animal',
    { name: 'Calf' },
    { animal_type: { data: ref(mother.relationships.animal_type.data) } },
  );
  const field = await api.create('asset--land', { name: 'North field', land_type: 'field', is_location: true });
  const { cursor: afterSetup } = await caughtUp(api, cursor, '', has(field.id));

  assert.equal((await api.delete(`/api/log/harvest/${log.id}`)).status, 204);
  await api.create(
    'log--birth',
    { status: 'done', timestamp: '2024-03-01T06:00:00Z' },
    { asset: { data: [ref(calf)] }, mother: { data: ref(mother) } },
  );
  await api.create(
    'log--activity',
    { name: 'Move', status: 'done', timestamp: '2024-05-01T08:00:00Z', is_movement: true },
    { asset: { data: [ref(mother)] }, location: { data: [ref(field)] } },
  );

  const { entries } = await caughtUp(
    api,
    afterSetup,
    '',
    (e) => has(q.id, true)(e) && has(calf.id)(e) && has(mother.id)(e),
  );
  assert.ok(has(log.id, true)(entries), 'the log is a tombstone');
  assert.ok(has(q.id, true)(entries), 'its quantity, deleted with it, is a tombstone too');
  assert.ok(has(calf.id)(entries), "the birth log's child (its parent and birthdate changed) is listed");
  assert.ok(has(mother.id)(entries), 'the asset the movement moved (its computed location changed) is listed');
  const moved = (await api.get(`/api/asset/animal/${mother.id}`)).body.data;
  assert.deepEqual(
    moved.relationships.location.data.map((r: any) => r.id),
    [field.id],
  );
});

test('an asset whose computed fields change without a save of its own gets a new version and is listed; one a rebuild leaves as it was is not', async () => {
  const cow = await api.create('taxonomy_term--animal_type', { name: 'Dairy cow' });
  const field = await api.create('asset--land', {
    name: 'East field',
    land_type: 'field',
    is_location: true,
    intrinsic_geometry: 'POINT (1 1)',
  });
  const barn = await api.create('asset--structure', {
    name: 'Old barn',
    structure_type: 'building',
    is_location: true,
  });
  const bess = await api.create('asset--animal', { name: 'Bess' }, { animal_type: { data: ref(cow) } });
  const goat = await api.create('asset--animal', { name: 'Nanny' }, { animal_type: { data: ref(cow) } });
  const tank = await api.create('asset--water', { name: 'Trough' });
  const move = await api.create(
    'log--activity',
    {
      name: 'Bess to the east field',
      status: 'done',
      timestamp: '2024-05-01T08:00:00Z',
      is_movement: true,
      geometry: { value: 'POINT (2 2)' },
    },
    { asset: { data: [ref(bess)] }, location: { data: [ref(field)] } },
  );
  const toBarn = await api.create(
    'log--activity',
    { name: 'Nanny to the barn', status: 'done', timestamp: '2024-05-01T08:00:00Z', is_movement: true },
    { asset: { data: [ref(goat)] }, location: { data: [ref(barn)] } },
  );
  let cursor = (await caughtUp(api, (await follow(api, '0')).cursor, '', has(move.id))).cursor;
  const etag = async (asset: any) =>
    (await api.get(`/api/${asset.type.replace('--', '/')}/${asset.id}`)).headers.get('etag')!;
  /** The entries after the cursor, read until a record created now shows every earlier commit is in. */
  const since = async () => {
    const marker = await api.create('log--observation', {
      name: 'Marker',
      status: 'done',
      timestamp: '2024-05-01T08:00:00Z',
    });
    const read = await caughtUp(api, cursor, '', has(marker.id));
    cursor = read.cursor;
    return read.entries;
  };
  /** A GET with the ETag from before: 200 with the new body, not a 304 that keeps the old one. */
  const fresh = async (asset: any, before: string) => {
    const res = await api.get(`/api/${asset.type.replace('--', '/')}/${asset.id}`, { 'If-None-Match': before });
    assert.equal(res.status, 200, `${asset.attributes.name}: the ETag from before still matched`);
    return res.body.data;
  };

  // A movement log's geometry is its assets' geometry.
  let before = await etag(bess);
  assert.equal(
    (
      await api.patch(`/api/log/activity/${move.id}`, {
        data: { type: 'log--activity', id: move.id, attributes: { geometry: { value: 'POINT (3 3)' } } },
      })
    ).status,
    200,
  );
  assert.ok(has(bess.id)(await since()), "the moved asset is listed when its movement log's geometry changes");
  assert.equal((await fresh(bess, before)).attributes.geometry?.value, 'POINT (3 3)');

  // farmOS clients send the whole record back: the same assets and locations rebuild nothing new.
  before = await etag(bess);
  const whole = (await api.get(`/api/log/activity/${move.id}`)).body.data;
  const resent = {
    type: whole.type,
    id: whole.id,
    attributes: { ...whole.attributes, name: 'Bess moved east' },
    relationships: { asset: whole.relationships.asset, location: whole.relationships.location },
  };
  for (const key of [
    'drupal_internal__id',
    'drupal_internal__revision_id',
    'created',
    'changed',
    'revision_created',
    'data',
  ])
    delete resent.attributes[key];
  assert.equal((await api.patch(`/api/log/activity/${move.id}`, { data: resent })).status, 200);
  const unchanged = await since();
  assert.ok(has(move.id)(unchanged), 'the log is listed');
  assert.ok(!has(bess.id)(unchanged), 'its asset, whose location and geometry are as they were, is not');
  assert.equal(await etag(bess), before, "the asset's version is unchanged");

  // The movement log deleted (its location cannot be while the log names it): the asset that was there is nowhere now.
  before = await etag(goat);
  assert.equal((await api.delete(`/api/asset/structure/${barn.id}`)).status, 403);
  assert.equal((await api.delete(`/api/log/activity/${toBarn.id}`)).status, 204);
  assert.ok(has(goat.id)(await since()), 'the asset its deleted movement log placed is listed');
  assert.deepEqual((await fresh(goat, before)).relationships.location.data, []);
  // And a group assignment deleted: its member is in no group.
  const herd = await api.create('asset--group', { name: 'Goat herd' });
  const joins = await api.create(
    'log--activity',
    { name: 'Nanny joins the herd', status: 'done', timestamp: '2024-05-02T08:00:00Z', is_group_assignment: true },
    { asset: { data: [ref(goat)] }, group: { data: [ref(herd)] } },
  );
  await since();
  before = await etag(goat);
  assert.deepEqual(
    (await api.get(`/api/asset/animal/${goat.id}`)).body.data.relationships.group.data.map((r: any) => r.id),
    [herd.id],
  );
  assert.equal((await api.delete(`/api/asset/group/${herd.id}`)).status, 403);
  assert.equal((await api.delete(`/api/log/activity/${joins.id}`)).status, 204);
  assert.ok(has(goat.id)(await since()), 'the member of the deleted assignment is listed');
  assert.deepEqual((await fresh(goat, before)).relationships.group.data, []);

  // An inventory: the quantities of done logs that adjust it.
  before = await etag(tank);
  const water = await api.create(
    'quantity--standard',
    { measure: 'volume', value: { decimal: '40' }, inventory_adjustment: 'increment' },
    { inventory_asset: { data: ref(tank) } },
  );
  const fill = await api.create(
    'log--activity',
    { name: 'Fill the trough', status: 'done', timestamp: '2024-05-01T09:00:00Z' },
    { quantity: { data: [ref(water)] } },
  );
  assert.ok(has(tank.id)(await since()), 'the asset a done log adjusts is listed');
  assert.deepEqual(
    (await fresh(tank, before)).attributes.inventory.map((i: any) => i.value),
    ['40'],
  );
  before = await etag(tank);
  assert.equal(
    (
      await api.patch(`/api/quantity/standard/${water.id}`, {
        data: { type: 'quantity--standard', id: water.id, attributes: { value: { decimal: '25' } } },
      })
    ).status,
    200,
  );
  assert.ok(has(tank.id)(await since()), "it is listed when the adjustment's quantity changes");
  assert.deepEqual(
    (await fresh(tank, before)).attributes.inventory.map((i: any) => i.value),
    ['25'],
  );
  before = await etag(tank);
  assert.equal(
    (
      await api.patch(`/api/log/activity/${fill.id}`, {
        data: { type: 'log--activity', id: fill.id, attributes: { status: 'pending' } },
      })
    ).status,
    200,
  );
  assert.ok(has(tank.id)(await since()), 'and when the log stops being done');
  assert.deepEqual(
    (await fresh(tank, before)).attributes.inventory.map((i: any) => i.value),
    ['0'],
    'the pair stays, at 0 (farmOS lists every pair of its quantities)',
  );
  assert.equal(
    (
      await api.patch(`/api/log/activity/${fill.id}`, {
        data: { type: 'log--activity', id: fill.id, attributes: { status: 'done' } },
      })
    ).status,
    200,
  );
  await since();
  before = await etag(tank);
  assert.equal((await api.delete(`/api/log/activity/${fill.id}`)).status, 204);
  assert.ok(has(tank.id)(await since()), 'and when the log is deleted (its quantity with it)');
  assert.deepEqual((await fresh(tank, before)).attributes.inventory, []);
  // An inventory shows its unit's name.
  const litres = await api.create('taxonomy_term--unit', { name: 'litres' });
  const topUp = await api.create(
    'quantity--standard',
    { measure: 'volume', value: { decimal: '5' }, inventory_adjustment: 'increment' },
    { inventory_asset: { data: ref(tank) }, units: { data: ref(litres) } },
  );
  await since();
  before = await etag(tank);
  assert.equal(
    (
      await api.patch(`/api/taxonomy_term/unit/${litres.id}`, {
        data: { type: 'taxonomy_term--unit', id: litres.id, attributes: { name: 'liters' } },
      })
    ).status,
    200,
  );
  assert.ok(has(tank.id)(await since()), 'it is listed when the unit of a quantity on it is renamed');
  assert.deepEqual(
    (await fresh(tank, before)).attributes.inventory.map((i: any) => i.units),
    ['liters'],
  );
  // The unit a quantity names is not deleted (403): the inventory keeps showing it.
  before = await etag(tank);
  assert.equal((await api.delete(`/api/taxonomy_term/unit/${litres.id}`)).status, 403);
  assert.ok(!has(tank.id)(await since()), 'a refused delete changes nothing');
  assert.equal(await etag(tank), before);
  assert.equal((await api.delete(`/api/quantity/standard/${topUp.id}`)).status, 204);
  assert.ok(has(tank.id)(await since()), 'the asset is listed when the quantity that adjusted it is deleted');
  assert.equal((await api.delete(`/api/taxonomy_term/unit/${litres.id}`)).status, 204, 'then the unit may go');
});

test('a done log dated seconds ahead: when its time comes, the asset it moves and the inventory it adjusts get a new version and are listed', async () => {
  const sheep = await api.create('taxonomy_term--animal_type', { name: 'Sheep' });
  const paddock = await api.create('asset--land', { name: 'Top paddock', land_type: 'paddock', is_location: true });
  const ram = await api.create('asset--animal', { name: 'Ram' }, { animal_type: { data: ref(sheep) } });
  const bin = await api.create('asset--water', { name: 'Feed bin' });
  const loft = await api.create('asset--water', { name: 'Hay loft' });
  const grain = await api.create(
    'quantity--standard',
    { measure: 'weight', value: { decimal: '10' }, inventory_adjustment: 'increment' },
    { inventory_asset: { data: ref(bin) } },
  );
  const hay = await api.create(
    'quantity--standard',
    { measure: 'count', value: { decimal: '3' } },
    { inventory_asset: { data: ref(loft) } },
  );
  const start = (await follow(api, '0')).cursor;
  const at = Math.ceil(Date.now() / 1000) + 6;
  await api.create(
    'log--activity',
    { name: 'Ram to the paddock, grain in', status: 'done', timestamp: at, is_movement: true },
    { asset: { data: [ref(ram)] }, location: { data: [ref(paddock)] }, quantity: { data: [ref(grain), ref(hay)] } },
  );
  // The hay becomes an adjustment after its log was saved: it counts from the log's time too.
  assert.equal(
    (
      await api.patch(`/api/quantity/standard/${hay.id}`, {
        data: { type: 'quantity--standard', id: hay.id, attributes: { inventory_adjustment: 'increment' } },
      })
    ).status,
    200,
  );
  const marker = await api.create('log--observation', {
    name: 'Marker',
    status: 'done',
    timestamp: '2024-05-01T08:00:00Z',
  });
  const { cursor } = await caughtUp(api, start, '', has(marker.id));
  const ramBefore = await api.get(`/api/asset/animal/${ram.id}`);
  const binBefore = await api.get(`/api/asset/water/${bin.id}`);
  const loftBefore = await api.get(`/api/asset/water/${loft.id}`);
  assert.ok(Date.now() / 1000 < at, 'the setup took less than the 6 s the log is dated ahead');
  assert.deepEqual(ramBefore.body.data.relationships.location.data, [], 'not moved yet');
  assert.deepEqual(
    binBefore.body.data.attributes.inventory.map((i: any) => i.value),
    ['0'],
    'not adjusted yet',
  );

  await new Promise((resolve) => setTimeout(resolve, at * 1000 - Date.now() + 100));
  const { entries } = await caughtUp(api, cursor, '', (e) => has(ram.id)(e) && has(bin.id)(e) && has(loft.id)(e));
  assert.ok(
    has(ram.id)(entries),
    `the asset the log moves is listed once its time (${at}) has come; now ${Date.now() / 1000}`,
  );
  assert.ok(has(bin.id)(entries), 'the asset whose inventory it adjusts too');
  const ramNow = await api.get(`/api/asset/animal/${ram.id}`, { 'If-None-Match': ramBefore.headers.get('etag')! });
  assert.equal(ramNow.status, 200, 'the ETag from before no longer matches');
  assert.deepEqual(
    ramNow.body.data.relationships.location.data.map((r: any) => r.id),
    [paddock.id],
  );
  const binNow = await api.get(`/api/asset/water/${bin.id}`, { 'If-None-Match': binBefore.headers.get('etag')! });
  assert.equal(binNow.status, 200);
  assert.deepEqual(
    binNow.body.data.attributes.inventory.map((i: any) => i.value),
    ['10'],
  );
  assert.ok(has(loft.id)(entries), 'and the asset of the quantity made an adjustment since');
  const loftNow = await api.get(`/api/asset/water/${loft.id}`, { 'If-None-Match': loftBefore.headers.get('etag')! });
  assert.equal(loftNow.status, 200);
  assert.deepEqual(
    loftNow.body.data.attributes.inventory.map((i: any) => i.value),
    ['3'],
  );
});

test('deleting a record lists the records that referred to it; racing their saves, nothing fails', async () => {
  const { cursor } = await follow(api, '0');
  for (let round = 0; round < 3; round++) {
    // A quantity several logs name (an entity_reference_revisions field, which does not keep it: farmOS lets it go).
    const bales = await api.create('quantity--standard', { measure: 'count', value: { decimal: '10' } });
    const logs: any[] = [];
    for (let i = 0; i < 4; i++)
      logs.push(
        await api.create(
          'log--activity',
          { name: `Service ${round}.${i}`, status: 'done', timestamp: '2024-05-01T08:00:00Z' },
          { quantity: { data: [ref(bales)] } },
        ),
      );
    const answers = await Promise.all([
      api.delete(`/api/quantity/standard/${bales.id}`),
      ...logs.map((l, i) =>
        api.patch(`/api/log/activity/${l.id}`, {
          data: { type: 'log--activity', id: l.id, attributes: { name: `Serviced ${round}.${i}` } },
        }),
      ),
    ]);
    assert.deepEqual(
      answers.map((a) => a.status),
      [204, 200, 200, 200, 200],
      answers.map((a) => a.text.slice(0, 200)).join(' | '),
    );
    const { entries } = await caughtUp(
      api,
      cursor,
      '',
      (e) => has(bales.id, true)(e) && logs.every((l) => has(l.id)(e)),
    );
    assert.ok(has(bales.id, true)(entries), 'the quantity is a tombstone');
    for (const l of logs) {
      const entry = entries.find((e) => e.id === l.id);
      const now = await api.get(`/api/log/activity/${l.id}`);
      assert.deepEqual(now.body.data.relationships.quantity.data, [], 'the log no longer names the quantity');
      assert.equal(`"${entry.meta.version}"`, now.headers.get('etag'), "the log's last change is the feed's");
    }
  }
});

test('access: only types the caller may read, tombstones included; blocked users as the user collection lists them', async () => {
  const { cursor } = await follow(api, '0');
  const doomed = await api.create('log--activity', {
    name: 'Doomed',
    status: 'done',
    timestamp: '2024-05-01T08:00:00Z',
  });
  await api.delete(`/api/log/activity/${doomed.id}`);
  const blocked = await addUser(server, ['farm_worker']);
  await import('../../runtime/accounts/users.ts').then((m) => m.setBlocked(server.ctx.db.knex, blocked.name, true));
  await caughtUp(api, cursor, '', (e) => has(doomed.id, true)(e) && has(blocked.uuid)(e));
  // `tilth user roles` changes what the user's `roles` relationship shows: listed too.
  const promoted = await addUser(server, ['farm_viewer']);
  const { cursor: beforeRoles } = await follow(api, cursor);
  await import('../../runtime/accounts/users.ts').then((m) =>
    m.setRoles(server.ctx.db.knex, promoted.name, ['farm_manager']),
  );
  assert.ok(
    has(promoted.uuid)((await caughtUp(api, beforeRoles, '', has(promoted.uuid))).entries),
    'a user whose roles changed is listed',
  );

  const expect: Record<string, { logs: boolean; blockedUser: boolean }> = {
    farm_viewer: { logs: true, blockedUser: true },
    farm_worker: { logs: true, blockedUser: true },
    farm_manager: { logs: true, blockedUser: true },
    farm_account_admin: { logs: false, blockedUser: true },
  };
  for (const [role, sees] of Object.entries(expect)) {
    const user = await addUser(server, [role]);
    const client = new Api(server.url, await passwordToken(server.url, user.name, user.password));
    const { entries } = await follow(client, cursor);
    assert.equal(has(doomed.id, true)(entries), sees.logs, `${role}: the log's tombstone`);
    assert.equal(
      entries.some((e) => e.type.startsWith('log--')),
      sees.logs,
      `${role}: any log`,
    );
    assert.equal(has(blocked.uuid)(entries), sees.blockedUser, `${role}: the blocked user`);
    const asked = await client.get(`/api/changes?since=${cursor}&filter[type]=log--activity`);
    assert.equal(asked.status, sees.logs ? 200 : 403, `${role}: asking for logs by type`);
  }
  assert.equal((await request(`${server.url}/api/changes?since=0`)).status, 401, 'no token, no feed');
});

test('since=0 with include=records is the union of every collection', async () => {
  // Every record type the farm serves (the entry point lists configuration resources too).
  const collections = new Map<string, any[]>();
  for (const name of server.ctx.registry.resourceTypes.keys())
    collections.set(name, await api.all(`/api/${name.replace('--', '/')}`));
  const every = [...collections.values()].flat().map((r) => r.id);
  // On PostgreSQL the feed trails transactions still running: read it until it holds them all.
  const { included, entries } = await caughtUp(api, '0', '&include=records&page[limit]=500', (e) =>
    every.every((id) => e.some((x) => x.id === id)),
  );
  const live = entries.filter((e) => !e.meta.deleted);
  assert.equal(included.length, live.length, 'one included record per live entry');
  const byType = new Map<string, any[]>();
  for (const r of included) byType.set(r.type, [...(byType.get(r.type) ?? []), r]);
  for (const [name, collection] of collections) {
    const fromFeed = (byType.get(name) ?? []).sort((a, b) => a.id.localeCompare(b.id));
    assert.deepEqual(
      fromFeed,
      collection.sort((a, b) => a.id.localeCompare(b.id)),
      `${name}: the feed's records are the collection's`,
    );
  }
});

test('with include=records a page holds at most 50 (a larger page[limit] is taken as 50) and links.next goes on', async () => {
  const own = await startTestServer();
  try {
    const client = new Api(own.url, await passwordToken(own.url, ADMIN.name, ADMIN.password));
    const made = new Set<string>();
    for (let i = 0; i < 55; i++)
      made.add(
        (await client.create('log--activity', { name: `Log ${i}`, status: 'done', timestamp: '2024-05-01T08:00:00Z' }))
          .id,
      );
    const first = await client.get('/api/changes?since=0&filter[type]=log--activity&include=records&page[limit]=500');
    assert.equal(first.status, 200, first.text.slice(0, 300));
    assert.equal(first.body.data.length, 50, 'page[limit]=500 with records: 50');
    assert.equal(first.body.included.length, 50);
    assert.ok(first.body.links.next, 'links.next to the rest');
    assert.equal(
      (await client.get('/api/changes?since=0&filter[type]=log--activity&include=records')).body.data.length,
      50,
      'the default with records: 50',
    );
    assert.equal(
      (await client.get('/api/changes?since=0&filter[type]=log--activity&page[limit]=500')).body.data.length,
      55,
      'without records, up to 500 as before',
    );
    const all = await follow(client, '0', '&filter[type]=log--activity&include=records&page[limit]=500');
    assert.deepEqual(all.entries.map((e) => e.id).sort(), [...made].sort(), 'every log once');
    assert.equal(all.pages, 2);
  } finally {
    await own.close();
  }
});

test('a page with records ends where the response budget does, the next one starts after it; a record alone past the budget is a 413 naming it', async () => {
  const budget = 64 * 1024;
  const own = await startTestServer({ env: { TILTH_RESPONSE_MAX_BYTES: String(budget) } });
  try {
    const client = new Api(own.url, await passwordToken(own.url, ADMIN.name, ADMIN.password));
    // About 40 KB each as served (the notes' value and processed): one a page.
    const logs: string[] = [];
    for (let i = 0; i < 5; i++)
      logs.push(
        (
          await client.create('log--activity', {
            name: `Long ${i}`,
            status: 'done',
            timestamp: '2024-05-01T08:00:00Z',
            notes: { value: 'n'.repeat(20_000) },
          })
        ).id,
      );
    let next: string | undefined = '/api/changes?since=0&filter[type]=log--activity&include=records&page[limit]=500';
    const entries: string[] = [];
    const included: string[] = [];
    let cursor = '0';
    while (next) {
      const res: { status: number; text: string; body: any } = await client.get(next);
      assert.equal(res.status, 200, res.text.slice(0, 300));
      assert.ok(Buffer.byteLength(res.text) <= budget, `within the budget: ${Buffer.byteLength(res.text)}`);
      assert.ok(res.body.data.length >= 1);
      entries.push(...res.body.data.map((e: any) => e.id));
      included.push(...res.body.included.map((r: any) => r.id));
      cursor = res.body.meta.cursor;
      next = res.body.links.next?.href;
    }
    assert.deepEqual(entries, logs, 'every log once, in the order written');
    assert.deepEqual(included, logs, 'each with its record');

    const huge = await client.create('log--activity', {
      name: 'Huge',
      status: 'done',
      timestamp: '2024-05-01T08:00:00Z',
      notes: { value: 'n'.repeat(40_000) },
    });
    const refused = await client.get(`/api/changes?since=${cursor}&filter[type]=log--activity&include=records`);
    assert.equal(refused.status, 413, refused.text.slice(0, 300));
    assert.match(refused.body.errors[0].detail, new RegExp(`log--activity ${huge.id}`), 'the record is named');
    assert.equal(refused.body.errors[0].source.parameter, 'include');
    const listed = await client.get(`/api/changes?since=${cursor}&filter[type]=log--activity`);
    assert.deepEqual(
      listed.body.data.map((e: any) => e.id),
      [huge.id],
      'without records the feed goes past it',
    );
  } finally {
    await own.close();
  }
});

test('bad parameters are 400s naming them; an expired cursor is 410 cursor_expired', async () => {
  for (const [query, parameter] of [
    ['', 'since'],
    ['since=abc', 'since'],
    ['since=0&page[limit]=501', 'page[limit]'],
    ['since=0&page[limit]=0', 'page[limit]'],
    ['since=0&filter[type]=log--nope', 'filter[type]'],
    ['since=0&filter[name]=x', 'filter'],
    ['since=0&include=asset', 'include'],
    ['since=0&sort=changed', 'sort'],
  ] as const) {
    const res = await api.get(`/api/changes?${query}`);
    assert.equal(res.status, 400, `${query}: ${res.text}`);
    assert.equal(res.body.errors[0].source.parameter, parameter, query);
  }
  const short = await startTestServer({ env: { TILTH_TOMBSTONE_DAYS: '0.00001' } });
  try {
    const client = new Api(short.url, await passwordToken(short.url, ADMIN.name, ADMIN.password));
    const cursor = (await client.get('/api/changes?since=0')).body.meta.cursor;
    await new Promise((r) => setTimeout(r, 1100));
    const res = await client.get(`/api/changes?since=${cursor}`);
    assert.equal(res.status, 410, res.text);
    assert.equal(res.body.errors[0].code, 'cursor_expired');
    assert.equal((await client.get('/api/changes?since=0')).status, 200, 'a full sync is always possible');
    // Pruning (the feed runs it at most hourly, a day after cursors expire) drops tombstones only.
    const kept = await client.create('asset--equipment', { name: 'Kept' });
    const gone = await client.create('asset--equipment', { name: 'Gone' });
    assert.equal((await client.delete(`/api/asset/equipment/${gone.id}`)).status, 204);
    assert.ok((await pruneTombstones(short.ctx.db.knex, Math.floor(Date.now() / 1000) + 60)) >= 1);
    const { entries } = await caughtUp(client, '0', '', has(kept.id));
    assert.ok(
      has(kept.id)(entries) && !entries.some((e) => e.id === gone.id || e.meta.deleted),
      'live records stay, tombstones go',
    );
  } finally {
    await short.close();
  }
});

test("an existing farm's records are in the feed after the upgrade that brings it (migration 0008 fills it at the first start)", async (t) => {
  const database = await createTestDatabase();
  t.after(() => database.drop());
  let farm = await startTestServer({ database });
  let client = new Api(farm.url, await passwordToken(farm.url, ADMIN.name, ADMIN.password));
  const log = await client.create('log--activity', {
    name: 'Before the feed',
    status: 'done',
    timestamp: '2024-05-01T08:00:00Z',
  });
  const asset = await client.create('asset--equipment', { name: 'Old tractor' });
  // The database as the release before left it: no feed, migration 0008 not applied.
  const knex = farm.ctx.db.knex;
  await knex.schema.dropTable('change_feed');
  await knex.schema.dropTable('field_module');
  // 0014 reshaped the feed's table after 0010 made it: neither had run then.
  await knex('knex_migrations').whereIn('name', ['core/0010_sync', 'core/0014_feed_bundles']).delete();
  await knex('tilth_migration_checksums').whereIn('name', ['core/0010_sync', 'core/0014_feed_bundles']).delete();
  await farm.close();

  farm = await startTestServer({ database });
  t.after(() => farm.close());
  client = new Api(farm.url, await passwordToken(farm.url, ADMIN.name, ADMIN.password));
  const { entries } = await follow(client, '0');
  for (const record of [log, asset])
    assert.ok(has(record.id)(entries), `${record.type} ${record.attributes.name} is in the feed`);
  assert.ok(
    entries.some((e) => e.type === 'user--user'),
    'and the users',
  );
  const etag = (await client.get(`/api/log/activity/${log.id}`)).headers.get('etag');
  assert.match(etag ?? '', /^"\d+"$/, 'with a version each');
});

test("a farm's feed as the release before kept it (each row's 2.x resource type) reads the same after the upgrade that stores entity type and bundle (migration 0014)", async (t) => {
  const database = await createTestDatabase();
  t.after(() => database.drop());
  let farm = await startTestServer({ database });
  let client = new Api(farm.url, await passwordToken(farm.url, ADMIN.name, ADMIN.password));
  const log = await client.create('log--activity', {
    name: 'Before 0014',
    status: 'done',
    timestamp: '2024-05-01T08:00:00Z',
  });
  const gone = await client.create('asset--equipment', { name: 'Sold tractor' });
  assert.equal((await client.delete(`/api/asset/equipment/${gone.id}`)).status, 204);
  const before = await caughtUp(client, '0', '', (entries) => has(log.id)(entries) && has(gone.id, true)(entries));
  const shown = (entries: any[]) => entries.map((e) => [e.type, e.id, e.meta.version, Boolean(e.meta.deleted)]);
  // The database as the release before left it: the feed's rows name their resource type, migration 0014 not applied.
  const knex = farm.ctx.db.knex;
  await knex.raw("ALTER TABLE change_feed ADD COLUMN type TEXT NOT NULL DEFAULT ''");
  await knex.raw("UPDATE change_feed SET type = entity_type || '--' || bundle");
  await knex.raw('ALTER TABLE change_feed DROP COLUMN bundle');
  await knex('knex_migrations').where('name', 'core/0014_feed_bundles').delete();
  await knex('tilth_migration_checksums').where('name', 'core/0014_feed_bundles').delete();
  await farm.close();

  farm = await startTestServer({ database });
  t.after(() => farm.close());
  client = new Api(farm.url, await passwordToken(farm.url, ADMIN.name, ADMIN.password));
  const after = await follow(client, '0');
  assert.deepEqual(
    shown(after.entries),
    shown(before.entries),
    'every record, with its resource type, version and tombstone, as before',
  );
  assert.ok(
    after.entries.some((e) => e.type === 'log--activity' && e.id === log.id) &&
      after.entries.some((e) => e.type === 'asset--equipment' && e.id === gone.id && e.meta.deleted),
  );
  const logs = await follow(client, '0', '&filter[type]=log--activity');
  assert.deepEqual(
    logs.entries.map((e) => e.id),
    [log.id],
    'filter[type] picks the migrated rows by their resource type',
  );
  // A cursor from before the upgrade goes on: the next change, and only it.
  const next = await client.create('log--observation', {
    name: 'After 0014',
    status: 'done',
    timestamp: '2024-05-02T08:00:00Z',
  });
  const later = await caughtUp(client, before.cursor, '', has(next.id));
  assert.deepEqual(
    later.entries.map((e) => [e.type, e.id]),
    [['log--observation', next.id]],
  );
});

test('the upgrade that brings due changes finds the moves already stored that take effect later (migration 0013)', async (t) => {
  const database = await createTestDatabase();
  t.after(() => database.drop());
  let farm = await startTestServer({ database });
  let client = new Api(farm.url, await passwordToken(farm.url, ADMIN.name, ADMIN.password));
  const kind = await client.create('taxonomy_term--animal_type', { name: 'Goat' });
  const pen = await client.create('asset--structure', { name: 'Pen', structure_type: 'building', is_location: true });
  const kid = await client.create('asset--animal', { name: 'Kid' }, { animal_type: { data: ref(kind) } });
  const at = Math.floor(Date.now() / 1000) + 3600;
  await client.create(
    'log--activity',
    { name: 'Kid to the pen next hour', status: 'done', timestamp: at, is_movement: true },
    { asset: { data: [ref(kid)] }, location: { data: [ref(pen)] } },
  );
  // The database as the release before left it: no table of due changes, migration 0013 not applied.
  const knex = farm.ctx.db.knex;
  await knex.schema.dropTable('tilth_due_changes');
  await knex('knex_migrations').where('name', 'core/0013_due_changes').delete();
  await knex('tilth_migration_checksums').where('name', 'core/0013_due_changes').delete();
  await farm.close();

  farm = await startTestServer({ database });
  t.after(() => farm.close());
  const due = await farm.ctx.db.knex('tilth_due_changes').select('entity_type', 'due_ts');
  assert.deepEqual(
    due.map((r) => [r.entity_type, Number(r.due_ts)]),
    [['asset', at]],
    "the kid's move, due next hour",
  );
});

test('a cursor ahead of the feed (a farm restored from an older backup, or a commit a power cut took back) is a 410 cursor_expired, not a page that skips what comes next', async () => {
  const first = await api.get('/api/changes?since=0&page[limit]=500');
  assert.equal(first.status, 200);
  const cursor = first.body.meta.cursor as string;
  const [issued, txid, position] = Buffer.from(cursor, 'base64url').toString('latin1').split('.');
  // What this farm had not yet written when the backup was taken: the cursor a client holds is past it.
  const ahead = Buffer.from(
    process.env.DATABASE_URL
      ? `${issued}.${BigInt(txid!) + 1000n}.${position}`
      : `${issued}.${txid}.${Number(position) + 1000}`,
  ).toString('base64url');
  const res = await api.get(`/api/changes?since=${ahead}`);
  assert.equal(res.status, 410, res.text.slice(0, 300));
  assert.equal(res.body.errors[0].code, 'cursor_expired');
  assert.equal(res.body.errors[0].source.parameter, 'since');
  assert.match(res.body.errors[0].detail, /since=0/);
  // The cursor as given is still good.
  assert.equal((await api.get(`/api/changes?since=${cursor}`)).status, 200);
});

test("tombstones older than the days a cursor stays good are pruned by the server's own timer, with no request of the feed", async () => {
  const database = await createTestDatabase({ migrated: true });
  try {
    const first = await startTestServer({ database });
    const client = new Api(first.url, await passwordToken(first.url, ADMIN.name, ADMIN.password));
    const log = await client.create('log--activity', { name: 'Gone long ago', status: 'done' });
    assert.equal((await client.delete(`/api/log/activity/${log.id}`)).status, 204);
    // Its tombstone, as if written 400 days ago (TILTH_TOMBSTONE_DAYS is 365).
    await first.ctx.db
      .knex('change_feed')
      .where({ uuid: log.id, deleted: true })
      .update({ changed: Math.floor(Date.now() / 1000) - 400 * 86_400 });
    await first.close();
    // The next start prunes it, before anyone reads the feed.
    const second = await startTestServer({ database });
    try {
      let left = 1;
      for (let i = 0; i < 50 && left; i++) {
        left = Number(
          (
            (await second.ctx.db.knex('change_feed').where({ uuid: log.id }).count({ n: '*' })) as Array<{
              n: number | string;
            }>
          )[0]!.n,
        );
        if (left) await new Promise((resolve) => setTimeout(resolve, 100));
      }
      assert.equal(left, 0, 'the old tombstone is gone');
    } finally {
      await second.close();
    }
  } finally {
    await database.drop();
  }
});
