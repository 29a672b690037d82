// `tilth import farmos` (issue 24): a farm built through the API of one Tilth on SQLite is copied
// into another database (PostgreSQL when DATABASE_URL is set), and both then serve the same
// records: documents, file bytes, computed locations and inventory, and past revisions. A second
// run changes nothing; a change at the source is carried, a deletion pruned with --prune;
// --verify-only names what differs. (Killed and resumed, and written to meanwhile:
// test/stress/import-farmos.test.ts.)
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { tilthAsync } from '../support/tilth-command.ts';
import {
  createTestDatabase,
  startTestServer,
  startTestServerAsAdmin,
  ADMIN,
  type TestServer,
} from '../support/server.ts';
import { request, passwordToken } from '../support/http.ts';
import { buildSampleFarm, type SampleFarm } from '../support/sample-farm.ts';
import { createUser } from '../../runtime/accounts/users.ts';
import { FarmSource } from '../../runtime/farmos-import/source.ts';
import { insertReadings, READINGS_TABLE } from '../../runtime/farm/data-streams.ts';

let source: TestServer;
let sourceToken: string;
let sourceDir: string;
let farm: SampleFarm;
let target: TestServer;
let targetDb: Awaited<ReturnType<typeof createTestDatabase>>;
let targetToken: string;

before(async () => {
  sourceDir = mkdtempSync(join(tmpdir(), 'tilth-source-'));
  // The source is on SQLite whatever DATABASE_URL says: a farm moving to PostgreSQL.
  ({ server: source, token: sourceToken } = await startTestServerAsAdmin({
    database: {
      env: { TILTH_DATA_DIR: sourceDir, DATABASE_URL: '' },
      drop: async () => rmSync(sourceDir, { recursive: true, force: true }),
    },
  }));
  farm = await buildSampleFarm(
    source.url,
    sourceToken,
    async (name) =>
      (
        await createUser(source.ctx.db.knex, {
          name,
          password: `${name}-password-1`,
          roles: ['farm_worker'],
          mail: `${name}@example.org`,
        })
      ).uuid,
  );
  targetDb = await createTestDatabase();
  target = await startTestServer({ database: targetDb });
  targetToken = await passwordToken(target.url, ADMIN.name, ADMIN.password);
});
after(async () => {
  await target?.close();
  await targetDb?.drop();
  await source?.close();
  rmSync(sourceDir, { recursive: true, force: true });
});

const importArgs = (...extra: string[]) => [
  'import',
  'farmos',
  '--url',
  source.url,
  `--token=${sourceToken}`,
  ...extra,
];

const OWN = new Set([
  'drupal_internal__id',
  'drupal_internal__revision_id',
  'drupal_internal__tid',
  'drupal_internal__fid',
  'revision_log_message',
  'revision_created',
  'uri',
]);

/** A record as a user compares two farms: without each farm's own numbers, revision notes and links; the admin user matched by name. */
function normalised(resource: any, adminMap: Map<string, string>): unknown {
  const attributes = Object.fromEntries(Object.entries(resource.attributes).filter(([k]) => !OWN.has(k)));
  const relationships = Object.fromEntries(
    Object.entries(resource.relationships ?? {})
      .filter(
        ([k]) => !['revision_user', 'asset_type', 'log_type', 'quantity_type', 'vid', 'data_stream_type'].includes(k),
      )
      .map(([k, v]: [string, any]) => {
        const fix = (i: any) =>
          i && {
            type: i.type,
            id: adminMap.get(i.id) ?? i.id,
            ...(i.meta?.description !== undefined ? { description: i.meta.description, display: i.meta.display } : {}),
          };
        return [k, Array.isArray(v.data) ? v.data.map(fix) : fix(v.data)];
      }),
  );
  return { id: resource.id, type: resource.type, attributes, relationships };
}

