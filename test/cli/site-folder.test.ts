// A farm's own bundle in the site folder survives an upgrade of Tilth (issue 29, Part A, item 1):
// the story from the issue. A `log--grazing` bundle is generated on the "old" Tilth (a copy of
// this checkout), the farm records grazing; then Tilth gains a migration of its own (the
// "upgrade": a new core bundle, generated as upstream would, without the farm's site folder);
// `tilth migrate` refuses in one line until `npm run generate` has caught the site's output up,
// which adds no migration and touches no file of Tilth's; `tilth migrate` then applies Tilth's
// new migration, and every record of both is there. The farm then renames an allowed value:
// records and revisions rewritten, reported with counts, and a record PATCHed back as read and a
// CSV round trip pass (item 3). A site bundle that takes a name of Tilth's is refused naming both files.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { scratchProject, ROOT, type ScratchProject } from '../support/project.ts';
import { createTestDatabase, ADMIN } from '../support/server.ts';
import { startChildServer } from '../support/child-server.ts';
import { request, passwordToken } from '../support/http.ts';

const projects: ScratchProject[] = [];
after(() => projects.forEach((p) => p.remove()));

// The README's own walk-through ("Adding a record type in YAML"), so that it cannot rot: its
// grazing bundle, and the names it promises.
const README = readFileSync(join(ROOT, 'README.md'), 'utf8');
const SECTION = README.slice(README.indexOf('## Adding a record type in YAML'));
const [GRAZING, RENAMED] = [...SECTION.matchAll(/```yaml\n([\s\S]*?)```/g)].map((m, i) =>
  i === 0 ? m[1]!.replace(/^ {3}/gm, '') : m[1]!,
); // the first sits in a list item
// The README's migrate output for the rename, as it shows it.
const RENAME_REPORT = /```\n(  site\/0002[\s\S]*?)```/.exec(SECTION)![1]!;

// What an upgrade of Tilth brings: a bundle of its own with a side table, so a new migration.
const IRRIGATION = `entity_type: log
bundle: irrigation
label: Irrigation
fields:
  irrigated_zones:
    type: entity_reference
    label: Irrigated zones
    target_type: asset
    multiple: true
`;

function tilth(p: ScratchProject, env: Record<string, string>, ...args: string[]) {
  const run = spawnSync(process.execPath, [join(p.root, 'bin', 'tilth.js'), ...args], {
    cwd: p.root,
    encoding: 'utf8',
    env: { ...process.env, TILTH_LOG_LEVEL: 'silent', TILTH_SITE_DIR: '', ...env },
  });
  assert.doesNotMatch(run.stderr, /\n\s+at /, `no stack trace from tilth ${args.join(' ')}:\n${run.stderr}`);
  return run;
}

/** Every file under a folder with its text, to compare what a step changed. */
function snapshot(dir: string): Map<string, string> {
  const out = new Map<string, string>();
  const walk = (d: string) => {
    for (const name of readdirSync(d, { withFileTypes: true })) {
      if (name.isDirectory()) walk(join(d, name.name));
      else out.set(join(d, name.name).slice(dir.length + 1), readFileSync(join(d, name.name), 'utf8'));
    }
  };
  walk(dir);
  return out;
}

