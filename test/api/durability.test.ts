// What an acknowledged write survives on SQLite. By default (TILTH_SQLITE_SYNCHRONOUS=FULL) the
// write-ahead log is synced to disk after every commit and before the answer, from a thread of
// its own (storage/wal-sync.ts), so a power cut cannot take back a 2xx and reads go on while the
// disk works. NORMAL is a documented opt-in that leaves syncing to SQLite's checkpoints.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import Database from 'better-sqlite3';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startTestServerAsAdmin, ADMIN, type TestServer } from '../support/server.ts';
import { passwordToken, request } from '../support/http.ts';
import { loadConfig } from '../../runtime/config.ts';
import { openDatabase, walSyncStats } from '../../runtime/storage/database.ts';
import { WalSync, WalSyncFailed } from '../../runtime/storage/wal-sync.ts';
import { execute, returningRows } from '../../runtime/storage/sql.ts';
import { write } from '../../runtime/storage/transactions.ts';

const sqliteOnly = { skip: process.env.DATABASE_URL ? 'SQLite setting' : false };

/** The log syncs so far, as /metrics shows them to an operator; undefined when there are none. */
async function syncs(server: TestServer): Promise<number | undefined> {
  const res = await request(`${server.url}/metrics`, { headers: { Accept: 'text/plain' } });
  assert.equal(res.status, 200, res.text);
  const line = /^tilth_sqlite_log_syncs_total (\d+)$/m.exec(res.text);
  return line ? Number(line[1]) : undefined;
}

const newLog = (name: string) => ({ data: { type: 'log--activity', attributes: { name } } });

/** Make the log's path name a device that cannot be synced (fdatasync fails with EINVAL), as a failing disk fails it with EIO. */
function breakLog(wal: string): void {
  unlinkSync(wal);
  symlinkSync('/dev/null', wal);
}

/** The names of the activity logs a read finds. */
async function logNames(server: TestServer, token: string): Promise<string[]> {
  const res = await request(`${server.url}/api/log/activity?page[limit]=50`, { token });
  assert.equal(res.status, 200, res.text);
  return res.body.data.map((d: { attributes: { name: string } }) => d.attributes.name);
}

test('every acknowledged write waits for a sync of the log; reads do not sync', sqliteOnly, async () => {
  const { server, token } = await startTestServerAsAdmin({ env: { TILTH_METRICS: 'public' } });
  try {
    let before = (await syncs(server))!;
    assert.equal(typeof before, 'number', 'the metric is there by default');
    for (let i = 0; i < 3; i++) {
      const created = await request(`${server.url}/api/log/activity`, {
        method: 'POST',
        token,
        json: newLog(`Synced ${i}`),
      });
      assert.equal(created.status, 201, created.text);
      const after = (await syncs(server))!;
      assert.ok(after >= before + 1, `a POST answered with ${after - before} syncs since the last one`);
      before = after;
    }
    // A token grant's write is synced too.
    await passwordToken(server.url, ADMIN.name, ADMIN.password);
    const afterGrant = (await syncs(server))!;
    assert.ok(afterGrant >= before + 1, 'the grant waited for a sync');
    for (let i = 0; i < 3; i++) assert.equal((await request(`${server.url}/api/log/activity`, { token })).status, 200);
    assert.equal(await syncs(server), afterGrant, 'reads made no sync');
  } finally {
    await server.close();
  }
});

test(
  'when the disk refuses the log, the write is answered 500 with a reason, later writes are refused before they begin, and reads go on',
  sqliteOnly,
  async () => {
    const { server, token } = await startTestServerAsAdmin({ env: { TILTH_METRICS: 'public' } });
    try {
      const ok = await request(`${server.url}/api/log/activity`, {
        method: 'POST',
        token,
        json: newLog('Before the fault'),
      });
      assert.equal(ok.status, 201, ok.text);
      breakLog(join(server.config.dataDir, 'tilth.sqlite-wal'));
      for (const name of ['During the fault', 'After the fault']) {
        const refused = await request(`${server.url}/api/log/activity`, { method: 'POST', token, json: newLog(name) });
        assert.equal(refused.status, 500, refused.text);
        assert.match(refused.body.errors[0].detail, /could not make this write safe on its disk.*restarts Tilth/);
      }
      const names = await logNames(server, token);
      assert.ok(names.includes('Before the fault'), 'reads go on');
      // The first was committed before its sync failed; the second never ran.
      assert.ok(!names.includes('After the fault'), 'a write after the fault left no trace');
    } finally {
      await server.close();
    }
  },
);