async function all(url: string, token: string, path: string, sort = 'drupal_internal__id'): Promise<any[]> {
  const res = await request(`${url}${path}${path.includes('?') ? '&' : '?'}page[limit]=50&sort=${sort}`, { token });
  assert.equal(res.status, 200, res.text.slice(0, 300));
  return res.body.data;
}

const TYPES = [
  'asset/land',
  'asset/structure',
  'asset/animal',
  'asset/group',
  'asset/water',
  'asset/plant',
  'asset/sensor',
  'log/activity',
  'log/observation',
  'log/harvest',
  'quantity/standard',
  'data_stream/basic',
];

async function sha256Of(url: string, token: string, href: string): Promise<string> {
  const res = await fetch(new URL(href, url), { headers: { Authorization: `Bearer ${token}` } });
  assert.equal(res.status, 200);
  return createHash('sha256')
    .update(Buffer.from(await res.arrayBuffer()))
    .digest('hex');
}

test('a farm on SQLite imported into another database: the same documents, file bytes, locations and inventory; a second run changes nothing', async () => {
  const first = await tilthAsync(importArgs('--revisions', '--json'), targetDb.env).done;
  assert.equal(first.status, 0, `${first.stdout}\n${first.stderr}`);
  const events = first.stdout
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l));
  assert.equal(events.find((e) => e.event === 'verified').differences, 0, first.stdout);
  assert.deepEqual(events.find((e) => e.event === 'need_password').users, ['ann', 'bob']);
  assert.deepEqual(events.find((e) => e.event === 'matched_users').users, ['admin']);
  // Progress says how far each phase is, how fast it goes and, when the source's numbering tells its size, the time left.
  const logs = events.filter((e) => e.event === 'progress' && e.phase === 'logs');
  assert.ok(logs.length > 0, first.stdout);
  for (const e of logs) {
    assert.ok(e.expected >= e.records && e.records > 0, JSON.stringify(e));
    assert.ok(
      Number.isInteger(e.etaSeconds) && e.etaSeconds >= 0 && Number.isInteger(e.rate) && Number.isInteger(e.ms),
      JSON.stringify(e),
    );
  }
  const files = events.find((e) => e.event === 'phase_done' && e.phase === 'files');
  assert.ok(files.bytes > 0 && Number.isInteger(files.bytesRate) && files.etaSeconds === 0, JSON.stringify(files));

  const sourceAdmin = (await all(source.url, sourceToken, '/api/user/user?filter[name]=admin', 'name'))[0].id;
  const targetAdmin = (await all(target.url, targetToken, '/api/user/user?filter[name]=admin', 'name'))[0].id;
  const adminMap = new Map([[sourceAdmin, targetAdmin]]);
  for (const path of TYPES) {
    const [a, b] = await Promise.all([
      all(source.url, sourceToken, `/api/${path}`),
      all(target.url, targetToken, `/api/${path}`),
    ]);
    assert.ok(a.length > 0, path);
    assert.deepEqual(
      b.map((r) => normalised(r, new Map())),
      a.map((r) => normalised(r, adminMap)),
      path,
    );
  }
  // Computed, rebuilt once at the end: the calf is in the barn, the cow in the field and the herd; the tank holds 69.5 liters.
  const calf = (await request(`${target.url}/api/asset/animal/${farm.calf}`, { token: targetToken })).body.data;
  assert.equal(calf.attributes.geometry.value, 'POINT (5 5)');
  const cow = (await request(`${target.url}/api/asset/animal/${farm.cow}`, { token: targetToken })).body.data;
  assert.deepEqual(
    cow.relationships.location.data.map((r: any) => r.id),
    [farm.field],
  );
  assert.deepEqual(
    cow.relationships.group.data.map((r: any) => r.id),
    [farm.herd],
  );
  assert.equal(cow.attributes.created, '2019-03-01T10:00:00+00:00');
  const tank = (await request(`${target.url}/api/asset/water/${farm.tank}`, { token: targetToken })).body.data;
  assert.equal(tank.attributes.inventory[0].value, '69.5');
  // The file's bytes, and the readings.
  const [sf] = await all(source.url, sourceToken, '/api/file/file', 'drupal_internal__fid');
  const [tf] = await all(target.url, targetToken, '/api/file/file', 'drupal_internal__fid');
  assert.equal(
    await sha256Of(target.url, targetToken, tf.attributes.uri.url),
    await sha256Of(source.url, sourceToken, sf.attributes.uri.url),
  );
  const readings = async (url: string, token: string) =>
    (await request(`${url}/api/data_stream/${farm.stream}/data`, { token })).body;
  const sourceReadings = await readings(source.url, sourceToken);
  assert.equal(sourceReadings.length, 3);
  assert.deepEqual(await readings(target.url, targetToken), sourceReadings);
  // Where each record came from, in its revision; with --revisions, the past ones too, as they were.
  const history = (
    await request(`${target.url}/api/log/activity/${farm.moved}/revision-history`, { token: targetToken })
  ).body.data;
  assert.deepEqual(
    history.map((r: any) => r.attributes.name),
    ['Moved the herd', 'Moved herd'],
  );
  assert.match(
    history[0].attributes.revision_log_message,
    /^Imported from http:\/\/127\.0\.0\.1:\d+ on \d{4}-\d\d-\d\d$/,
  );
  assert.equal(history[1].attributes.revision_log_message, '');
  assert.equal(
    history[1].attributes.revision_created,
    (await request(`${source.url}/api/log/activity/${farm.moved}/revision-history`, { token: sourceToken })).body
      .data[1].attributes.revision_created,
  );

  const revisionsBefore = await target.ctx.db.knex('entity_revision').count({ n: '*' }).first();
  const second = await tilthAsync(importArgs('--json', '--no-verify'), targetDb.env).done;
  assert.equal(second.status, 0, second.stdout + second.stderr);
  const done = second.stdout
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l))
    .find((e) => e.event === 'done');
  assert.deepEqual([done.created, done.updated, done.failed], [0, 0, 0], second.stdout);
  const revisionsAfter = await target.ctx.db.knex('entity_revision').count({ n: '*' }).first();
  assert.deepEqual(revisionsAfter, revisionsBefore, 'no revision added');
});

