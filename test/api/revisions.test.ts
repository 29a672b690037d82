// Revisions you can read (issue 8 item 1; farmos-behaviour.md §1.10; Drupal JSON:API's resource
// versioning): `?resourceVersion=id:<n>` serves a record as it was saved, `rel:latest-version`
// and `rel:working-copy` the current one, bad or unknown versions are 400 / 404 as Drupal's
// VersionNegotiator answers; revision ids count per entity type; a revision's log message is
// only what its own save supplied; terms keep revisions as farmOS's vocabularies do (none new);
// Tilth's own history endpoint lists who changed a record, when and why.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import knexFactory from 'knex';
import { startTestServer, createTestDatabase, ADMIN, type TestServer } from '../support/server.ts';
import { passwordToken } from '../support/http.ts';
import { Api, ref } from '../support/fixtures.ts';
import { addUser } from '../oauth/helpers.ts';
import { loadGenerated } from '../../runtime/generated.ts';
import { allMigrations } from '../../runtime/storage/migrations.ts';

let server: TestServer;
let api: Api;

before(async () => {
  server = await startTestServer();
  api = new Api(server.url, await passwordToken(server.url, ADMIN.name, ADMIN.password));
});
after(() => server.close());

const path = (r: { type: string; id: string }) => `/api/${r.type.replace('--', '/')}/${r.id}`;
const version = (r: { type: string; id: string }, v: string) => `${path(r)}?resourceVersion=${encodeURIComponent(v)}`;

async function patch(
  r: { type: string; id: string },
  attributes: Record<string, unknown>,
  relationships: Record<string, unknown> = {},
): Promise<any> {
  const res = await api.patch(path(r), { data: { type: r.type, id: r.id, attributes, relationships } });
  assert.equal(res.status, 200, res.text.slice(0, 500));
  return res.body.data;
}

test('revision ids count per entity type: the first asset, log and quantity each have revision 1', async () => {
  // A fresh server of its own, so no other test's records share the counters.
  const own = await startTestServer();
  try {
    const a = new Api(own.url, await passwordToken(own.url, ADMIN.name, ADMIN.password));
    const asset = await a.create('asset--equipment', { name: 'Tractor' });
    const log = await a.create('log--activity', { name: 'Ploughing', timestamp: 1700000000 });
    const quantity = await a.create('quantity--standard', { measure: 'count', value: { decimal: '3' } });
    assert.equal(asset.attributes.drupal_internal__revision_id, 1);
    assert.equal(log.attributes.drupal_internal__revision_id, 1);
    assert.equal(quantity.attributes.drupal_internal__revision_id, 1);
    const renamed = (
      await a.patch(path(asset), { data: { type: asset.type, id: asset.id, attributes: { name: 'Old tractor' } } })
    ).body.data;
    assert.equal(renamed.attributes.drupal_internal__revision_id, 2);
    const second = await a.create('log--activity', { name: 'Harrowing', timestamp: 1700000000 });
    assert.equal(second.attributes.drupal_internal__revision_id, 2);
  } finally {
    await own.close();
  }
});