test("a site bundle generated on an older Tilth survives an upgrade that brings a new migration of Tilth's", async () => {
  const p = scratchProject({ withGenerated: true, withCode: true });
  projects.push(p);
  const database = await createTestDatabase();
  try {
    // The farm adds its bundle in site/ (the default TILTH_SITE_DIR), and generates.
    p.write('site/definitions/log/grazing.yaml', GRAZING);
    let run = tilth(p, {}, 'generate');
    assert.equal(run.status, 0, run.stderr);
    assert.match(
      run.stdout,
      /Added the site's migration site\/generated\/migrations\/0001_create_log__grazed_animals_and_more\.json/,
    );
    assert.ok(
      SECTION.includes('site/generated/migrations/0001_create_log__grazed_animals_and_more.json'),
      'the README names the migration the generator writes',
    );
    assert.deepEqual(
      snapshot(join(p.root, 'generated')),
      snapshot(join(ROOT, 'generated')),
      "the farm's bundle changes none of Tilth's generated files",
    );

    // `npm start` migrates (site/0001_… with Tilth's own) and serves the farm's bundle.
    let server = await startChildServer(database.env, { TILTH_SITE_DIR: '' }, { root: p.root });
    let flock: string, grazing: string, activity: string;
    try {
      const token = await passwordToken(server.url, ADMIN.name, ADMIN.password);
      const post = async (type: string, attributes: object, relationships: object = {}) => {
        const [entity, bundle] = type.split('--');
        const created = await request(`${server.url}/api/${entity}/${bundle}`, {
          method: 'POST',
          token,
          json: { data: { type, attributes, relationships } },
        });
        assert.equal(created.status, 201, created.text);
        return created.body.data.id as string;
      };
      flock = await post('asset--group', { name: 'Ewe flock', status: 'active' });
      grazing = await post(
        'log--grazing',
        { name: 'North paddock', status: 'done', grazing_days: 4, paddock_area: 4.125, grazing_method: 'mob' },
        { grazed_animals: { data: [{ type: 'asset--group', id: flock }] } },
      );
      // The README's decimal (precision 8, scale 2): a string without trailing zeros, rounded to the scale, on either database.
      const areas = [];
      for (const paddock_area of ['12.50', 7, '0.005', '-3.1'])
        areas.push(
          (await request(`${server.url}/api/log/grazing/${await post('log--grazing', { paddock_area })}`, { token }))
            .body.data.attributes.paddock_area,
        );
      assert.deepEqual(areas, ['12.5', '7', '0.01', '-3.1']);
      const tooBig = await request(`${server.url}/api/log/grazing`, {
        method: 'POST',
        token,
        json: { data: { type: 'log--grazing', attributes: { paddock_area: '1234567' } } },
      });
      assert.equal(tooBig.status, 422, tooBig.text);
      assert.equal(tooBig.body.errors[0].source.pointer, '/data/attributes/paddock_area');
      assert.match(tooBig.body.errors[0].detail, /at most 6 digits before the decimal point/);
      const schema = (await request(`${server.url}/api/log/grazing/resource/schema`)).body.definitions.attributes
        .properties.paddock_area;
      assert.deepEqual([schema.type, schema.pattern], ['string', '^-?\\d{1,6}(\\.\\d{1,2})?$']);
      activity = await post('log--activity', { name: 'Fence check', status: 'done' });
    } finally {
      await server.stop();
    }

    // Upstream's upgrade: Tilth's own definitions gain a bundle, generated where there is no site
    // folder (an empty one stands for the upstream checkout), and pulled with its new migration.
    p.write('definitions/log/irrigation.yaml', IRRIGATION);
    // Numbered after Tilth's own migrations so far, whatever their count.
    const irrigation = `${String(readdirSync(join(p.root, 'generated', 'migrations')).filter((f) => /^\d{4}_.*\.ts$/.test(f)).length + 1).padStart(4, '0')}_create_log__irrigated_zones`;
    run = tilth(p, {}, 'generate', '--site', join(p.root, 'upstream-has-no-site'));
    assert.equal(run.status, 0, run.stderr);
    assert.equal(
      existsSync(join(p.root, 'upstream-has-no-site')),
      false,
      'without a site folder nothing is written for one',
    );
    assert.ok(run.stdout.includes(`Added migration generated/migrations/${irrigation}.ts`), run.stdout);
    const upgraded = snapshot(join(p.root, 'generated'));

    // Before the farm generates again, its site output no longer fits: one line saying what to run.
    run = tilth(p, database.env, 'migrate');
    assert.equal(run.status, 1, run.stdout);
    assert.equal(run.stderr.trim().split('\n').length, 1, run.stderr);
    assert.match(
      run.stderr,
      /site\/generated was generated for another version of Tilth's own definitions.*npm run generate.*npx tilth migrate/,
    );

    // npm run generate: the site's output catches up, no migration of its own, no file of Tilth's touched.
    run = tilth(p, {}, 'generate');
    assert.equal(run.status, 0, run.stderr);
    assert.doesNotMatch(run.stdout, /Added/);
    assert.deepEqual(snapshot(join(p.root, 'generated')), upgraded);
    assert.deepEqual(readdirSync(join(p.root, 'site/generated/migrations')), [
      '0001_create_log__grazed_animals_and_more.json',
    ]);

    run = tilth(p, database.env, 'migrate');
    assert.equal(run.status, 0, run.stderr);
    assert.equal(run.stdout.split('\n').slice(1).join('\n'), `Applied 1 migration(s):\n  model/${irrigation}\n`);

    // The farm renames an allowed value (the README's step): a data migration of the site's,
    // reported with counts by tilth migrate.
    assert.ok(RENAMED!.includes('renamed_values: { mob: mob_grazing }'));
    // A server of the old definitions runs beside the rename (issue 41 Part E, item 1).
    const beside = await startChildServer(database.env, { TILTH_SITE_DIR: '' }, { root: p.root });
    try {
      p.write('site/definitions/log/grazing.yaml', GRAZING!.slice(0, GRAZING!.indexOf('  grazing_method:')) + RENAMED);
      run = tilth(p, {}, 'generate');
      assert.equal(run.status, 0, run.stderr);
      assert.match(
        run.stdout,
        /Added the site's migration site\/generated\/migrations\/0002_rename_grazing_grazing_method_values\.json/,
      );
      run = tilth(p, database.env, 'migrate');
      assert.equal(run.status, 0, run.stderr);
      assert.equal(run.stdout.split('\n').slice(1).join('\n'), `Applied 1 migration(s):\n${RENAME_REPORT}`);
      // It notices within a second (the check is throttled), then stores no old `mob` (it did: 201),
      // nor anything else, until it is restarted, as the README's rename steps say; it still reads.
      await new Promise((resolve) => setTimeout(resolve, 1100));
      const token = await passwordToken(beside.url, ADMIN.name, ADMIN.password);
      for (const grazing_method of ['mob', 'mob_grazing']) {
        const refused = await request(`${beside.url}/api/log/grazing`, {
          method: 'POST',
          token,
          json: { data: { type: 'log--grazing', attributes: { name: 'While migrating', grazing_method } } },
        });
        assert.equal(refused.status, 503, refused.text);
        assert.match(refused.body.errors[0].detail, /restarted/);
      }
      assert.equal((await request(`${beside.url}/api/log/grazing/${grazing}`, { token })).status, 200);
      assert.equal((await fetch(`${beside.url}/health`)).status, 503);
    } finally {
      await beside.stop();
    }
    assert.ok(SECTION.includes('Then restart the server'), 'the README says to restart after the rename');

    server = await startChildServer(database.env, { TILTH_SITE_DIR: '' }, { root: p.root });
    try {
      const token = await passwordToken(server.url, ADMIN.name, ADMIN.password);
      const read = await request(`${server.url}/api/log/grazing/${grazing}?include=grazed_animals`, { token });
      assert.equal(read.status, 200, read.text);
      assert.equal(read.body.data.attributes.grazing_days, 4);
      assert.equal(read.body.data.attributes.paddock_area, '4.13');
      assert.equal(read.body.data.attributes.grazing_method, 'mob_grazing');
      const first = await request(
        `${server.url}/api/log/grazing/${grazing}?resourceVersion=id:${read.body.data.attributes.drupal_internal__revision_id}`,
        { token },
      );
      assert.equal(first.body.data.attributes.grazing_method, 'mob_grazing', 'the revision was rewritten too');
      // PATCHed back exactly as read: accepted (a 422 while old records kept a value their schema no longer lists).
      const { attributes, relationships } = read.body.data;
      const patched = await request(`${server.url}/api/log/grazing/${grazing}`, {
        method: 'PATCH',
        token,
        json: { data: { type: 'log--grazing', id: grazing, attributes, relationships } },
      });
      assert.equal(patched.status, 200, patched.text);
      // A CSV export imported again (after the record was deleted: its UUID comes back).
      const csv = await request(`${server.url}/api/log/grazing?_format=csv&filter[name]=North%20paddock`, { token });
      assert.equal(csv.status, 200, csv.text);
      p.write('grazing.csv', csv.text);
      assert.equal(
        (await request(`${server.url}/api/log/grazing/${grazing}`, { method: 'DELETE', token })).status,
        204,
      );
      const imported = tilth(p, database.env, 'import', 'csv', join(p.root, 'grazing.csv'));
      assert.equal(imported.status, 0, imported.stderr + imported.stdout);
      const again = await request(`${server.url}/api/log/grazing?filter[grazing_method]=mob_grazing`, { token });
      assert.deepEqual(
        again.body.data.map((d: { attributes: { name: string } }) => d.attributes.name),
        ['North paddock'],
        again.text,
      );
      assert.deepEqual(
        read.body.data.relationships.grazed_animals.data.map((r: { id: string }) => r.id),
        [flock],
      );
      assert.equal(read.body.included[0].attributes.name, 'Ewe flock');
      assert.equal(
        (await request(`${server.url}/api/log/activity/${activity}`, { token })).body.data.attributes.name,
        'Fence check',
      );
      const irrigation = await request(`${server.url}/api/log/irrigation`, {
        method: 'POST',
        token,
        json: {
          data: {
            type: 'log--irrigation',
            attributes: { name: 'Drip line', status: 'done' },
            relationships: { irrigated_zones: { data: [{ type: 'asset--group', id: flock }] } },
          },
        },
      });
      assert.equal(irrigation.status, 201, irrigation.text);
      const links = (await request(`${server.url}/api`)).body.links;
      assert.ok(links['log--grazing'] && links['log--irrigation']);
      const openapi = await request(`${server.url}/api/openapi.json`);
      assert.ok(
        openapi.body.paths['/api/log/grazing'] && openapi.body.components.schemas['log--grazing'],
        'the site bundle is in the OpenAPI document',
      );
    } finally {
      await server.stop();
    }

    // A site bundle with the name of one of Tilth's (here the one the upgrade brought) is refused,
    // in one line naming both files, by generate --check as by generate.
    p.write('site/definitions/log/irrigation.yaml', IRRIGATION);
    run = tilth(p, {}, 'generate', '--check');
    assert.equal(run.status, 1, run.stdout);
    const errors = run.stderr.trim().split('\n').slice(1);
    assert.equal(errors.length, 1, run.stderr);
    assert.match(
      errors[0]!,
      /^site\/definitions\/log\/irrigation\.yaml:\d+: bundle "log--irrigation" is Tilth's own, defined in definitions\/log\/irrigation\.yaml; a site bundle cannot redefine or replace it/,
    );
  } finally {
    await database.drop();
  }
});