/** The target's change feed read to its end, as an offline client does before it syncs again: the cursor to go on from. */
async function feedEnd(): Promise<string> {
  let next: string | undefined = `${target.url}/api/changes?since=0&page[limit]=500`;
  let cursor = '';
  while (next) {
    const page: { status: number; text: string; body: any } = await request(next, { token: targetToken });
    assert.equal(page.status, 200, page.text);
    cursor = page.body.meta.cursor;
    next = page.body.links?.next?.href;
  }
  return cursor;
}

test('a change at the source is carried, a record created there is added, one deleted there is pruned with --prune', async () => {
  const sensor = (await all(source.url, sourceToken, '/api/asset/sensor'))[0];
  assert.equal(
    (await request(`${source.url}/api/asset/sensor/${sensor.id}`, { method: 'DELETE', token: sourceToken })).status,
    204,
  );
  const renamed = await request(`${source.url}/api/asset/animal/${farm.cow}`, {
    method: 'PATCH',
    token: sourceToken,
    json: { data: { type: 'asset--animal', id: farm.cow, attributes: { name: 'Daisy II' } } },
  });
  assert.equal(renamed.status, 200);
  // A log too: an asset is listed in the feed anyway when the run rebuilds locations at its end.
  const noted = await request(`${source.url}/api/log/observation/${farm.fileLog}`, {
    method: 'PATCH',
    token: sourceToken,
    json: { data: { type: 'log--observation', id: farm.fileLog, attributes: { name: 'Soil test, again' } } },
  });
  assert.equal(noted.status, 200);
  const added = await request(`${source.url}/api/taxonomy_term/season`, {
    method: 'POST',
    token: sourceToken,
    json: { data: { type: 'taxonomy_term--season', attributes: { name: '2025' } } },
  });
  assert.equal(added.status, 201);

  // What an offline client of the target farm has seen so far: after the run, the feed and the
  // ETags must tell it of the change, the addition and the deletion.
  const cursor = await feedEnd();
  const logTag = (
    await request(`${target.url}/api/log/observation/${farm.fileLog}`, { token: targetToken })
  ).headers.get('etag');
  const run = await tilthAsync(importArgs('--prune', '--json'), targetDb.env).done;
  assert.equal(run.status, 0, run.stdout + run.stderr);
  const feed = await request(`${target.url}/api/changes?since=${encodeURIComponent(cursor)}&page[limit]=500`, {
    token: targetToken,
  });
  assert.equal(feed.status, 200, feed.text);
  const seen = new Map<string, any>(feed.body.data.map((e: any) => [e.id, e]));
  assert.ok(
    seen.get(farm.fileLog) && !seen.get(farm.fileLog).meta.deleted,
    'the log changed at the source is in the feed',
  );
  assert.equal(seen.get(sensor.id)?.meta.deleted, true, 'the pruned record is a tombstone');
  assert.ok(seen.has(added.body.data.id), 'the new record is in the feed');
  const log = await request(`${target.url}/api/log/observation/${farm.fileLog}`, { token: targetToken });
  assert.equal(log.body.data.attributes.name, 'Soil test, again');
  assert.notEqual(log.headers.get('etag'), logTag, 'the changed log has a new ETag');
  const events = run.stdout
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l));
  const done = events.find((e) => e.event === 'done');
  assert.deepEqual([done.created, done.updated, done.pruned, done.failed], [1, 2, 1, 0], run.stdout);
  assert.equal(events.find((e) => e.event === 'verified').differences, 0);
  assert.equal((await request(`${target.url}/api/asset/sensor/${sensor.id}`, { token: targetToken })).status, 404);
  assert.equal(
    (await request(`${target.url}/api/asset/animal/${farm.cow}`, { token: targetToken })).body.data.attributes.name,
    'Daisy II',
  );
  assert.equal(
    (await request(`${target.url}/api/taxonomy_term/season/${added.body.data.id}`, { token: targetToken })).status,
    200,
  );
});

