// Adding a field and a bundle in YAML takes an existing database forward with its records intact;
// applied migrations are never rewritten; a server refuses a database ahead of or behind its code
// (issue 2, items 6 and "done when"). Runs on SQLite, and on PostgreSQL when DATABASE_URL is set.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { generate } from '../../generator/index.ts';
import { scratchProject, type ScratchProject } from '../support/project.ts';
import { startTestServer, createTestDatabase, ADMIN } from '../support/server.ts';
import { request, passwordToken } from '../support/http.ts';
import { MigrationMismatchError, migrateLatest, type GeneratedMigration } from '../../runtime/storage/migrations.ts';
import { openDatabase } from '../../runtime/storage/database.ts';

const projects: ScratchProject[] = [];
after(() => projects.forEach((p) => p.remove()));

test('a new field and a new bundle migrate an existing database forward, keeping its records', async () => {
  const before = scratchProject({ withGenerated: true });
  projects.push(before);
  const database = await createTestDatabase();
  try {
    // 1. A farm on the current definitions, with records in it.
    const first = await startTestServer({ database, generatedDir: join(before.root, 'generated') });
    let token = await passwordToken(first.url, ADMIN.name, ADMIN.password);
    const land = await request(`${first.url}/api/asset/land`, {
      method: 'POST',
      token,
      json: { data: { type: 'asset--land', attributes: { name: 'North field', land_type: 'field' } } },
    });
    assert.equal(land.status, 201, land.text);
    const harvest = await request(`${first.url}/api/log/harvest`, {
      method: 'POST',
      token,
      json: {
        data: {
          type: 'log--harvest',
          attributes: { name: 'First cut', lot_number: 'L-1', timestamp: 1700000000, status: 'done' },
          relationships: { asset: { data: [{ type: 'asset--land', id: land.body.data.id }] } },
        },
      },
    });
    assert.equal(harvest.status, 201, harvest.text);
    await first.close();

    // 2. A module author adds a field to a bundle and a new bundle, and runs the generator.
    const after_ = scratchProject({ withGenerated: true, from: before.root });
    projects.push(after_);
    after_.write(
      'definitions/log/harvest.yaml',
      `${after_.read('definitions/log/harvest.yaml').trimEnd()}\n  grade:\n    type: list_string\n    label: Grade\n    allowed_values:\n      - { value: a, label: Grade A }\n      - { value: b, label: Grade B }\n`,
    );
    after_.write(
      'definitions/log/pruning.yaml',
      'entity_type: log\nbundle: pruning\nlabel: Pruning\ndescription: Pruning logs record trees and vines cut back.\nfields:\n  branches:\n    type: integer\n    label: Branches removed\n    min: 0\n',
    );
    const result = await generate({ root: after_.root });
    // The next number after the committed migrations.
    assert.match(
      result.migrationAdded ?? '',
      new RegExp(
        `^${String(readdirSync(join(before.root, 'generated/migrations')).filter((f) => /^\d{4}_/.test(f)).length + 1).padStart(4, '0')}_`,
      ),
    );
    assert.equal(
      after_.read('generated/migrations/0001_initial.ts'),
      before.read('generated/migrations/0001_initial.ts'),
      'the applied migration is untouched',
    );

    // 3. The new code refuses the old database until it is migrated, and names the command.
    await assert.rejects(
      startTestServer({ database, generatedDir: join(after_.root, 'generated'), migrate: false }),
      (error: unknown) => {
        assert.ok(error instanceof MigrationMismatchError);
        assert.match(error.message, /behind generated\/.*tilth migrate/);
        return true;
      },
    );

    // 4. Migrated, the farm keeps its records and gains the field and the bundle.
    const second = await startTestServer({ database, generatedDir: join(after_.root, 'generated'), migrate: true });
    try {
      token = await passwordToken(second.url, ADMIN.name, ADMIN.password);
      const kept = await request(`${second.url}/api/log/harvest/${harvest.body.data.id}`, { token });
      assert.equal(kept.status, 200);
      assert.equal(kept.body.data.attributes.name, 'First cut');
      assert.equal(kept.body.data.attributes.lot_number, 'L-1');
      assert.equal(kept.body.data.attributes.grade, null);
      assert.equal(kept.body.data.relationships.asset.data[0].id, land.body.data.id);
      const graded = await request(`${second.url}/api/log/harvest/${harvest.body.data.id}`, {
        method: 'PATCH',
        token,
        json: { data: { type: 'log--harvest', id: harvest.body.data.id, attributes: { grade: 'a' } } },
      });
      assert.equal(graded.status, 200, graded.text);
      assert.equal(graded.body.data.attributes.grade, 'a');
      const root = await request(`${second.url}/api`);
      assert.equal(root.body.links['log--pruning'].href, `${second.url}/api/log/pruning`);
      const schema = await request(`${second.url}/api/log/pruning/resource/schema`);
      assert.equal(schema.body.definitions.attributes.properties.branches.type, 'integer');
      const pruning = await request(`${second.url}/api/log/pruning`, {
        method: 'POST',
        token,
        json: { data: { type: 'log--pruning', attributes: { branches: 12 } } },
      });
      assert.equal(pruning.status, 201, pruning.text);
      assert.equal(
        pruning.body.data.attributes.name,
        `Pruning log ${pruning.body.data.attributes.drupal_internal__id}`,
      );
      const columns = await second.ctx.db.knex('log').columnInfo();
      assert.ok('grade' in columns && 'branches' in columns, 'the log table has the new columns');
    } finally {
      await second.close();
    }

    // 5. The old code refuses the newer database.
    await assert.rejects(
      startTestServer({ database, generatedDir: join(before.root, 'generated'), migrate: false }),
      /newer Tilth/,
    );
  } finally {
    await database.drop();
  }
});

test(
  'on SQLite, migrations sort on disk (a CREATE INDEX over a big farm is not held in RAM) and writes keep their journals in memory afterwards',
  { skip: process.env.DATABASE_URL ? 'SQLite only' : false },
  async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'tilth-temp-store-'));
    const db = openDatabase({ databaseUrl: null, dataDir });
    try {
      let during: unknown;
      const probe: GeneratedMigration = {
        name: '9999_probe',
        up: async (knex) => {
          during = (await knex.raw('PRAGMA temp_store'))[0].temp_store;
        },
        down: async () => {},
      };
      await migrateLatest(db.knex, [probe]);
      assert.equal(during, 1, 'temp_store is FILE while migrations run');
      assert.equal((await db.knex.raw('PRAGMA temp_store'))[0].temp_store, 2, 'temp_store is MEMORY again for writes');
    } finally {
      await db.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  },
);
