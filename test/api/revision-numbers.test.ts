// Revision numbers (issue 40 §6; runtime/storage/revision-numbers.ts): on PostgreSQL a sequence per
// entity type, so that a save of a log never waits for another log's save to commit before it
// gets its number; on SQLite the counter row. Either way an upgraded database goes on after the
// largest number it gave, never giving one twice.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import knexFactory, { type Knex } from 'knex';
import { startTestServer, startTestServerAsAdmin, createTestDatabase, ADMIN } from '../support/server.ts';
import { passwordToken } from '../support/http.ts';
import { Api } from '../support/fixtures.ts';
import { loadGenerated } from '../../runtime/generated.ts';
import { allMigrations } from '../../runtime/storage/migrations.ts';

const postgres = Boolean(process.env.DATABASE_URL);

/** Until `count` connections of this database wait for a lock (`seconds` at most). */
async function waiting(knex: Knex, count: number, seconds: number): Promise<void> {
  for (const end = Date.now() + seconds * 1000; Date.now() < end;) {
    const [row] = (
      await knex.raw(
        "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'",
      )
    ).rows;
    if (row.n >= count) return;
    await new Promise((r) => setTimeout(r, 20));
  }
  assert.fail(`${count} connection(s) never waited for a lock`);
}

test(
  "a log is saved while another log's save is held up before its commit: saves of one type do not take turns for a revision number",
  { skip: !postgres && 'concurrent write transactions: PostgreSQL only (SQLite has one writer)' },
  async (t) => {
    const { server, token } = await startTestServerAsAdmin();
    const api = new Api(server.url, token);
    const held = await api.create('log--activity', { name: 'Held', timestamp: 1_700_000_000 });
    // Two connections: the hold's, and one to watch for waiting sessions.
    const beside = knexFactory({ client: 'pg', connection: server.config.databaseUrl!, pool: { min: 0, max: 2 } });
    // The held log's change-feed row, which its save writes last (storage/unit-of-work.ts), after
    // it has taken its revision number: the save waits there, its transaction open.
    const hold = await beside.transaction();
    let released = false;
    // One hook, in this order: the server's close waits for the held save, which waits for the hold.
    t.after(async () => {
      if (!released) await hold.rollback();
      await beside.destroy();
      await server.close();
    });
    await hold.raw("SELECT 1 FROM change_feed WHERE entity_type = 'log' AND entity_id = ? FOR UPDATE", [
      held.attributes.drupal_internal__id,
    ]);
    const renaming = api.patch(`/api/log/activity/${held.id}`, {
      data: { type: 'log--activity', id: held.id, attributes: { name: 'Held, renamed' } },
    });
    await waiting(beside, 1, 10);

    // Another log, saved meanwhile: answered while the first save still waits (with a counter row
    // per type it waited for that save's commit, which waits for the hold).
    const created = await Promise.race([
      api.post('/api/log/activity', {
        data: { type: 'log--activity', attributes: { name: 'Not held up', timestamp: 1_700_000_000 } },
      }),
      new Promise<null>((resolve) => setTimeout(() => resolve(null), 5000).unref()),
    ]);
    assert.ok(created, "the second log's save waited for the first one's");
    assert.equal(created.status, 201, created.text);

    released = true;
    await hold.rollback();
    const renamed = await renaming;
    assert.equal(renamed.status, 200, renamed.text);
    const numbers = [
      held.attributes.drupal_internal__revision_id,
      renamed.body.data.attributes.drupal_internal__revision_id,
      created.body.data.attributes.drupal_internal__revision_id,
    ];
    assert.equal(new Set(numbers).size, 3, `three revisions, three numbers: ${numbers.join(', ')}`);
    assert.ok(numbers[1] > numbers[0], 'the rename has a later number than the log it renamed');
    const history = await api.get(`/api/log/activity/${held.id}/revision-history`);
    assert.equal(history.status, 200, history.text);
    assert.deepEqual(
      history.body.data.map((r: any) => r.attributes.drupal_internal__revision_id),
      [numbers[1], numbers[0]],
      'the history lists the rename, then the first save',
    );
  },
);

test('an upgraded database goes on after the largest revision number it gave, even one whose record is gone', async () => {
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
  const logId = randomUUID();
  try {
    // The database as the code before the sequences left it: revision 5 of a log stored, and the
    // log counter at 7 (revisions 6 and 7 were of a log deleted since).
    const old = allMigrations(generated.migrations).filter((m) => m.name !== 'core/0015_revision_sequences');
    await knex.migrate.latest({
      migrationSource: {
        getMigrations: async () => old,
        getMigrationName: (m: (typeof old)[number]) => m.name,
        getMigration: async (m: (typeof old)[number]) => ({ up: m.up, down: m.down }),
      },
      tableName: 'knex_migrations',
    });
    const [l] = await knex('log')
      .insert({
        uuid: logId,
        bundle: 'activity',
        name: 'Old log',
        status: 'done',
        timestamp: 1700000000,
        revision_id: 5,
      })
      .returning('id');
    const id = Number(typeof l === 'object' ? l.id : l);
    await knex('entity_revision').insert({
      entity_type: 'log',
      entity_id: id,
      revision_id: 5,
      user_id: 1,
      created: 1700000000,
      message: null,
      data: JSON.stringify({ name: 'Old log' }),
    });
    await knex('entity_revision_counter').insert({ entity_type: 'log', last_id: 7 });
  } finally {
    await knex.destroy();
  }
  const upgraded = await startTestServer({ database, migrate: true });
  try {
    const api = new Api(upgraded.url, await passwordToken(upgraded.url, ADMIN.name, ADMIN.password));
    assert.equal((await api.get(`/api/log/activity/${logId}`)).body.data.attributes.drupal_internal__revision_id, 5);
    const created = await api.create('log--activity', { name: 'New log', timestamp: 1700000000 });
    assert.equal(created.attributes.drupal_internal__revision_id, 8);
    const renamed = await api.patch(`/api/log/activity/${logId}`, {
      data: { type: 'log--activity', id: logId, attributes: { name: 'Renamed' } },
    });
    assert.equal(renamed.status, 200, renamed.text);
    assert.equal(renamed.body.data.attributes.drupal_internal__revision_id, 9);
    // Each type counts on its own: the first asset is still revision 1.
    const asset = await api.create('asset--equipment', { name: 'Tractor' });
    assert.equal(asset.attributes.drupal_internal__revision_id, 1);
  } finally {
    await upgraded.close();
    await database.drop();
  }
});