test('--prune keeps a record the source deleted that a record here still names, and says so; records the source deleted together go together', async () => {
  const at = (url: string, token: string) => async (method: string, path: string, json?: unknown) =>
    request(`${url}${path}`, { method, token, ...(json ? { json } : {}) });
  const src = at(source.url, sourceToken);
  const here = at(target.url, targetToken);
  const term = async (name: string, parent?: string) => {
    const made = await src('POST', '/api/taxonomy_term/plant_type', {
      data: {
        type: 'taxonomy_term--plant_type',
        attributes: { name },
        relationships: parent ? { parent: { data: [{ type: 'taxonomy_term--plant_type', id: parent }] } } : {},
      },
    });
    assert.equal(made.status, 201, made.text);
    return made.body.data.id as string;
  };
  const brassicas = await term('Prune brassicas');
  const kale = await term('Prune kale', brassicas);
  const kept = await term('Prune kept');
  const roots = await term('Prune roots');
  const beet = await term('Prune beet', roots);
  const copied = await tilthAsync(importArgs('--no-verify'), targetDb.env).done;
  assert.equal(copied.status, 0, copied.stdout + copied.stderr);
  // Plants of this farm name two of the terms.
  const plant = async (name: string, type: string) => {
    const made = await here('POST', '/api/asset/plant', {
      data: {
        type: 'asset--plant',
        attributes: { name },
        relationships: { plant_type: { data: [{ type: 'taxonomy_term--plant_type', id: type }] } },
      },
    });
    assert.equal(made.status, 201, made.text);
    return made.body.data.id as string;
  };
  const local = [await plant('Local bed', kept), await plant('Local beets', beet)];
  // The source deletes them all, children first (it refuses a parent its children name).
  for (const id of [kale, brassicas, kept, beet, roots])
    assert.equal((await src('DELETE', `/api/taxonomy_term/plant_type/${id}`)).status, 204);

  const run = await tilthAsync(importArgs('--prune', '--json', '--no-verify'), targetDb.env).done;
  assert.equal(run.status, 0, 'a record kept does not fail the run: ' + run.stdout + run.stderr);
  const events = run.stdout
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l));
  const notes = new Map(events.filter((e) => e.notPruned).map((e) => [e.uuid, e.message]));
  assert.deepEqual([...notes.keys()].sort(), [kept, beet, roots].sort(), run.stdout);
  assert.match(
    notes.get(kept)!,
    new RegExp(
      `"Prune kept" is gone from the source, and not pruned: it is referenced by 1 asset\\(s\\) \\(plant_type\\): ${local[0]}`,
    ),
  );
  assert.match(
    notes.get(roots)!,
    new RegExp(`referenced by 1 taxonomy_term\\(s\\) \\(parent\\): ${beet}`),
    'a parent whose kept child names it is kept too',
  );
  assert.equal(events.find((e) => e.event === 'done').pruned, 2, run.stdout);
  for (const id of [kale, brassicas])
    assert.equal(
      (await here('GET', `/api/taxonomy_term/plant_type/${id}`)).status,
      404,
      'a parent and its child pruned together both go',
    );
  for (const id of [kept, beet, roots])
    assert.equal((await here('GET', `/api/taxonomy_term/plant_type/${id}`)).status, 200);
  assert.deepEqual(
    (await here('GET', `/api/asset/plant/${local[1]}`)).body.data.relationships.plant_type.data.map((r: any) => r.id),
    [beet],
    'the plant keeps its plant type',
  );

  // Once nothing here names them, a later run prunes them.
  for (const id of local) assert.equal((await here('DELETE', `/api/asset/plant/${id}`)).status, 204);
  const again = await tilthAsync(importArgs('--prune', '--json', '--no-verify'), targetDb.env).done;
  assert.equal(again.status, 0, again.stdout + again.stderr);
  assert.equal(
    again.stdout
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l))
      .find((e) => e.event === 'done').pruned,
    3,
    again.stdout,
  );
  for (const id of [kept, beet, roots])
    assert.equal((await here('GET', `/api/taxonomy_term/plant_type/${id}`)).status, 404);
});