test('GET ?resourceVersion=id:<n> serves the asset as that save left it; links.self names the version', async () => {
  const asset = await api.create('asset--equipment', { name: 'Baler', manufacturer: 'Claas' });
  const first = asset.attributes.drupal_internal__revision_id;
  const now = await patch(asset, {
    name: 'Round baler',
    manufacturer: 'Krone',
    revision_log_message: 'Renamed after the sale',
  });
  const second = now.attributes.drupal_internal__revision_id;
  assert.ok(second > first);

  const old = await api.get(version(asset, `id:${first}`));
  assert.equal(old.status, 200, old.text.slice(0, 400));
  assert.equal(old.body.data.id, asset.id);
  assert.equal(old.body.data.attributes.name, 'Baler');
  assert.equal(old.body.data.attributes.manufacturer, 'Claas');
  assert.equal(old.body.data.attributes.drupal_internal__revision_id, first);
  assert.equal(old.body.data.attributes.revision_log_message, '');
  assert.equal(old.body.data.links.self.href, `${server.url}${path(asset)}?resourceVersion=id:${first}`);
  assert.equal(old.body.links.self.href, `${server.url}${path(asset)}?resourceVersion=id%3A${first}`);

  const current = await api.get(path(asset));
  assert.equal(current.body.data.attributes.name, 'Round baler');
  assert.equal(current.body.data.attributes.drupal_internal__revision_id, second);
  assert.equal(
    current.body.data.links.self.href,
    `${server.url}${path(asset)}`,
    'no version asked for, none in links.self',
  );

  const byId = await api.get(version(asset, `id:${second}`));
  assert.equal(byId.body.data.attributes.name, 'Round baler');
  assert.equal(byId.body.data.attributes.revision_log_message, 'Renamed after the sale');
  for (const rel of ['rel:latest-version', 'rel:working-copy']) {
    const res = await api.get(version(asset, rel));
    assert.equal(res.status, 200, `${rel}: ${res.text.slice(0, 300)}`);
    assert.equal(res.body.data.attributes.name, 'Round baler', rel);
    assert.equal(res.body.data.attributes.drupal_internal__revision_id, second, rel);
    assert.equal(res.body.data.links.self.href, `${server.url}${path(asset)}?resourceVersion=id:${second}`, rel);
  }
});

test("a log revision keeps its relationships as they were; its quantity and the quantity's own revisions too", async () => {
  const north = await api.create('asset--land', {
    name: 'North',
    land_type: 'field',
    is_location: true,
    is_fixed: true,
    intrinsic_geometry: 'POINT (1 2)',
  });
  const south = await api.create('asset--land', {
    name: 'South',
    land_type: 'field',
    is_location: true,
    is_fixed: true,
    intrinsic_geometry: 'POINT (3 4)',
  });
  const quantity = await api.create('quantity--standard', { measure: 'weight', value: { decimal: '10' } });
  const log = await api.create(
    'log--harvest',
    { name: 'Hay', timestamp: 1700000000, status: 'done' },
    { location: { data: [ref(north)] }, quantity: { data: [ref(quantity)] } },
  );
  await patch(log, { status: 'pending' }, { location: { data: [ref(south)] } });
  const q2 = await patch(quantity, { value: { decimal: '12.5' } });

  const old = await api.get(version(log, `id:${log.attributes.drupal_internal__revision_id}`));
  assert.equal(old.status, 200, old.text.slice(0, 300));
  assert.equal(old.body.data.attributes.status, 'done');
  assert.deepEqual(
    old.body.data.relationships.location.data.map((i: any) => i.id),
    [north.id],
  );
  assert.equal(old.body.data.relationships.quantity.data[0].id, quantity.id);
  assert.equal(
    old.body.data.relationships.quantity.data[0].meta.target_revision_id,
    quantity.attributes.drupal_internal__revision_id,
    'the quantity revision the log pointed at then',
  );

  const qOld = await api.get(version(quantity, `id:${quantity.attributes.drupal_internal__revision_id}`));
  assert.equal(qOld.body.data.attributes.value.decimal, '10');
  const qNew = await api.get(version(quantity, `id:${q2.attributes.drupal_internal__revision_id}`));
  assert.equal(qNew.body.data.attributes.value.decimal, '12.5');
});

test('malformed versions are 400, unknown ones 404, never the current record', async () => {
  const asset = await api.create('asset--equipment', { name: 'Mower' });
  const other = await api.create('asset--equipment', { name: 'Rake' });
  const bad = ['foo', 'id:', 'id:abc', 'id:1.5x', 'rel:oldest', 'bogus:1', 'ID:1', ''];
  for (const v of bad) {
    const res = await api.get(version(asset, v));
    assert.equal(res.status, 400, `${JSON.stringify(v)}: ${res.text.slice(0, 300)}`);
    assert.equal(res.body.errors[0].source?.parameter, 'resourceVersion', v);
    assert.match(res.body.errors[0].detail, /resource version identifier/, v);
  }
  for (const v of ['id:999999', `id:${other.attributes.drupal_internal__revision_id}`, 'id:0', 'id:-1']) {
    const res = await api.get(version(asset, v));
    assert.equal(res.status, 404, `${v}: ${res.text.slice(0, 300)}`);
    assert.equal(res.body.errors[0].detail, `The requested version, identified by \`${v}\`, could not be found.`);
  }
  assert.equal(
    (await api.get('/api/asset/equipment?resourceVersion=id:1')).status,
    400,
    'a collection has no revision 1',
  );
  assert.equal((await api.get('/api/asset/equipment?resourceVersion=rel:latest-version')).status, 200);
  assert.equal((await api.get('/api/asset/equipment?resourceVersion=nonsense')).status, 400);
  const twice = await api.get(`${path(asset)}?resourceVersion=id:1&resourceVersion[x]=2`);
  assert.equal(twice.status, 400);
  const write = await api.patch(`${path(asset)}?resourceVersion=id:1`, {
    data: { type: asset.type, id: asset.id, attributes: { name: 'x' } },
  });
  assert.equal(write.status, 400, write.text.slice(0, 300));
  assert.match(
    write.body.errors[0].detail,
    /PATCH requests with a `resourceVersion` query parameter are not supported/,
  );
  assert.equal((await api.get(path(asset))).body.data.attributes.name, 'Mower', 'the refused PATCH changed nothing');
});

