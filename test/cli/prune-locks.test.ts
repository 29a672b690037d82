// `tilth import farmos --prune` beside a server that serves the farm it writes to (issue: deletions
// made outside HTTP skip the PostgreSQL deletion locks). A quantity deleted at the source is pruned
// here while the server saves a log of this farm that names it; as for an API DELETE
// (test/api/delete-locks.test.ts), both must succeed, and the log must lose the quantity. (A log's
// quantity field is an entity_reference_revisions field, which does not keep its quantity, as in
// farmOS; a record an entity_reference names is kept by --prune: test/cli/import-farmos.test.ts.)
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Knex } from 'knex';
import { tilthAsync } from '../support/tilth-command.ts';
import { createTestDatabase, startTestServerAsAdmin, type TestServer } from '../support/server.ts';
import { Api, ref } from '../support/fixtures.ts';
import { openDatabase } from '../../runtime/storage/database.ts';

const postgres = Boolean(process.env.DATABASE_URL);
let source: TestServer;
let sourceApi: Api;
let sourceDir: string;
let target: TestServer;
let targetDb: Awaited<ReturnType<typeof createTestDatabase>>;
let api: Api;

before(async () => {
  if (!postgres) return;
  sourceDir = mkdtempSync(join(tmpdir(), 'tilth-source-'));
  // The source is on SQLite, the farm written to on PostgreSQL.
  const started = await startTestServerAsAdmin({
    database: {
      env: { TILTH_DATA_DIR: sourceDir, DATABASE_URL: '' },
      drop: async () => rmSync(sourceDir, { recursive: true, force: true }),
    },
  });
  source = started.server;
  sourceApi = new Api(source.url, started.token);
  targetDb = await createTestDatabase();
  const here = await startTestServerAsAdmin({ database: targetDb });
  target = here.server;
  api = new Api(target.url, here.token);
});
after(async () => {
  await target?.close();
  await targetDb?.drop();
  await source?.close();
  if (sourceDir) rmSync(sourceDir, { recursive: true, force: true });
});

const importArgs = (...extra: string[]) => [
  'import',
  'farmos',
  '--url',
  source.url,
  `--token=${sourceApi.token}`,
  '--no-verify',
  ...extra,
];

/** Until `count` connections of this test's database wait for a lock (`seconds` at most). */
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
  '--prune while a log naming a pruned quantity is saved: the import and the save succeed, the log loses the quantity',
  { skip: !postgres && 'row locks: PostgreSQL only (SQLite has one writer)' },
  async (t) => {
    const quantity = await sourceApi.create('quantity--standard', { measure: 'count', value: { decimal: '12' } });
    const first = await tilthAsync(importArgs(), targetDb.env).done;
    assert.equal(first.status, 0, first.stdout + first.stderr);
    // A log of this farm naming the imported quantity, which the source then deletes.
    const created = await api.post('/api/log/harvest', {
      data: {
        type: 'log--harvest',
        attributes: { name: 'Harvest', status: 'pending' },
        relationships: { quantity: { data: [ref(quantity)] } },
      },
    });
    assert.equal(created.status, 201, created.text);
    const log = created.body.data;
    assert.equal((await sourceApi.delete(`/api/quantity/standard/${quantity.id}`)).status, 204);
    const extra = await api.create('quantity--standard', { measure: 'count', value: { decimal: '3' } });

    const beside = openDatabase({ databaseUrl: target.config.databaseUrl, dataDir: target.config.dataDir });
    t.after(() => beside.close());
    // The save is held where the race is: it has checked If-Match (and so holds the log's
    // change-feed row) and is about to replace the log's quantity rows, which a third connection holds.
    const hold = await beside.knex.transaction();
    await hold.raw('SELECT entity_id FROM log__quantity WHERE entity_id = ? FOR UPDATE', [
      log.attributes.drupal_internal__id,
    ]);
    const save = api.patch(
      `/api/log/harvest/${log.id}`,
      {
        data: { type: 'log--harvest', id: log.id, relationships: { quantity: { data: [ref(quantity), ref(extra)] } } },
      },
      { 'If-Match': created.headers.get('ETag')! },
    );
    await waiting(beside.knex, 1, 10);
    const run = tilthAsync(importArgs('--prune'), targetDb.env).done;
    // The prune reaches the log (a command takes seconds to start).
    await waiting(beside.knex, 2, 60);
    await hold.rollback();
    // Unlocked, the prune removed the quantity row the save was about to replace, then waited for
    // the log's change-feed row the save held: a deadlock, which broke off one of the two.
    const [saved, pruned] = await Promise.all([save, run]);
    assert.equal(pruned.status, 0, pruned.stdout + pruned.stderr);
    assert.match(pruned.stdout, /1 pruned/);
    assert.equal(saved.status, 200, saved.text);
    assert.equal((await api.get(`/api/quantity/standard/${quantity.id}`)).status, 404);
    const now = (await api.get(`/api/log/harvest/${log.id}`)).body.data;
    assert.deepEqual(
      now.relationships.quantity.data.map((q: any) => q.id),
      [extra.id],
      'the log keeps only the quantity of this farm',
    );
  },
);
