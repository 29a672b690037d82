// `tilth import farmos` from a farmOS-shaped source (issue 24): a recorded farmOS 3.x
// (test/support/farmos-fixture.ts) that refuses the password grant, pages without meta.count,
// keeps files private, serves a bundle and a field Tilth has not, and misbehaves: what it can
// retry it retries, and each record it cannot store is named by UUID while the rest comes across.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { startTestServer, ADMIN, createTestDatabase, type TestServer } from '../support/server.ts';
import { request, passwordToken } from '../support/http.ts';
import {
  startFarmosFixture,
  FIXTURE,
  FIXTURE_CLIENT,
  MAP_BYTES,
  type FarmosFixture,
} from '../support/farmos-fixture.ts';
import { tilthAsync } from '../support/tilth-command.ts';
import { FarmSource, SourceError } from '../../runtime/farmos-import/source.ts';

let fixture: FarmosFixture;
let target: TestServer;
let targetDb: Awaited<ReturnType<typeof createTestDatabase>>;
let token: string;

before(async () => {
  fixture = await startFarmosFixture();
  targetDb = await createTestDatabase();
  target = await startTestServer({ database: targetDb });
  token = await passwordToken(target.url, ADMIN.name, ADMIN.password);
});
after(async () => {
  await target?.close();
  await targetDb?.drop();
  await fixture?.close();
});

test('a farmOS 3.x without the password grant: the error names the modules to enable and the flags to use instead', async () => {
  const source = new FarmSource(fixture.url, {
    kind: 'password',
    username: 'admin',
    password: 'secret-password',
    clientId: 'farm',
  });
  await assert.rejects(source.signIn(), (error: Error) => {
    assert.ok(error instanceof SourceError);
    assert.match(error.message, /simple_oauth_password_grant/);
    assert.match(error.message, /farm_api_default_consumer/);
    assert.match(error.message, /--client-id and --client-secret/);
    assert.match(error.message, /unsupported_grant_type/);
    return true;
  });
});