test('--verify-only copies nothing and names each record and field that differ, exiting non-zero', async () => {
  const changed = await request(`${target.url}/api/asset/animal/${farm.calf}`, {
    method: 'PATCH',
    token: targetToken,
    json: { data: { type: 'asset--animal', id: farm.calf, attributes: { name: 'Renamed here' } } },
  });
  assert.equal(changed.status, 200);
  // The token from a file this time (a command line is visible to every user of the machine).
  writeFileSync(join(sourceDir, 'token.txt'), `${sourceToken}\n`);
  const run = await tilthAsync(
    ['import', 'farmos', '--url', source.url, '--token-file', join(sourceDir, 'token.txt'), '--verify-only'],
    targetDb.env,
  ).done;
  assert.equal(run.status, 1, run.stdout + run.stderr);
  assert.match(
    run.stdout,
    new RegExp(`^Differs: asset--animal ${farm.calf} name: source Buttercup, here Renamed here$`, 'm'),
  );
  // Times as dates, as the API serves them.
  assert.match(
    run.stdout,
    new RegExp(
      `^Differs: asset--animal ${farm.calf} changed: source \\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d\\+00:00, here \\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d\\+00:00$`,
      'm',
    ),
  );
  assert.match(run.stdout, /^Verification: 2 differences\.$/m);
  assert.equal(
    (await request(`${target.url}/api/asset/animal/${farm.calf}`, { token: targetToken })).body.data.attributes.name,
    'Renamed here',
    'nothing copied',
  );
});

