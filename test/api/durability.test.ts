// What an acknowledged write survives on SQLite. By default (TILTH_SQLITE_SYNCHRONOUS=FULL) the
// write-ahead log is synced to disk after every commit and before the answer, from a thread of
// its own (storage/wal-sync.ts), so a power cut cannot take back a 2xx and reads go on while the
// disk works. NORMAL is a documented opt-in that leaves syncing to SQLite's checkpoints.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, symlinkSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startTestServerAsAdmin, ADMIN, type TestServer } from '../support/server.ts';
import { passwordToken, request } from '../support/http.ts';
import { loadConfig } from '../../runtime/config.ts';
import { WalSync, WalSyncFailed } from '../../runtime/storage/wal-sync.ts';

const sqliteOnly = { skip: process.env.DATABASE_URL ? 'SQLite setting' : false };

/** The log syncs so far, as /metrics shows them to an operator; undefined when there are none. */
async function syncs(server: TestServer): Promise<number | undefined> {
  const res = await request(`${server.url}/metrics`, { headers: { Accept: 'text/plain' } });
  assert.equal(res.status, 200, res.text);
  const line = /^tilth_sqlite_log_syncs_total (\d+)$/m.exec(res.text);
  return line ? Number(line[1]) : undefined;
}

const newLog = (name: string) => ({ data: { type: 'log--activity', attributes: { name } } });

test('every acknowledged write waits for a sync of the log that began after it committed; reads do not sync', sqliteOnly, async () => {
  const { server, token } = await startTestServerAsAdmin({ env: { TILTH_METRICS: 'public' } });
  try {
    let before = (await syncs(server))!;
    assert.equal(typeof before, 'number', 'the metric is there by default');
    for (let i = 0; i < 3; i++) {
      const created = await request(`${server.url}/api/log/activity`, { method: 'POST', token, json: newLog(`Synced ${i}`) });
      assert.equal(created.status, 201, created.text);
      const after = (await syncs(server))!;
      assert.ok(after >= before + 1, `a POST answered with ${after - before} syncs since the last one`);
      before = after;
    }
    // A token grant writes outside a group-commit batch (its own transaction): synced too.
    await passwordToken(server.url, ADMIN.name, ADMIN.password);
    const afterGrant = (await syncs(server))!;
    assert.ok(afterGrant >= before + 1, 'the grant waited for a sync');
    for (let i = 0; i < 3; i++) assert.equal((await request(`${server.url}/api/log/activity`, { token })).status, 200);
    assert.equal(await syncs(server), afterGrant, 'reads made no sync');
  } finally {
    await server.close();
  }
});

test('when the disk refuses the log, the write is answered 500 with a reason, later writes too, and reads go on', sqliteOnly, async () => {
  const { server, token } = await startTestServerAsAdmin({ env: { TILTH_METRICS: 'public' } });
  try {
    const ok = await request(`${server.url}/api/log/activity`, { method: 'POST', token, json: newLog('Before the fault') });
    assert.equal(ok.status, 201, ok.text);
    // The log's path now names a device that cannot be synced (fdatasync fails with EINVAL), as
    // a failing disk fails it with EIO.
    const wal = join(server.config.dataDir, 'tilth.sqlite-wal');
    unlinkSync(wal);
    symlinkSync('/dev/null', wal);
    for (const name of ['During the fault', 'After the fault']) {
      const refused = await request(`${server.url}/api/log/activity`, { method: 'POST', token, json: newLog(name) });
      assert.equal(refused.status, 500, refused.text);
      assert.match(refused.body.errors[0].detail, /could not make this write safe on its disk.*restarts Tilth/);
    }
    const read = await request(`${server.url}/api/log/activity/${ok.body.data.id}`, { token });
    assert.equal(read.status, 200, read.text);
  } finally {
    await server.close();
  }
});

test('TILTH_SQLITE_SYNCHRONOUS=NORMAL makes no syncs of its own, and a bad value names the setting', sqliteOnly, async () => {
  const { server, token } = await startTestServerAsAdmin({ env: { TILTH_METRICS: 'public', TILTH_SQLITE_SYNCHRONOUS: 'normal' } });
  try {
    assert.equal((await request(`${server.url}/api/log/activity`, { method: 'POST', token, json: newLog('Unsynced') })).status, 201);
    assert.equal(await syncs(server), undefined);
  } finally {
    await server.close();
  }
  assert.throws(() => loadConfig({ TILTH_SQLITE_SYNCHRONOUS: 'OFF' }), /TILTH_SQLITE_SYNCHRONOUS/);
});

test('syncs asked for while one runs share the next one; after a failed sync every later one fails', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'tilth-wal-sync-'));
  const file = join(dir, 'db.sqlite');
  writeFileSync(`${file}-wal`, 'frames');
  const wal = new WalSync(file, dir);
  try {
    await Promise.all(Array.from({ length: 10 }, () => wal.sync()));
    assert.equal(wal.count, 2, 'the first call syncs; the nine asked while it ran share one more');
    await wal.sync();
    assert.equal(wal.count, 3, 'a call after the others settled waits for a sync of its own');
    unlinkSync(`${file}-wal`);
    symlinkSync('/dev/null', `${file}-wal`);
    await assert.rejects(wal.sync(), WalSyncFailed);
    unlinkSync(`${file}-wal`);
    writeFileSync(`${file}-wal`, 'frames');
    await assert.rejects(wal.sync(), WalSyncFailed, 'a disk that failed once is not trusted again');
  } finally {
    wal.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