test('from farmOS: records come across as they were; bad ones are named by UUID and the rest goes on', async () => {
  // Bytes an earlier, killed run placed without its record committing: swept.
  const stray = join(target.config.dataDir, 'files', 'farm', 'file', '2021-06', 'map.txt');
  mkdirSync(dirname(stray), { recursive: true });
  writeFileSync(stray, 'left by a killed run');
  const run = await tilthAsync(
    [
      'import',
      'farmos',
      '--url',
      fixture.url,
      '--client-id',
      FIXTURE_CLIENT.id,
      '--client-secret',
      FIXTURE_CLIENT.secret,
      '--retries',
      '2',
    ],
    targetDb.env,
  ).done;
  const out = run.stdout;
  assert.equal(run.status, 1, out + run.stderr);
  assert.match(out, /Skipped \(this farm has no such record type\): plan--crop\./);
  assert.match(out, /Not carried \(this farm's asset--land has no such field\): surveyed_by\./);
  assert.match(
    out,
    new RegExp(`Failed: log--activity ${FIXTURE.dangling}: .*${FIXTURE.missingAsset}.*could not be found`),
  );
  assert.match(out, new RegExp(`Failed: file--file ${FIXTURE.badFile}: .*filesize 999`));
  assert.match(out, /Failed: log--observation \(its first page\): .*answered 500/);
  assert.match(out, /came without a password .*farmer/);
  assert.match(out, /Already here under the same name .*admin/);
  // Verification names only the records that failed: everything else is equal.
  const differing = [...out.matchAll(/^Differs: \S+ ([0-9a-f-]{36}) /gm)].map((m) => m[1]);
  assert.ok(differing.length > 0);
  assert.deepEqual([...new Set(differing)].sort(), [FIXTURE.badFile, FIXTURE.dangling].sort(), out);
  assert.match(out, /^Differs: log--observation \(unread\) \(records\): source .*answered 500/m);
  // The verdict says what it did not compare.
  assert.match(
    out,
    /^Verification: \d+ differences; plan--crop not compared \(this farm has no such record type\)\.$/m,
  );
  // The glitches (a 500, an HTML page, a truncated body) were retried.
  assert.deepEqual(
    fixture.queries
      .filter((r) => r.startsWith('GET /api/asset/land?'))
      .map((q) => (q.includes('sort=-') ? 'highest' : 'page')),
    ['highest', 'highest', 'page', 'page'],
    'its highest number for the time left (one HTML answer, then again), then the page, then the verification',
  );

  assert.match(out, /^Reading .* as farmOS 3\.x \(its \/api says version 3\.2\.0\)\.$/m);

  const get = async (path: string) => (await request(`${target.url}/api/${path}`, { token })).body.data;
  // farmOS 3.x's own shapes: a quantity's two material types (3.0), a product (3.1), a term's photo (3.2).
  assert.deepEqual(
    (await get(`quantity/material/${FIXTURE.mulch}`)).relationships.material_type.data.map((r: any) => r.id),
    [FIXTURE.compost, FIXTURE.straw],
  );
  assert.equal((await get(`asset/product/${FIXTURE.preserves}`)).relationships.product_type.data.id, FIXTURE.jam);
  assert.deepEqual(
    (await get(`taxonomy_term/plant_type/${FIXTURE.tomato}`)).relationships.image.data.map((r: any) => r.id),
    [FIXTURE.photo],
  );
  const field = await get(`asset/land/${FIXTURE.field}`);
  assert.equal(field.attributes.created, '2021-06-01T00:00:00+00:00');
  assert.equal(field.attributes.changed, '2021-06-05T08:30:00+00:00');
  assert.deepEqual(field.attributes.flag, ['priority']);
  assert.equal(field.attributes.notes.value, 'Good soil');
  assert.equal(field.relationships.uid.data.id, FIXTURE.farmer, 'the owner is kept, by UUID');
  const walk = await get(`log/activity/${FIXTURE.walk}`);
  assert.equal(walk.attributes.name, 'Walked the field');
  assert.deepEqual(
    walk.relationships.owner.data.map((r: any) => r.id),
    [FIXTURE.farmer],
  );
  assert.equal(walk.relationships.file.data[0].meta.description, 'Map');
  const ownerless = await get(`log/activity/${FIXTURE.ownerless}`);
  assert.deepEqual(
    [ownerless.attributes.name, ownerless.relationships.owner.data, ownerless.relationships.uid.data],
    ['', [], null],
    'no name, owner or author made up',
  );
  const farmer = await get(`user/user/${FIXTURE.farmer}`);
  assert.equal(farmer.attributes.mail, 'farmer@example.org');
  assert.equal(farmer.attributes.created, '2021-05-01T12:00:00+00:00');
  assert.deepEqual(
    farmer.relationships.roles.data.map((r: any) => r.meta.drupal_internal__target_id),
    ['farm_manager'],
  );
  const file = await get(`file/file/${FIXTURE.mapFile}`);
  assert.deepEqual(
    [file.attributes.created, file.relationships.uid.data?.id],
    ['2021-06-02T09:00:00+00:00', FIXTURE.farmer],
    'who uploaded the file, and when',
  );
  const bytes = Buffer.from(
    await (
      await fetch(new URL(file.attributes.uri.url, target.url), { headers: { Authorization: `Bearer ${token}` } })
    ).arrayBuffer(),
  );
  assert.equal(createHash('sha256').update(bytes).digest('hex'), createHash('sha256').update(MAP_BYTES).digest('hex'));
  assert.equal(
    (await request(`${target.url}/api/log/activity/${FIXTURE.dangling}`, { token })).status,
    404,
    'nothing half written',
  );
  assert.equal(
    existsSync(stray) && readFileSync(stray, 'utf8') === 'left by a killed run',
    false,
    'the stray bytes are gone',
  );
  const history = await request(`${target.url}/api/asset/land/${FIXTURE.field}/revision-history`, { token });
  assert.match(
    JSON.stringify(history.body),
    new RegExp(`Imported from ${fixture.url.replace(/[.]/g, '\\.')} on \\d{4}-\\d\\d-\\d\\d`),
  );
});

test('run again: only what changed at the source since is read, files are verified by the SHA-256 they came with, and a change is carried', async () => {
  const args = [
    'import',
    'farmos',
    '--url',
    fixture.url,
    '--client-id',
    FIXTURE_CLIENT.id,
    '--client-secret',
    FIXTURE_CLIENT.secret,
    '--retries',
    '2',
    '--json',
  ];
  const events = (stdout: string) =>
    stdout
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l));
  const row = (stdout: string, type: string) =>
    events(stdout)
      .find((e) => e.event === 'summary')
      .counts.find((c: { type: string }) => c.type === type);
  const from = fixture.queries.length;
  const again = await tilthAsync(args, targetDb.env).done;
  assert.equal(again.status, 1, 'the records that failed the first time fail again');
  assert.deepEqual(
    [
      events(again.stdout).find((e) => e.event === 'done').created,
      events(again.stdout).find((e) => e.event === 'done').updated,
    ],
    [0, 0],
  );
  // Read whole the first time, then asked only for records changed since (the source's time, at or after).
  const landPages = fixture.queries.slice(from).filter((q) => q.startsWith('GET /api/asset/land?'));
  assert.ok(
    landPages.some((q) => /filter%5Bsince%5D%5Bcondition%5D%5Bpath%5D=changed/.test(q) && /operator%5D=%3E%3D/.test(q)),
    landPages.join('\n'),
  );
  assert.equal(row(again.stdout, 'asset--land').read, 0, 'the field did not change at the source: not read');
  // A bundle with a record that failed is read whole again (the record is tried again).
  assert.equal(row(again.stdout, 'log--activity').read, 3);
  // Verified equal without downloading the bytes again: the source's file record is the one imported.
  assert.equal(fixture.requests.slice(from).filter((r) => r === 'GET /system/files/2021-06/map.txt').length, 0);
  const differing = new Set(
    events(again.stdout)
      .filter((e) => e.event === 'differs')
      .map((e) => e.uuid),
  );
  assert.deepEqual(
    [...differing].sort(),
    [FIXTURE.badFile, FIXTURE.dangling, '(unread)'].sort(),
    'only the records that failed, as before',
  );

  fixture.edit(FIXTURE.field, {
    notes: { value: 'Better soil', format: 'default' },
    changed: new Date().toISOString().replace(/\.\d+Z$/, '+00:00'),
  });
  const changed = await tilthAsync(args, targetDb.env).done;
  assert.deepEqual(
    [row(changed.stdout, 'asset--land').read, row(changed.stdout, 'asset--land').updated],
    [1, 1],
    changed.stdout,
  );
  const field = (await request(`${target.url}/api/asset/land/${FIXTURE.field}`, { token })).body.data;
  assert.equal(field.attributes.notes.value, 'Better soil');
});
