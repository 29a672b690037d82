// `tilth import farmos` from farmOS 4.x and 2.x (issue 39, "Moving in from farmOS 3.x and 4.x"): the
// source's `meta.farm.version` chooses the shape its records are read in, so a 4.x farm's boolean
// `archived` and `last_archived`, `is_sterile`, abandoned logs and farm organizations come across
// as this farm holds them, and the round trip verifies. A 4.x whose API is off, or whose OAuth2
// keys were never generated, is told what to run at the source; a version it does not know is
// named. A 2.x farm's to-one material type reads as the to-many it is here. The recorded farm is
// test/support/farmos-fixture.ts, as farmOS 4.x (and 2.x) serves it.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { startTestServer, ADMIN, createTestDatabase, type TestServer } from '../support/server.ts';
import { request, passwordToken } from '../support/http.ts';
import {
  startFarmosFixture,
  FIXTURE,
  FIXTURE_CLIENT,
  FIXTURE_TOKEN,
  PHOTO_BYTES,
  type FarmosFixture,
  type FixtureOptions,
} from '../support/farmos-fixture.ts';
import { tilthAsync } from '../support/tilth-command.ts';

let fixture: FarmosFixture;
let target: TestServer;
let targetDb: Awaited<ReturnType<typeof createTestDatabase>>;
let token: string;

const signIn = ['--client-id', FIXTURE_CLIENT.id, '--client-secret', FIXTURE_CLIENT.secret];
const importFrom = (url: string, ...more: string[]) => ['import', 'farmos', '--url', url, ...signIn, ...more];

before(async () => {
  fixture = await startFarmosFixture({ version: '4.x', faults: false });
  targetDb = await createTestDatabase();
  target = await startTestServer({ database: targetDb });
  token = await passwordToken(target.url, ADMIN.name, ADMIN.password);
});
after(async () => {
  await target?.close();
  await targetDb?.drop();
  await fixture?.close();
});

/** What this farm's records can hold today: the log status `abandoned`, farm organizations. */
function holds() {
  const status = target.ctx.registry.get('log--activity')!.fieldsByName.get('status')!;
  return {
    abandoned: !status.allowedValues || status.allowedValues.some((a) => a.value === 'abandoned'),
    farms: Boolean(target.ctx.registry.get('organization--farm')),
    assetFarm: target.ctx.registry.get('asset--land')!.fieldsByName.has('farm'),
  };
}

