// `tilth user delete` beside a running server on the same database (issue: deletions made outside
// HTTP skip the PostgreSQL deletion locks). The command deletes the user in a transaction of its
// own while the server saves the logs assigned to that user; as for an API DELETE
// (test/api/delete-locks.test.ts), every answer must be one a client can act on (never a deadlock's
// 409 or a 500), the deletion must succeed, and the logs must lose the user. The command itself,
// run against the server's database, refuses a user records name (issue 41: as the API's DELETE
// refuses it), unless told to clear the references or give them to another user; the change feed
// lists the records changed. On SQLite (one writer) the same must hold.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServerAsAdmin, type TestServer } from '../support/server.ts';
import { Api, ref } from '../support/fixtures.ts';
import type { ApiResponse } from '../support/http.ts';
import { tilthAsync } from '../support/tilth-command.ts';
import type { Knex } from 'knex';
import { openDatabase } from '../../runtime/storage/database.ts';
import { RecordStore } from '../../runtime/storage/records.ts';
import { deleteAccount } from '../../runtime/cli/users.ts';

let server: TestServer;
let api: Api;

before(async () => {
  const started = await startTestServerAsAdmin();
  server = started.server;
  api = new Api(server.url, started.token);
});
after(() => server.close());

const NOW = Math.floor(Date.now() / 1000);
/** The command against the server's database, as an operator runs it beside the server. */
const deleteUser = (name: string, ...options: string[]) =>
  tilthAsync(['user', 'delete', '--name', name, ...options], {
    TILTH_DATA_DIR: server.config.dataDir,
    DATABASE_URL: server.config.databaseUrl ?? '',
  }).done;