test('a database file that is a symlink has its real log synced (beside the real file)', sqliteOnly, async () => {
  const root = mkdtempSync(join(tmpdir(), 'tilth-linked-'));
  const [dataDir, disk] = [join(root, 'data'), join(root, 'disk')];
  mkdirSync(dataDir);
  mkdirSync(disk);
  symlinkSync(join(disk, 'tilth.sqlite'), join(dataDir, 'tilth.sqlite'));
  const { server, token } = await startTestServerAsAdmin({
    database: { env: { TILTH_DATA_DIR: dataDir }, drop: async () => rmSync(root, { recursive: true, force: true }) },
  });
  try {
    assert.equal(
      (await request(`${server.url}/api/log/activity`, { method: 'POST', token, json: newLog('Linked') })).status,
      201,
    );
    // The log SQLite writes is the one beside the real file; a sync of anything else would not
    // notice that it cannot be synced.
    breakLog(join(disk, 'tilth.sqlite-wal'));
    const refused = await request(`${server.url}/api/log/activity`, {
      method: 'POST',
      token,
      json: newLog('Unsynced'),
    });
    assert.equal(refused.status, 500, refused.text);
  } finally {
    await server.close();
  }
});

test(
  "writes outside a group-commit batch (a statement on its own, a transaction of Knex's own) wait for the sync and are refused after a failed one",
  sqliteOnly,
  async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tilth-autocommit-'));
    const db = openDatabase({ databaseUrl: null, dataDir: dir });
    const { knex } = db;
    try {
      await knex.raw('CREATE TABLE t (x INTEGER)');
      const before = walSyncStats(knex)!.count;
      await knex('t').insert({ x: 1 });
      assert.equal(walSyncStats(knex)!.count, before + 1, 'a statement on its own waited for a sync');
      // knex.transaction is Knex's own, not a batch's (storage/transactions.ts).
      await knex.transaction(async (trx) => trx('t').insert({ x: 2 }));
      assert.equal(walSyncStats(knex)!.count, before + 2, 'a transaction of its own waited for a sync');
      assert.equal((await knex('t').select('x')).length, 2); // the read connection, open before the fault
      breakLog(join(dir, 'tilth.sqlite-wal'));
      await assert.rejects(knex('t').insert({ x: 3 }), WalSyncFailed);
      await assert.rejects(knex('t').insert({ x: 4 }), WalSyncFailed);
      await assert.rejects(
        knex.transaction(async (trx) => trx('t').insert({ x: 5 })),
        WalSyncFailed,
      );
      // And a write through the database's own door, which would join a group commit's batch.
      await assert.rejects(
        write(knex, async (trx) => trx('t').insert({ x: 5 })),
        WalSyncFailed,
      );
      // Statements that a transaction runs on its connection directly (storage/sql.ts), in a
      // transaction of Knex's own: its BEGIN reads nothing and writes nothing, so it is not refused.
      await assert.rejects(
        knex.transaction(async (trx) => execute(trx, 'INSERT INTO t (x) VALUES (?)', [6])),
        WalSyncFailed,
      );
      await assert.rejects(
        knex.transaction(async (trx) => returningRows(trx, 'INSERT INTO t (x) VALUES (?) RETURNING x', [7])),
        WalSyncFailed,
      );
      const xs = (await knex('t').select('x').orderBy('x')).map((r: { x: number }) => r.x);
      assert.deepEqual(xs, [1, 2, 3], 'the write whose sync failed was committed; none after it ran');
    } finally {
      await db.close();
      rmSync(dir, { recursive: true, force: true });
    }
  },
);