test('several pages in flight: every record of a bundle listed once, those added while it is listed too', async () => {
  // Pages of 3 records: the sample farm's logs fill several lanes.
  const reader = new FarmSource(source.url, { kind: 'token', token: sourceToken }, { pageSize: 3 });
  await reader.signIn();
  const extra = await Promise.all(
    Array.from(
      { length: 9 },
      async (_, i) =>
        (
          await request(`${source.url}/api/log/activity`, {
            method: 'POST',
            token: sourceToken,
            json: { data: { type: 'log--activity', attributes: { name: `Listed ${i}`, status: 'done' } } },
          })
        ).body.data.id as string,
    ),
  );
  const before = (await all(source.url, sourceToken, '/api/log/activity')).map((r) => r.id);
  const listed: string[] = [];
  let added: string | null = null;
  for await (const page of reader.pagesInLanes('log--activity', 'drupal_internal__id', {}, 3)) {
    listed.push(...page.map((r) => r.id));
    if (!added) {
      const res = await request(`${source.url}/api/log/activity`, {
        method: 'POST',
        token: sourceToken,
        json: { data: { type: 'log--activity', attributes: { name: 'Written while listed', status: 'done' } } },
      });
      assert.equal(res.status, 201);
      added = res.body.data.id as string;
    }
  }
  assert.equal(new Set(listed).size, listed.length, 'no record twice');
  assert.deepEqual([...listed].sort(), [...before, added!].sort());
  for (const id of [...extra, added!])
    await request(`${source.url}/api/log/activity/${id}`, { method: 'DELETE', token: sourceToken });
});

test('a stream with more readings than a page comes across whole, read and written a page at a time; a reading changed at the source is carried', async () => {
  // 12,000 readings, twelve to a second: pages of 10,000 end inside a second.
  const knex = source.ctx.db.knex;
  const stream = (await knex('data_stream').where('uuid', farm.stream).first('id')) as { id: number };
  const base = 1_700_000_000;
  await insertReadings(
    knex,
    Array.from({ length: 12_000 }, (_, i) => ({
      streamId: stream.id,
      timestamp: base + Math.floor(i / 12),
      value: i / 4,
    })),
  );
  try {
    const run = async () => {
      const r = await tilthAsync(importArgs('--json'), targetDb.env).done;
      const events = r.stdout
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l));
      // (The record the --verify-only test changed here still differs: a run copies what changed at the source.)
      return {
        status: r.status,
        readings: events.find((e) => e.event === 'summary').counts.find((c: { type: string }) => c.type === 'readings'),
        differing: events.filter((e) => e.event === 'differs' && e.type === 'data_stream readings'),
        out: r.stdout,
      };
    };
    const first = await run();
    // Counted by data stream: the one stream's readings were replaced.
    assert.deepEqual([first.readings.read, first.readings.created, first.readings.updated], [1, 0, 1], first.out);
    assert.deepEqual(first.differing, []);
    const here = async () =>
      Number(
        (await target.ctx.db
          .knex(READINGS_TABLE)
          .join('data_stream', 'data_stream.id', `${READINGS_TABLE}.stream_id`)
          .where('data_stream.uuid', farm.stream)
          .count({ n: '*' })
          .first())!.n,
      );
    assert.equal(await here(), 12_003);

    await knex(READINGS_TABLE)
      .where({ stream_id: stream.id, timestamp: base + 500, value: 6000 / 4 })
      .update({ value: -1 });
    const second = await run();
    assert.deepEqual([second.readings.read, second.readings.updated], [1, 1], second.out);
    assert.deepEqual(second.differing, []);
    const changed = await target.ctx.db
      .knex(READINGS_TABLE)
      .join('data_stream', 'data_stream.id', `${READINGS_TABLE}.stream_id`)
      .where({ 'data_stream.uuid': farm.stream, timestamp: base + 500 })
      .select('value');
    assert.ok(changed.some((r: { value: number }) => Number(r.value) === -1));
  } finally {
    await knex(READINGS_TABLE)
      .where('stream_id', stream.id)
      .where('timestamp', '>=', base)
      .where('timestamp', '<', base + 1000)
      .delete();
  }
});