test('a farmOS 4.x farm moves in: archived, sterile, abandoned and its farm come across as this farm holds them, and the round trip verifies', async () => {
  const run = await tilthAsync(importFrom(fixture.url, '--retries', '2'), targetDb.env).done;
  const out = run.stdout;
  assert.match(
    out,
    new RegExp(
      `^Reading ${fixture.url.replace(/[.]/g, '\\.')} as farmOS 4\\.x \\(its /api says version 4\\.0\\.0\\)\\.$`,
      'm',
    ),
  );
  const get = async (path: string) => (await request(`${target.url}/api/${path}`, { token })).body.data;

  // `archived: true` and `last_archived` are this farm's status and archived time; `is_sterile` its is_castrated.
  const dolly = await get(`asset/animal/${FIXTURE.dolly}`);
  assert.deepEqual(
    [dolly.attributes.status, dolly.attributes.archived, dolly.attributes.is_castrated],
    ['archived', '2021-07-01T00:00:00+00:00', true],
    out,
  );
  const field = await get(`asset/land/${FIXTURE.field}`);
  assert.deepEqual([field.attributes.status, field.attributes.archived], ['active', null]);
  assert.doesNotMatch(out, /Not carried[^\n]*(last_archived|is_sterile)/, 'read as fields this farm has');

  // farmOS 3.x's shapes, which 4.x keeps: two material types, a product, a plant type's photo.
  const mulch = await get(`quantity/material/${FIXTURE.mulch}`);
  assert.deepEqual(
    mulch.relationships.material_type.data.map((r: { id: string }) => r.id),
    [FIXTURE.compost, FIXTURE.straw],
  );
  assert.equal((await get(`asset/product/${FIXTURE.preserves}`)).relationships.product_type.data.id, FIXTURE.jam);
  const tomato = await get(`taxonomy_term/plant_type/${FIXTURE.tomato}`);
  assert.deepEqual(
    tomato.relationships.image.data.map((r: { id: string; meta: { alt?: string } }) => [r.id, r.meta.alt]),
    [[FIXTURE.photo, 'Ripe tomatoes']],
    'the term came after its photo',
  );
  const photo = await get(`file/file/${FIXTURE.photo}`);
  const bytes = Buffer.from(
    await (
      await fetch(new URL(photo.attributes.uri.url, target.url), { headers: { Authorization: `Bearer ${token}` } })
    ).arrayBuffer(),
  );
  assert.equal(
    createHash('sha256').update(bytes).digest('hex'),
    createHash('sha256').update(PHOTO_BYTES).digest('hex'),
  );

  const can = holds();
  // A farm organization, and the field's farm: carried once this farm has them, else named.
  if (can.farms) {
    assert.equal((await get(`organization/farm/${FIXTURE.farm}`)).attributes.name, 'Home farm');
    if (can.assetFarm) assert.equal(field.relationships.farm.data.id, FIXTURE.farm);
  } else {
    assert.match(out, /^Skipped \(this farm has no such record type\): .*organization--farm/m);
    assert.match(out, /^Not carried \(this farm's asset--land has no such field\): (.*, )?farm(, .*)?\.$/m);
  }
  // An abandoned log: stored as abandoned once this farm's logs may be; until then named, not stored as another status.
  const abandoned = await request(`${target.url}/api/log/activity/${FIXTURE.abandoned}`, { token });
  if (can.abandoned) {
    // Stored as abandoned; /api, the farmOS 2.x shape, shows it as done (README, "farmOS versions").
    const stored = await target.ctx.db.knex('log').where('uuid', FIXTURE.abandoned).first('status');
    assert.equal(stored?.status, 'abandoned');
    assert.equal(abandoned.body.data.attributes.status, 'done');
    assert.equal(run.status, 0, out + run.stderr);
    assert.match(out, /^Verified: this farm has what /m);
  } else {
    assert.equal(abandoned.status, 404, 'not stored as another status');
    assert.equal(run.status, 1, out + run.stderr);
    assert.match(
      out,
      new RegExp(
        `^Failed: log--activity ${FIXTURE.abandoned}: its status is abandoned \\(farmOS 4\\.x: farmOS 4\\.0 \\(PR #945\\)\\), which this farm's log--activity cannot hold \\(pending, done\\); not stored, and read again by the next run\\.$`,
        'm',
      ),
    );
    // Verification compares everything else in 4.x's shape, mapped as the import mapped it: equal.
    const differing = [...out.matchAll(/^Differs: (.*)$/gm)].map((m) => m[1]);
    assert.deepEqual(differing, [`log--activity ${FIXTURE.abandoned} (record): source present, here missing`], out);
  }

  // Run again: nothing changed at the source, so nothing is written (the shape's mapping is stable).
  const again = await tilthAsync(importFrom(fixture.url, '--json'), targetDb.env).done;
  const done = again.stdout
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l))
    .find((e) => e.event === 'done');
  assert.deepEqual([done.created, done.updated], [0, 0], again.stdout);
  const source = again.stdout
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l))
    .find((e) => e.event === 'source');
  assert.deepEqual(source, { event: 'source', version: '4.0.0', shape: 'farmOS 4.x' });

  // A change in 4.x's shape (un-archived; `last_archived` kept, as farmOS keeps it) reads as this farm's.
  fixture.edit(FIXTURE.dolly, { archived: false, changed: new Date().toISOString().replace(/\.\d+Z$/, '+00:00') });
  const changed = await tilthAsync(importFrom(fixture.url, '--no-verify'), targetDb.env).done;
  assert.equal(changed.status, can.abandoned ? 0 : 1, changed.stdout + changed.stderr);
  const after = await get(`asset/animal/${FIXTURE.dolly}`);
  assert.deepEqual([after.attributes.status, after.attributes.archived], ['active', '2021-07-01T00:00:00+00:00']);
  const verified = await tilthAsync(importFrom(fixture.url, '--verify-only'), targetDb.env).done;
  assert.doesNotMatch(verified.stdout, new RegExp(`^Differs: asset--animal`, 'm'), verified.stdout);
});