test(
  'checkpoints run beside the server, and a stopped server leaves its data in the database file alone',
  sqliteOnly,
  async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'tilth-checkpoints-'));
    const file = join(dataDir, 'tilth.sqlite');
    const { server, token } = await startTestServerAsAdmin({
      env: { TILTH_METRICS: 'public' },
      database: { env: { TILTH_DATA_DIR: dataDir }, drop: async () => {} },
    });
    let written = 0;
    try {
      /** Complete checkpoints so far, and how often the log was started afresh (its header's count, bytes 12–15). */
      const counts = async () => ({
        checkpoints: Number(
          /^tilth_sqlite_checkpoints_total (\d+)$/m.exec(
            (await request(`${server.url}/metrics`, { headers: { Accept: 'text/plain' } })).text,
          )?.[1],
        ),
        restarts: readFileSync(`${file}-wal`).readUInt32BE(12),
      });
      const before = await counts();
      // Eight clients writing for 600 ms: checkpoints fall due (every 100 ms at most) while
      // batches keep coming.
      const until = Date.now() + 600;
      const created = await Promise.all(
        Array.from({ length: 8 }, async (_, c) => {
          let n = 0;
          for (; Date.now() < until; n++) {
            const res = await request(`${server.url}/api/log/activity`, {
              method: 'POST',
              token,
              json: newLog(`Checkpointed ${c}-${n}`),
            });
            assert.equal(res.status, 201, res.text);
          }
          return n;
        }),
      );
      written = created.reduce((a, b) => a + b, 0);
      const after = await counts();
      const checkpoints = after.checkpoints - before.checkpoints;
      assert.ok(checkpoints >= 1, 'the sync thread checkpointed');
      // SQLite starts the log afresh only if it was wholly copied when the writer begins: each
      // checkpoint but perhaps the last must be followed by a restart, or the log grows without end
      // (80 MB in ten seconds, when batches ran on beside the checkpoints).
      assert.ok(
        after.restarts - before.restarts >= checkpoints - 1,
        `${after.restarts - before.restarts} restarts after ${checkpoints} checkpoints`,
      );
      const writer = (await server.ctx.db.knex.raw('PRAGMA wal_autocheckpoint')) as Array<{
        wal_autocheckpoint: number;
      }>;
      assert.ok(writer[0]!.wal_autocheckpoint > 1000, "the writer's own checkpoints are only a safety net");
    } finally {
      await server.close();
    }
    // The sync thread's connection closed before the server's last one, which then moved the whole
    // log into the database file: a copy of that one file (a plain backup) holds every record.
    assert.ok(!existsSync(`${file}-wal`), 'no log left beside the database');
    const copy = new Database(file, { readonly: true });
    try {
      assert.equal(copy.prepare(`SELECT count(*) FROM log WHERE name LIKE 'Checkpointed %'`).pluck().get(), written);
    } finally {
      copy.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  },
);

test(
  'TILTH_SQLITE_SYNCHRONOUS=NORMAL makes no syncs of its own, and a bad value names the setting',
  sqliteOnly,
  async () => {
    const { server, token } = await startTestServerAsAdmin({
      env: { TILTH_METRICS: 'public', TILTH_SQLITE_SYNCHRONOUS: 'normal' },
    });
    try {
      assert.equal(
        (await request(`${server.url}/api/log/activity`, { method: 'POST', token, json: newLog('Unsynced') })).status,
        201,
      );
      assert.equal(await syncs(server), undefined);
    } finally {
      await server.close();
    }
    assert.throws(() => loadConfig({ TILTH_SQLITE_SYNCHRONOUS: 'OFF' }), /TILTH_SQLITE_SYNCHRONOUS/);
  },
);

test('syncs asked for while one runs share the next one; after a failed sync every later one fails', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'tilth-wal-sync-'));
  const file = join(dir, 'db.sqlite');
  // A database in WAL mode, kept open as the server keeps it, so that its log stays.
  const owner = new Database(file);
  owner.pragma('journal_mode = WAL');
  owner.exec('CREATE TABLE t (x)');
  const wal = new WalSync(file);
  try {
    await Promise.all(Array.from({ length: 10 }, () => wal.sync()));
    assert.equal(wal.count, 2, 'the first call syncs; the nine asked while it ran share one more');
    await wal.sync();
    assert.equal(wal.count, 3, 'a call after the others settled waits for a sync of its own');
    breakLog(`${file}-wal`);
    await assert.rejects(wal.sync(), WalSyncFailed);
    unlinkSync(`${file}-wal`);
    writeFileSync(`${file}-wal`, 'frames');
    await assert.rejects(wal.sync(), WalSyncFailed, 'a disk that failed once is not trusted again');
  } finally {
    await wal.close();
    owner.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