test('revision_log_message belongs to the save that supplied it; echoing the previous one back blanks it', async () => {
  const asset = await api.create('asset--equipment', { name: 'Seeder', revision_log_message: 'Bought' });
  assert.equal(asset.attributes.revision_log_message, 'Bought');
  const two = await patch(asset, { name: 'Seed drill', revision_log_message: 'Renamed' });
  assert.equal(two.attributes.revision_log_message, 'Renamed');
  const three = await patch(asset, { manufacturer: 'Väderstad' });
  assert.equal(three.attributes.revision_log_message, '', 'a save without a message has none');
  const four = await patch(asset, { revision_log_message: 'Repaired', manufacturer: 'Amazone' });
  const five = await patch(asset, { revision_log_message: 'Repaired', name: 'Seed drill 2' });
  assert.equal(four.attributes.revision_log_message, 'Repaired');
  assert.equal(five.attributes.revision_log_message, '', "farmOS blanks a message equal to the previous revision's");
  const messages = [];
  for (const r of [asset, two, three, four, five]) {
    messages.push(
      (await api.get(version(asset, `id:${r.attributes.drupal_internal__revision_id}`))).body.data.attributes
        .revision_log_message,
    );
  }
  assert.deepEqual(messages, ['Bought', 'Renamed', '', 'Repaired', '']);
});

test('terms keep revisions as farmOS vocabularies do: a save changes the one revision in place', async () => {
  const term = await api.create('taxonomy_term--unit', { name: 'kilo' });
  const rev = term.attributes.drupal_internal__revision_id;
  assert.equal(typeof rev, 'number');
  const renamed = await patch(term, { name: 'kg' });
  assert.equal(
    renamed.attributes.drupal_internal__revision_id,
    rev,
    'no new revision for a vocabulary with new_revision: false',
  );
  const res = await api.get(version(term, `id:${rev}`));
  assert.equal(res.status, 200, res.text.slice(0, 300));
  assert.equal(res.body.data.attributes.name, 'kg');
  const latest = await api.get(version(term, 'rel:latest-version'));
  assert.equal(latest.body.data.attributes.name, 'kg');
  const history = await api.get(`${path(term)}/revision-history`);
  assert.equal(history.status, 200, history.text.slice(0, 300));
  assert.equal(history.body.data.length, 1);
});

test('access to a revision is access to the record; revisions of deleted records are gone', async () => {
  const asset = await api.create('asset--equipment', { name: 'Sprayer' });
  await patch(asset, { name: 'Field sprayer' });
  const rev = asset.attributes.drupal_internal__revision_id;
  const viewer = await addUser(server, ['farm_viewer']);
  const nobody = await addUser(server, []);
  const asViewer = new Api(server.url, await passwordToken(server.url, viewer.name, viewer.password));
  const asNobody = new Api(server.url, await passwordToken(server.url, nobody.name, nobody.password));
  const seen = await asViewer.get(version(asset, `id:${rev}`));
  assert.equal(seen.status, 200);
  assert.equal(seen.body.data.attributes.name, 'Sprayer');
  assert.equal((await asViewer.get(`${path(asset)}/revision-history`)).status, 200);
  for (const p of [version(asset, `id:${rev}`), path(asset), `${path(asset)}/revision-history`]) {
    const res = await asNobody.get(p);
    assert.equal(res.status, 403, `${p}: ${res.text.slice(0, 200)}`);
  }
  const anonymous = await new Api(server.url, '').get(version(asset, `id:${rev}`));
  assert.equal(anonymous.status, 401);

  assert.equal((await api.delete(path(asset))).status, 204);
  for (const p of [version(asset, `id:${rev}`), `${path(asset)}/revision-history`]) {
    const res = await api.get(p);
    assert.equal(res.status, 404, `${p}: ${res.text.slice(0, 200)}`);
  }
});