/** Every change-feed entry after `since`, read until `done` holds (PostgreSQL's feed trails running transactions), and the cursor after them. */
async function feedAfter(
  since: string,
  done: (entries: any[]) => boolean = () => true,
): Promise<{ entries: any[]; cursor: string }> {
  const entries: any[] = [];
  let cursor = since;
  for (let i = 0; i < 50; i++) {
    let next: string | undefined = `/api/changes?since=${encodeURIComponent(cursor)}`;
    while (next) {
      const res: ApiResponse = await api.get(next);
      assert.equal(res.status, 200, res.text.slice(0, 500));
      entries.push(...res.body.data);
      cursor = res.body.meta.cursor;
      next = res.body.links.next?.href;
    }
    if (done(entries)) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  return { entries, cursor };
}

/** The newest cursor: the feed read to its end. */
const newestCursor = async () =>
  (await feedAfter((await api.get('/api/changes?since=0&page[limit]=1')).body.meta.cursor)).cursor;

/** Until `count` connections of this test's database wait for a lock (a few seconds at most). */
async function waiting(knex: Knex, count: number): Promise<void> {
  for (let i = 0; i < 200; i++) {
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

for (const mode of ['clear', 'reassign'] as const)
  test(
    `tilth user delete (${mode === 'clear' ? '--clear-references' : '--reassign-to'}) while a log assigned to the user is saved: both succeed, the log ends assigned to the other user only`,
    {
      skip:
        !process.env.DATABASE_URL &&
        'row locks: PostgreSQL only (SQLite has one writer; the command beside a server is tested below)',
    },
    async (t) => {
      // The command's deletion, on a connection of its own as the command opens one; in this process,
      // so that it can be started at the moment wanted (the command takes seconds to start).
      const beside = openDatabase({ databaseUrl: server.config.databaseUrl, dataDir: server.config.dataDir });
      t.after(() => beside.close());
      const store = new RecordStore(server.ctx.registry);
      const user = await api.create('user--user', { name: `worker-${mode}`, mail: `worker-${mode}@example.org` });
      const created = await api.post('/api/log/activity', {
        data: {
          type: 'log--activity',
          attributes: { name: 'Check', timestamp: NOW - 60, status: 'pending' },
          relationships: { owner: { data: [ref(user)] } },
        },
      });
      assert.equal(created.status, 201, created.text);
      const log = created.body.data;
      const admin = (await api.all('/api/user/user')).find((u) => u.attributes.name === 'admin');
      const references =
        mode === 'clear' ? ('clear' as const) : { reassignTo: admin.attributes.drupal_internal__uid as number };
      // The save is held where the race is: it has checked If-Match (and so holds the log's
      // change-feed row) and is about to replace the log's owner rows, which a third connection holds.
      const hold = await beside.knex.transaction();
      await hold.raw('SELECT entity_id FROM log__owner WHERE entity_id = ? FOR UPDATE', [
        log.attributes.drupal_internal__id,
      ]);
      const save = api.patch(
        `/api/log/activity/${log.id}`,
        { data: { type: 'log--activity', id: log.id, relationships: { owner: { data: [ref(user), ref(admin)] } } } },
        { 'If-Match': created.headers.get('ETag')! },
      );
      await waiting(beside.knex, 1);
      const deletion = deleteAccount(beside.knex, store, user.attributes.drupal_internal__uid, references).then(
        () => 'deleted',
        (error: Error) => `failed: ${error.message}`,
      );
      await waiting(beside.knex, 2);
      await hold.rollback();
      // Unlocked, the deletion removed the owner row the save was about to replace, then waited
      // for the log's change-feed row the save held: a deadlock, which broke off one of the two.
      const [saved, deleted] = await Promise.all([save, deletion]);
      assert.equal(deleted, 'deleted');
      assert.equal(saved.status, 200, saved.text);
      assert.equal((await api.get(`/api/user/user/${user.id}`)).status, 404);
      const now = (await api.get(`/api/log/activity/${log.id}`)).body.data;
      assert.deepEqual(
        now.relationships.owner.data.map((o: any) => o.id),
        [admin.id],
        'the log is assigned to the other user only',
      );
    },
  );

test('tilth user delete --clear-references clears the references to the user, which the change feed lists with the tombstone', async () => {
  const user = await api.create('user--user', { name: 'dana', mail: 'dana@example.org' });
  const log = await api.create(
    'log--activity',
    { name: 'Fence check', timestamp: NOW - 60, status: 'done' },
    { owner: { data: [ref(user)] }, uid: { data: ref(user) } },
  );
  const asset = await api.create('asset--equipment', { name: 'Quad' }, { owner: { data: [ref(user)] } });
  const since = await newestCursor();
  const deleted = await deleteUser('dana', '--clear-references');
  assert.equal(deleted.status, 0, deleted.stderr);
  assert.match(deleted.stdout, /Deleted "dana"/);
  assert.equal((await api.get(`/api/user/user/${user.id}`)).status, 404);
  const now = (await api.get(`/api/log/activity/${log.id}`)).body.data;
  assert.deepEqual(now.relationships.owner.data, []);
  assert.equal(now.relationships.uid.data, null);
  assert.deepEqual((await api.get(`/api/asset/equipment/${asset.id}`)).body.data.relationships.owner.data, []);
  const { entries } = await feedAfter(since, (e) => e.some((x) => x.id === user.id));
  const ids = entries.map((e) => e.id);
  for (const id of [log.id, asset.id])
    assert.ok(
      ids.includes(id),
      `the feed lists ${id}, changed by the deletion:\n${JSON.stringify(entries.map((e) => [e.type, e.id, e.meta]))}`,
    );
  assert.ok(
    entries.some((e) => e.id === user.id && e.meta.deleted),
    'and the user as deleted',
  );
});

test('tilth user delete refuses a user records name, saying how to go on; nothing changes', async () => {
  const user = await api.create('user--user', { name: 'erin', mail: 'erin@example.org' });
  const log = await api.create(
    'log--activity',
    { name: 'Mend gate', timestamp: NOW - 60, status: 'done' },
    { owner: { data: [ref(user)] } },
  );
  const refused = await deleteUser('erin');
  assert.notEqual(refused.status, 0, refused.stdout);
  assert.match(refused.stderr, new RegExp(`user--user "erin" is referenced by 1 log\\(s\\) \\(owner\\): ${log.id}`));
  assert.match(refused.stderr, /--reassign-to NAME/);
  assert.match(refused.stderr, /--clear-references/);
  assert.equal((await api.get(`/api/user/user/${user.id}`)).status, 200, 'the user is kept');
  assert.deepEqual(
    (await api.get(`/api/log/activity/${log.id}`)).body.data.relationships.owner.data.map((o: any) => o.id),
    [user.id],
    'the log keeps its owner',
  );
  const both = await deleteUser('erin', '--reassign-to', 'admin', '--clear-references');
  assert.notEqual(both.status, 0);
  assert.match(both.stderr, /not both/);
});

test('tilth user delete --reassign-to gives the records that name the user to another one; the change feed lists them', async () => {
  const user = await api.create('user--user', { name: 'fran', mail: 'fran@example.org' });
  const heir = await api.create('user--user', { name: 'gil', mail: 'gil@example.org' });
  const log = await api.create(
    'log--activity',
    { name: 'Count sheep', timestamp: NOW - 60, status: 'done' },
    { owner: { data: [ref(user)] }, uid: { data: ref(user) } },
  );
  const shared = await api.create(
    'log--activity',
    { name: 'Shear sheep', timestamp: NOW - 60, status: 'done' },
    { owner: { data: [ref(heir), ref(user)] } },
  );
  const asset = await api.create('asset--equipment', { name: 'Shears' }, { owner: { data: [ref(user)] } });
  const since = await newestCursor();
  const deleted = await deleteUser('fran', '--reassign-to', 'gil');
  assert.equal(deleted.status, 0, deleted.stderr);
  assert.match(deleted.stdout, /Deleted "fran".*name "gil" instead/);
  assert.equal((await api.get(`/api/user/user/${user.id}`)).status, 404);
  const now = (await api.get(`/api/log/activity/${log.id}`)).body.data;
  assert.deepEqual(
    now.relationships.owner.data.map((o: any) => o.id),
    [heir.id],
    'the owner moves to the heir',
  );
  assert.equal(now.relationships.uid.data.id, heir.id, 'and so does the author');
  assert.deepEqual(
    (await api.get(`/api/log/activity/${shared.id}`)).body.data.relationships.owner.data.map((o: any) => o.id),
    [heir.id],
    'a log naming both names the heir once',
  );
  assert.deepEqual(
    (await api.get(`/api/asset/equipment/${asset.id}`)).body.data.relationships.owner.data.map((o: any) => o.id),
    [heir.id],
  );
  const { entries } = await feedAfter(since, (e) => e.some((x) => x.id === user.id));
  for (const id of [log.id, shared.id, asset.id])
    assert.ok(
      entries.some((e) => e.id === id),
      `the feed lists ${id}, changed by the deletion`,
    );
  assert.ok(
    entries.some((e) => e.id === user.id && e.meta.deleted),
    'and the user as deleted',
  );
  const unknown = await deleteUser('gil', '--reassign-to', 'nobody-here');
  assert.notEqual(unknown.status, 0);
  assert.equal((await api.get(`/api/user/user/${heir.id}`)).status, 200, 'an unknown heir deletes nothing');
});
