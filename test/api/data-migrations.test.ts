// Data migrations declared in YAML (issue 29 Part A, item 3): a field renamed with its type changed
// (`renamed_from`, `converted_from`: integer → decimal), a multiple field renamed, and an allowed
// value renamed, in one site bundle. The generator emits
// them once; migrating moves the records' values and their revisions, says how many, and old
// records read back under the new names and PATCH back as read. (The README's value rename, with
// a CSV round trip, is tested end to end in test/cli/site-folder.test.ts.) Then the bundle is
// shipped as an optional module of the site, as the README says: no migration.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, mkdirSync, readdirSync, readFileSync, renameSync } from 'node:fs';
import { join } from 'node:path';
import { generate } from '../../generator/index.ts';
import { loadConfig } from '../../runtime/config.ts';
import { openDatabase } from '../../runtime/storage/database.ts';
import { migrateLatest } from '../../runtime/storage/migrations.ts';
import { loadGenerated } from '../../runtime/generated.ts';
import { scratchProject, type ScratchProject } from '../support/project.ts';
import { createTestDatabase, startTestServerAsAdmin } from '../support/server.ts';
import { request } from '../support/http.ts';

const projects: ScratchProject[] = [];
after(() => projects.forEach((p) => p.remove()));

const BEFORE = `entity_type: log
bundle: paddock_move
label: Paddock move
fields:
  days:
    type: integer
    label: Days
  gates:
    type: string
    label: Gates
    multiple: true
  move_method:
    type: list_string
    label: Method
    allowed_values:
      - { value: rotational, label: Rotational }
      - { value: mob, label: Mob grazing }
`;

const AFTER = `entity_type: log
bundle: paddock_move
label: Paddock move
fields:
  grazing_days:
    type: decimal
    label: Grazing days
    precision: 5
    scale: 1
    renamed_from: days
    converted_from: integer
  gates_opened:
    type: string
    label: Gates opened
    multiple: true
    renamed_from: gates
  move_method:
    type: list_string
    label: Method
    allowed_values:
      - { value: rotational, label: Rotational }
      - { value: mob_grazing, label: Mob grazing }
    renamed_values: { mob: mob_grazing }
`;

test('a field renamed and converted, a renamed multiple field and a renamed value move records and revisions, once, with counts', async () => {
  const p = scratchProject({ withGenerated: true });
  projects.push(p);
  const generatedDir = join(p.root, 'generated');
  const before = join(p.root, 'site-before');
  p.write('site-before/definitions/log/paddock_move.yaml', BEFORE);
  await generate({ root: p.root, siteDir: before });
  const database = await createTestDatabase();
  try {
    let id: string;
    {
      const { server, token } = await startTestServerAsAdmin({
        generatedDir,
        database,
        env: { TILTH_SITE_DIR: before },
      });
      try {
        const created = await request(`${server.url}/api/log/paddock_move`, {
          method: 'POST',
          token,
          json: {
            data: {
              type: 'log--paddock_move',
              attributes: { name: 'East', days: 3, gates: ['north', 'south'], move_method: 'mob' },
            },
          },
        });
        assert.equal(created.status, 201, created.text);
        id = created.body.data.id;
        const patched = await request(`${server.url}/api/log/paddock_move/${id}`, {
          method: 'PATCH',
          token,
          json: { data: { type: 'log--paddock_move', id, attributes: { days: 4 } } },
        });
        assert.equal(patched.status, 200, patched.text);
      } finally {
        await server.close();
      }
    }

    // The same site folder, its bundle's YAML changed (a copy: loaded output is cached by folder).
    const renamed = join(p.root, 'site-after');
    cpSync(before, renamed, { recursive: true });
    p.write('site-after/definitions/log/paddock_move.yaml', AFTER);
    const result = await generate({ root: p.root, siteDir: renamed });
    assert.equal(
      result.siteMigrationAdded,
      'site-after/generated/migrations/0002_create_log__gates_opened_and_more.json',
    );
    assert.equal((await generate({ root: p.root, siteDir: renamed })).siteMigrationAdded, null, 'emitted once');

    const config = loadConfig({ ...database.env, TILTH_SITE_DIR: renamed });
    const db = openDatabase(config);
    const notes = new Map<string, string[]>();
    try {
      const applied = await migrateLatest(db.knex, (await loadGenerated(generatedDir, renamed)).migrations, notes);
      assert.deepEqual(applied, ['site/0002_create_log__gates_opened_and_more']);
    } finally {
      await db.close();
    }
    assert.deepEqual(notes.get('site/0002_create_log__gates_opened_and_more'), [
      'log--paddock_move: field "days" renamed to "grazing_days" (integer → decimal) in 1 record(s) and 2 revision(s)',
      'log--paddock_move: field "gates" renamed to "gates_opened" in 1 record(s) and 2 revision(s)',
      'log--paddock_move move_method: "mob" → "mob_grazing" in 1 record(s) and 2 revision(s)',
    ]);

    const { server, token } = await startTestServerAsAdmin({
      generatedDir,
      database,
      env: { TILTH_SITE_DIR: renamed },
      migrate: false,
    });
    try {
      const read = await request(`${server.url}/api/log/paddock_move/${id}`, { token });
      const { attributes, relationships } = read.body.data;
      assert.deepEqual(
        [attributes.grazing_days, attributes.gates_opened, attributes.move_method, attributes.days],
        ['4', ['north', 'south'], 'mob_grazing', undefined],
      );
      const first = await request(
        `${server.url}/api/log/paddock_move/${id}?resourceVersion=id:${attributes.drupal_internal__revision_id - 1}`,
        { token },
      );
      assert.deepEqual(
        [first.body.data.attributes.grazing_days, first.body.data.attributes.gates_opened],
        ['3', ['north', 'south']],
        'the first revision, under the new names',
      );
      const patched = await request(`${server.url}/api/log/paddock_move/${id}`, {
        method: 'PATCH',
        token,
        json: { data: { type: 'log--paddock_move', id, attributes, relationships } },
      });
      assert.equal(patched.status, 200, patched.text);
    } finally {
      await server.close();
    }
    assert.deepEqual(readdirSync(join(renamed, 'generated/migrations')), [
      '0001_create_log__gates_and_more.json',
      '0002_create_log__gates_opened_and_more.json',
    ]);

    // Shipped as an optional module (the README's last step): the same storage, so no migration.
    p.write(
      'site-after/definitions/modules/moves/module.yaml',
      'module: moves\nlabel: Paddock moves\ndescription: Paddock move logs.\n',
    );
    mkdirSync(join(renamed, 'definitions/modules/moves/log'));
    renameSync(
      join(renamed, 'definitions/log/paddock_move.yaml'),
      join(renamed, 'definitions/modules/moves/log/paddock_move.yaml'),
    );
    assert.equal((await generate({ root: p.root, siteDir: renamed })).siteMigrationAdded, null);
    const site = JSON.parse(readFileSync(join(renamed, 'generated/model.json'), 'utf8'));
    assert.deepEqual([site.bundles[0].module, site.modules[0].module], ['moves', 'moves']);
  } finally {
    await database.drop();
  }
});