test('related and relationship routes honour resourceVersion as Drupal does', async () => {
  const a = await api.create('asset--equipment', { name: 'Plough' });
  const b = await api.create('asset--equipment', { name: 'Disc' });
  const log = await api.create(
    'log--activity',
    { name: 'Tillage', timestamp: 1700000000 },
    { equipment: { data: [ref(a)] } },
  );
  await patch(log, {}, { equipment: { data: [ref(b)] } });
  const v = `id:${log.attributes.drupal_internal__revision_id}`;
  const rel = await api.get(`${path(log)}/relationships/equipment?resourceVersion=${v}`);
  assert.equal(rel.status, 200, rel.text.slice(0, 300));
  assert.deepEqual(
    rel.body.data.map((i: any) => i.id),
    [a.id],
  );
  const related = await api.get(`${path(log)}/equipment?resourceVersion=${v}`);
  assert.deepEqual(
    related.body.data.map((i: any) => i.id),
    [a.id],
  );
  assert.equal((await api.get(`${path(log)}/equipment?resourceVersion=id:999999`)).status, 404);
  assert.deepEqual(
    (await api.get(`${path(log)}/equipment`)).body.data.map((i: any) => i.id),
    [b.id],
  );
});

test('revision history: every save of a record, newest first, with who, when and why', async () => {
  const worker = await addUser(server, ['farm_worker']);
  const asWorker = new Api(server.url, await passwordToken(server.url, worker.name, worker.password));
  const asset = await api.create('asset--equipment', { name: 'Trailer', revision_log_message: 'Bought' });
  const res2 = await asWorker.patch(path(asset), {
    data: { type: asset.type, id: asset.id, attributes: { name: 'Tipping trailer', revision_log_message: 'Renamed' } },
  });
  assert.equal(res2.status, 200);
  const history = await api.get(`${path(asset)}/revision-history`);
  assert.equal(history.status, 200, history.text.slice(0, 300));
  const rows = history.body.data;
  assert.equal(rows.length, 2);
  assert.deepEqual(
    rows.map((r: any) => r.attributes.name),
    ['Tipping trailer', 'Trailer'],
  );
  assert.deepEqual(
    rows.map((r: any) => r.attributes.revision_log_message),
    ['Renamed', 'Bought'],
  );
  assert.equal(rows[0].relationships.revision_user.data.id, worker.uuid);
  assert.notEqual(
    rows[0].relationships.revision_user.data.id,
    rows[1].relationships.revision_user.data.id,
    'each revision names its own author',
  );
  assert.match(rows[1].attributes.revision_created, /^\d{4}-\d\d-\d\dT/);
  assert.equal(
    rows[1].links.self.href,
    `${server.url}${path(asset)}?resourceVersion=id:${asset.attributes.drupal_internal__revision_id}`,
  );
  const sparse = await api.get(
    `${path(asset)}/revision-history?fields[asset--equipment]=drupal_internal__revision_id,revision_log_message`,
  );
  assert.deepEqual(Object.keys(sparse.body.data[0].attributes).sort(), [
    'drupal_internal__revision_id',
    'revision_log_message',
  ]);
  const page1 = await api.get(`${path(asset)}/revision-history?page[limit]=1`);
  assert.deepEqual(
    page1.body.data.map((r: any) => r.attributes.name),
    ['Tipping trailer'],
  );
  const page2 = await api.get(page1.body.links.next.href);
  assert.deepEqual(
    page2.body.data.map((r: any) => r.attributes.name),
    ['Trailer'],
  );
  assert.equal(page2.body.links.next, undefined);
  assert.equal((await api.get(`${path(asset)}/revision-history?resourceVersion=id:1`)).status, 400);
  assert.equal((await api.get(`/api/asset/equipment/${randomUUID()}/revision-history`)).status, 404);
});