/** The command's error against a fixture with these options, signing in with `args`, and the requests it made there. */
async function failure(options: FixtureOptions, args: string[]): Promise<{ stderr: string; requests: string[] }> {
  const source = await startFarmosFixture(options);
  try {
    const run = await tilthAsync(['import', 'farmos', '--url', source.url, ...args, '--retries', '1'], targetDb.env)
      .done;
    assert.equal(run.status, 1, run.stdout + run.stderr);
    return { stderr: run.stderr, requests: source.requests };
  } finally {
    await source.close();
  }
}

test('a farmOS 4.x with its API off: the error says what to enable at the source', async () => {
  const enable = /drush en farm_api farm_api_oauth farm_api_default_consumer/;
  const keys = /drush simple-oauth:generate-keys/;
  // Signing in: no token endpoint at all.
  const { stderr: signingIn } = await failure({ version: '4.x', farmApi: false }, signIn);
  assert.match(signingIn, /oauth\/token answered 404/);
  assert.match(signingIn, enable);
  assert.match(signingIn, keys);
  // With a token: no /api.
  const { stderr: reading } = await failure({ version: '4.x', farmApi: false }, ['--token', FIXTURE_TOKEN]);
  assert.match(
    reading,
    /\/api answered 404: this is not a farm's address, or the farm runs farmOS 4\.x with its API off/,
  );
  assert.match(reading, enable);
  assert.match(reading, keys);
});

test('a farmOS 4.x whose OAuth2 keys were never generated: the error says how to generate them', async () => {
  const { stderr } = await failure({ version: '4.x', oauthKeys: false }, signIn);
  assert.match(stderr, /its OAuth2 server has no keys \(.*You need to set the OAuth2 secret and private keys\.\)/);
  assert.match(stderr, /drush simple-oauth:generate-keys \.\.\/keys/);
});

test('a farmOS version it does not read is named, and nothing is copied', async () => {
  const { stderr, requests } = await failure({ version: '4.x', reports: '5.0.0' }, signIn);
  assert.match(
    stderr,
    /says it runs farmOS "5\.0\.0" \(meta\.farm\.version\), a version this Tilth cannot read: it reads farmOS 2\.x, 3\.x and 4\.x\./,
  );
  assert.deepEqual(requests, ['POST /oauth/token', 'GET /api'], 'no record read');
  // A development version is its major version's shape.
  const dev = await startFarmosFixture({ version: '4.x', faults: false, reports: '4.x-dev' });
  try {
    const run = await tilthAsync(importFrom(dev.url, '--verify-only'), targetDb.env).done;
    assert.match(run.stdout, /as farmOS 4\.x \(its \/api says version 4\.x-dev\)/, run.stdout + run.stderr);
  } finally {
    await dev.close();
  }
});

test("a farmOS 2.x's to-one material type is this farm's to-many, and the round trip verifies", async () => {
  const source = await startFarmosFixture({ version: '2.x', faults: false });
  const db = await createTestDatabase({ migrated: true });
  const here = await startTestServer({ database: db });
  try {
    const run = await tilthAsync(importFrom(source.url), db.env).done;
    assert.match(run.stdout, /as farmOS 2\.x \(its \/api says version 2\.2\.2\)/);
    assert.equal(run.status, 0, run.stdout + run.stderr);
    assert.match(run.stdout, /^Verified: this farm has what /m);
    const mulch = await request(`${here.url}/api/quantity/material/${FIXTURE.mulch}`, {
      token: await passwordToken(here.url, ADMIN.name, ADMIN.password),
    });
    assert.deepEqual(
      mulch.body.data.relationships.material_type.data.map((r: { id: string }) => r.id),
      [FIXTURE.compost],
    );
  } finally {
    await here.close();
    await db.drop();
    await source.close();
  }
});