test('an existing database with one global revision counter migrates to per-type counters', async () => {
  const database = await createTestDatabase();
  const generated = await loadGenerated();
  const url = database.env.DATABASE_URL;
  const knex = url
    ? knexFactory({ client: 'pg', connection: url, pool: { min: 0, max: 1 } })
    : knexFactory({
        client: 'better-sqlite3',
        connection: { filename: `${database.env.TILTH_DATA_DIR}/tilth.sqlite` },
        useNullAsDefault: true,
      });
  const assetId = randomUUID();
  const logId = randomUUID();
  try {
    // The database as the code before this change left it: every migration but the new ones,
    // and revisions numbered by one counter across entity types.
    const old = allMigrations(generated.migrations).filter((m) => !/^core\/(?!000[12]_)/.test(m.name));
    await knex.migrate.latest({
      migrationSource: {
        getMigrations: async () => old,
        getMigrationName: (m: (typeof old)[number]) => m.name,
        getMigration: async (m: (typeof old)[number]) => ({ up: m.up, down: m.down }),
      },
      tableName: 'knex_migrations',
    });
    const [a] = await knex('asset')
      .insert({ uuid: assetId, bundle: 'equipment', name: 'Old name', status: 'active' })
      .returning('id');
    const [l] = await knex('log')
      .insert({ uuid: logId, bundle: 'activity', name: 'Old log', status: 'done', timestamp: 1700000000 })
      .returning('id');
    const aid = Number(typeof a === 'object' ? a.id : a);
    const lid = Number(typeof l === 'object' ? l.id : l);
    const rows = [
      { entity_type: 'asset', entity_id: aid, name: 'Old name', message: 'first' },
      { entity_type: 'log', entity_id: lid, name: 'Old log', message: null },
      { entity_type: 'asset', entity_id: aid, name: 'New name', message: 'second' },
    ];
    let last = 0;
    for (const r of rows) {
      const [inserted] = await knex('entity_revision')
        .insert({
          entity_type: r.entity_type,
          entity_id: r.entity_id,
          user_id: 1,
          created: 1700000000,
          message: r.message,
          data: JSON.stringify({ name: r.name, revision_log_message: r.message ?? '' }),
        })
        .returning('id');
      last = Number(typeof inserted === 'object' ? inserted.id : inserted);
      await knex(r.entity_type).where('id', r.entity_id).update({ revision_id: last, name: r.name });
    }
    assert.equal(last, 3, 'the old global counter');
  } finally {
    await knex.destroy();
  }
  const upgraded = await startTestServer({ database, migrate: true });
  try {
    const a = new Api(upgraded.url, await passwordToken(upgraded.url, ADMIN.name, ADMIN.password));
    const asset = (await a.get(`/api/asset/equipment/${assetId}`)).body.data;
    assert.equal(asset.attributes.name, 'New name');
    assert.equal(asset.attributes.drupal_internal__revision_id, 2);
    const log = (await a.get(`/api/log/activity/${logId}`)).body.data;
    assert.equal(log.attributes.drupal_internal__revision_id, 1);
    const first = await a.get(`/api/asset/equipment/${assetId}?resourceVersion=id:1`);
    assert.equal(first.status, 200, first.text.slice(0, 300));
    assert.equal(first.body.data.attributes.name, 'Old name');
    assert.equal(first.body.data.attributes.revision_log_message, 'first');
    // New saves continue each type's own count.
    const newLog = await a.create('log--activity', { name: 'New log', timestamp: 1700000000 });
    assert.equal(newLog.attributes.drupal_internal__revision_id, 2);
    const renamed = await a.patch(`/api/asset/equipment/${assetId}`, {
      data: { type: 'asset--equipment', id: assetId, attributes: { name: 'Newer name' } },
    });
    assert.equal(renamed.body.data.attributes.drupal_internal__revision_id, 3);
  } finally {
    await upgraded.close();
    await database.drop();
  }
});
