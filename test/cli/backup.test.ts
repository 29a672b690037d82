// Backup and restore (operations issue, item 2): a backup taken while the server writes, restored
// into an empty data directory or database, serves every record acknowledged before the backup
// began exactly as before, with its uploaded files; a restore never overwrites a live farm.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawnSync } from 'node:child_process';
import { createRequire, syncBuiltinESMExports } from 'node:module';
import Database from 'better-sqlite3';
import pg from 'pg';
import {
  existsSync,
  fstatSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  truncateSync,
  writeFileSync,
} from 'node:fs';
import * as tar from 'tar';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT } from '../support/project.ts';
import { createTestDatabase, ADMIN } from '../support/server.ts';
import { startChildServer } from '../support/child-server.ts';
import { request, passwordToken } from '../support/http.ts';

function tilth(args: string[], env: Record<string, string>) {
  return spawnSync(process.execPath, [join(ROOT, 'bin', 'tilth.js'), ...args], {
    encoding: 'utf8',
    env: { ...process.env, TILTH_LOG_LEVEL: 'silent', DATABASE_URL: '', ...env },
    timeout: 120_000,
  });
}

/**
 * A command run while this process goes on (the writers keep writing during the backup); a
 * synchronous run would stop them, and leave their keep-alive sockets idle long enough for the
 * server to close them under a slow backup.
 */
function tilthWhileRunning(
  args: string[],
  env: Record<string, string>,
): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [join(ROOT, 'bin', 'tilth.js'), ...args],
      {
        encoding: 'utf8',
        env: { ...process.env, TILTH_LOG_LEVEL: 'silent', DATABASE_URL: '', ...env },
        timeout: 120_000,
      },
      (error, stdout, stderr) => {
        resolve({ status: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr });
      },
    );
  });
}

/** A data directory with a one-row SQLite database and one uploaded file (`files/public/2026-11/yield.csv`). */
function smallDataDirectory(dir: string): string {
  const source = join(dir, 'source');
  mkdirSync(join(source, 'files', 'public', '2026-11'), { recursive: true });
  const db = new Database(join(source, 'tilth.sqlite'));
  // A farm's database as far as `tilth backup` asks (storage/database.ts openExistingDatabase): Tilth's migrations table.
  db.exec(
    'CREATE TABLE knex_migrations (id INTEGER PRIMARY KEY, name TEXT); CREATE TABLE t (x); INSERT INTO t VALUES (42)',
  );
  db.close();
  writeFileSync(join(source, 'files', 'public', '2026-11', 'yield.csv'), 'date,yield\n');
  return source;
}

/** What a record is, whatever server serves it: attributes and related identifiers (links name the host). */
const essence = (r: any) =>
  JSON.stringify({
    id: r.id,
    attributes: r.attributes,
    relationships: Object.fromEntries(
      Object.entries(r.relationships ?? {}).map(([k, v]: [string, any]) => [k, v.data]),
    ),
  });

test('a backup taken under write load restores every acknowledged record and file', async () => {
  const source = await createTestDatabase();
  const target = await createTestDatabase();
  const dir = mkdtempSync(join(tmpdir(), 'tilth-backup-'));
  const file = join(dir, 'farm.tar.gz');
  try {
    const server = await startChildServer(source.env);
    const token = await passwordToken(server.url, ADMIN.name, ADMIN.password);
    const bytes = Buffer.from('date,yield\n2024-07-01,12\n');
    const upload = await request(`${server.url}/api/log/harvest/file`, {
      method: 'POST',
      token,
      body: bytes,
      headers: { 'Content-Type': 'application/octet-stream', 'Content-Disposition': 'file; filename="yield.csv"' },
    });
    assert.equal(upload.status, 201, upload.text);
    const harvest = await request(`${server.url}/api/log/harvest`, {
      method: 'POST',
      token,
      json: {
        data: {
          type: 'log--harvest',
          attributes: { name: 'With a file', status: 'done' },
          relationships: { file: { data: [{ type: 'file--file', id: upload.body.data.id }] } },
        },
      },
    });
    assert.equal(harvest.status, 201, harvest.text);

    const acknowledged = new Set<string>([harvest.body.data.id]);
    let writing = true;
    let started = false;
    const writer = async (c: number) => {
      for (let n = 0; writing; n++) {
        const res = await request(`${server.url}/api/log/activity`, {
          method: 'POST',
          token,
          json: { data: { type: 'log--activity', attributes: { name: `w${c}-${n}`, status: 'done' } } },
        });
        assert.equal(res.status, 201, res.text);
        if (!started) acknowledged.add(res.body.data.id);
      }
    };
    const writers = Promise.all([0, 1, 2].map(writer));
    await new Promise((r) => setTimeout(r, 500));
    started = true; // writes acknowledged from here on may or may not be in the backup
    const backedUp = await tilthWhileRunning(['backup', file], source.env);
    writing = false;
    await writers;
    assert.equal(backedUp.status, 0, backedUp.stderr);
    assert.match(backedUp.stdout, /Wrote .*farm\.tar\.gz: [\d.]+ (bytes|KB|MB), 1 uploaded file/);
    const before = new Map<string, string>();
    for (const id of acknowledged) {
      const path = id === harvest.body.data.id ? 'log/harvest' : 'log/activity';
      before.set(id, essence((await request(`${server.url}/api/${path}/${id}`, { token })).body.data));
    }
    await server.stop();

    const restored = tilth(['restore', file], target.env);
    assert.equal(restored.status, 0, restored.stderr);
    if (target.env.DATABASE_URL) {
      // Without statistics PostgreSQL plans a restored farm on default guesses until autovacuum
      // runs (never, where it is off, as on this machine's server).
      const client = new pg.Client({ connectionString: target.env.DATABASE_URL });
      await client.connect();
      try {
        const { rows } = await client.query(
          `SELECT count(*)::int AS n FROM pg_stat_user_tables WHERE relname IN ('log', 'asset') AND last_analyze IS NOT NULL`,
        );
        assert.equal(rows[0].n, 2, 'the restored tables have planner statistics');
      } finally {
        await client.end();
      }
    }
    const again = tilth(['restore', file], target.env);
    assert.equal(again.status, 1, 'a second restore would overwrite a live farm');
    assert.match(again.stderr, /never overwrites/);

    const copy = await startChildServer(target.env);
    try {
      const copyToken = await passwordToken(copy.url, ADMIN.name, ADMIN.password);
      for (const [id, was] of before) {
        const path = id === harvest.body.data.id ? 'log/harvest' : 'log/activity';
        const res = await request(`${copy.url}/api/${path}/${id}`, { token: copyToken });
        assert.equal(res.status, 200, `${id} is in the restored farm`);
        assert.equal(essence(res.body.data), was, `${id} is served the same`);
      }
      const fileRecord = await request(`${copy.url}/api/file/file/${upload.body.data.id}`, { token: copyToken });
      const download = await fetch(`${copy.url}${fileRecord.body.data.attributes.uri.url}`, {
        headers: { Authorization: `Bearer ${copyToken}` },
      });
      assert.equal(download.status, 200);
      assert.deepEqual(Buffer.from(await download.arrayBuffer()), bytes, 'the uploaded file came back');
    } finally {
      await copy.stop();
    }
  } finally {
    await source.drop();
    await target.drop();
    rmSync(dir, { recursive: true, force: true });
  }
});

test(
  'tilth backup says what a small farm’s backup weighs, in KB, as the file does (not "0.0 MB")',
  { skip: Boolean(process.env.DATABASE_URL) && 'runs on the embedded SQLite database only' },
  async () => {
    const { sizeText } = await import('../../runtime/cli/backup.ts');
    const dir = mkdtempSync(join(tmpdir(), 'tilth-backup-size-'));
    try {
      const source = smallDataDirectory(dir);
      const file = join(dir, 'farm.tar.gz');
      const done = tilth(['backup', file], { TILTH_DATA_DIR: source });
      assert.equal(done.status, 0, done.stderr);
      const size = statSync(file).size;
      assert.ok(size < 1024 * 1024, `a small backup (${size} bytes)`);
      const expected = size < 1024 ? `${size} bytes` : `${(size / 1024).toFixed(1)} KB`;
      assert.ok(done.stdout.includes(`: ${expected}, 1 uploaded file`), `${expected}: ${done.stdout}`);
      assert.doesNotMatch(done.stdout, /0\.0 MB/);
      assert.deepEqual(
        [0, 1, 1023, 1024, 1536, 1024 * 1024 - 1, 1024 * 1024, 5.25 * 1024 * 1024, 3 * 1024 ** 3].map(sizeText),
        ['0 bytes', '1 byte', '1023 bytes', '1.0 KB', '1.5 KB', '1.0 MB', '1.0 MB', '5.3 MB', '3.0 GB'],
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  },
);

test(
  'restore refuses what is not a backup, and a backup of the other kind of database',
  { skip: Boolean(process.env.DATABASE_URL) && 'runs on the embedded SQLite database only' },
  () => {
    const dir = mkdtempSync(join(tmpdir(), 'tilth-restore-'));
    try {
      const junk = join(dir, 'junk.tar.gz');
      writeFileSync(junk, 'not a backup');
      const res = tilth(['restore', junk], { TILTH_DATA_DIR: join(dir, 'data') });
      assert.equal(res.status, 1);
      assert.match(res.stderr, /not a Tilth backup/);
      const usage = tilth(['backup'], { TILTH_DATA_DIR: join(dir, 'data') });
      assert.equal(usage.status, 2);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  },
);

test(
  'a backup and a restore are on disk before they report success, and a backup file is whole or absent',
  { skip: Boolean(process.env.DATABASE_URL) && 'runs on the embedded SQLite database only' },
  async () => {
    const { backup, restore } = await import('../../runtime/storage/backup.ts');
    const { loadConfig } = await import('../../runtime/config.ts');
    const dir = mkdtempSync(join(tmpdir(), 'tilth-durable-backup-'));
    // Which inodes were fsynced, read from the descriptors given to node:fs's fsyncSync (the
    // module's named exports follow the CommonJS object once syncBuiltinESMExports is called).
    const fs = createRequire(import.meta.url)('node:fs') as typeof import('node:fs');
    const original = fs.fsyncSync;
    const synced = new Set<number>();
    fs.fsyncSync = (fd: number) => {
      synced.add(fstatSync(fd).ino);
      original(fd);
    };
    syncBuiltinESMExports();
    try {
      const source = smallDataDirectory(dir);
      const out = join(dir, 'out');
      mkdirSync(out);
      const file = join(out, 'farm.tar.gz');
      await backup(loadConfig({ TILTH_DATA_DIR: source }), file);
      assert.deepEqual(readdirSync(out), ['farm.tar.gz'], 'no partial file is left beside the backup');
      assert.ok(synced.has(statSync(file).ino), 'the backup file was synced');
      assert.ok(synced.has(statSync(out).ino), 'its directory was synced (the name it was renamed to)');
      assert.equal(
        statSync(file).mode & 0o777,
        0o600,
        'a new backup is readable by its owner only (it holds password hashes and keys)',
      );
      // A backup written through a symlink (to another disk, say) lands where the link points.
      const usb = join(dir, 'usb');
      mkdirSync(usb);
      writeFileSync(join(usb, 'farm.tar.gz'), 'an older backup');
      const link = join(out, 'usb.tar.gz');
      symlinkSync(join(usb, 'farm.tar.gz'), link);
      await backup(loadConfig({ TILTH_DATA_DIR: source }), link);
      assert.ok(lstatSync(link).isSymbolicLink(), 'the link is still a link');
      assert.deepEqual(readdirSync(usb), ['farm.tar.gz']);
      assert.ok(
        statSync(join(usb, 'farm.tar.gz')).size > 100 && synced.has(statSync(join(usb, 'farm.tar.gz')).ino),
        'the backup replaced the file the link points at, synced',
      );

      synced.clear();
      const target = join(dir, 'target');
      await restore(loadConfig({ TILTH_DATA_DIR: target }), file);
      for (const path of [
        join(target, 'tilth.sqlite'),
        join(target, 'files', 'public', '2026-11', 'yield.csv'),
        join(target, 'files'),
        target,
      ]) {
        assert.ok(existsSync(path) && synced.has(statSync(path).ino), `${path} was synced`);
      }
    } finally {
      fs.fsyncSync = original;
      syncBuiltinESMExports();
      rmSync(dir, { recursive: true, force: true });
    }
  },
);

test(
  'a backup is readable by its owner only while it is written, not only once it is whole',
  { skip: Boolean(process.env.DATABASE_URL) && 'runs on the embedded SQLite database only' },
  async () => {
    const { backup } = await import('../../runtime/storage/backup.ts');
    const { loadConfig } = await import('../../runtime/config.ts');
    const dir = mkdtempSync(join(tmpdir(), 'tilth-private-backup-'));
    // The mode the partial file had while the archive was written into it, read just before the
    // backup gives the finished file its final mode (node:fs's chmodSync, as in the test above).
    const fs = createRequire(import.meta.url)('node:fs') as typeof import('node:fs');
    const original = fs.chmodSync;
    const seen: Array<{ path: string; mode: number }> = [];
    fs.chmodSync = (path: import('node:fs').PathLike, mode: import('node:fs').Mode) => {
      seen.push({ path: String(path), mode: statSync(path).mode & 0o777 });
      original(path, mode);
    };
    syncBuiltinESMExports();
    // A umask that hides nothing: whatever mode the file is created with is the mode it has.
    const umask = process.umask(0);
    try {
      const source = smallDataDirectory(dir);
      await backup(loadConfig({ TILTH_DATA_DIR: source }), join(dir, 'farm.tar.gz'));
      const partial = seen.find((s) => s.path.includes('.partial-'));
      assert.ok(partial, 'the archive was written under a partial name');
      assert.equal(partial.mode.toString(8), '600', 'another local user could not open it while it was written');
    } finally {
      process.umask(umask);
      fs.chmodSync = original;
      syncBuiltinESMExports();
      rmSync(dir, { recursive: true, force: true });
    }
  },
);

test(
  'a restore into a data directory that fails part way leaves no farm there, so that it can be run again',
  { skip: Boolean(process.env.DATABASE_URL) && 'runs on the embedded SQLite database only' },
  async () => {
    const { backup, restore } = await import('../../runtime/storage/backup.ts');
    const { loadConfig } = await import('../../runtime/config.ts');
    const dir = mkdtempSync(join(tmpdir(), 'tilth-restore-full-disk-'));
    // The disk fills while the uploaded files, then while the database, are copied: node:fs's
    // cpSync (as the restore calls it) writes what it was given, then fails, leaving that behind.
    const fs = createRequire(import.meta.url)('node:fs') as typeof import('node:fs');
    const original = fs.cpSync;
    try {
      const source = smallDataDirectory(dir);
      const file = join(dir, 'farm.tar.gz');
      await backup(loadConfig({ TILTH_DATA_DIR: source }), file);
      const target = join(dir, 'target');

      for (const failing of ['files', 'tilth.sqlite']) {
        fs.cpSync = ((from: string, to: string, options?: object) => {
          original(from, to, options);
          if (String(from).endsWith(failing))
            throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
        }) as typeof fs.cpSync;
        syncBuiltinESMExports();
        await assert.rejects(restore(loadConfig({ TILTH_DATA_DIR: target }), file), /ENOSPC/, failing);
        // Nothing a server would open as a farm, nor anything a second restore would refuse.
        assert.deepEqual(
          readdirSync(target),
          [],
          `copying ${failing} failed: no database file, no files directory, nothing half copied is left behind`,
        );
      }

      fs.cpSync = original;
      syncBuiltinESMExports();
      await restore(loadConfig({ TILTH_DATA_DIR: target }), file);
      const restored = new Database(join(target, 'tilth.sqlite'), { readonly: true });
      assert.equal(restored.prepare('SELECT x FROM t').pluck().get(), 42);
      restored.close();
      assert.equal(readFileSync(join(target, 'files', 'public', '2026-11', 'yield.csv'), 'utf8'), 'date,yield\n');
      assert.deepEqual(
        readdirSync(target).sort(),
        ['files', 'tilth.sqlite'],
        'nothing of the failed restore is left beside the farm',
      );
    } finally {
      fs.cpSync = original;
      syncBuiltinESMExports();
      rmSync(dir, { recursive: true, force: true });
    }
  },
);

test(
  'a restore that fails part way leaves the database empty, so that it can be run again',
  { skip: !process.env.DATABASE_URL && 'pg_restore: runs on PostgreSQL only' },
  async () => {
    const source = await createTestDatabase();
    const target = await createTestDatabase();
    const dir = mkdtempSync(join(tmpdir(), 'tilth-restore-broken-'));
    try {
      const server = await startChildServer(source.env);
      const token = await passwordToken(server.url, ADMIN.name, ADMIN.password);
      const created = await request(`${server.url}/api/log/activity`, {
        method: 'POST',
        token,
        json: { data: { type: 'log--activity', attributes: { name: 'Kept', status: 'done' } } },
      });
      assert.equal(created.status, 201, created.text);
      await server.stop();
      const file = join(dir, 'farm.tar.gz');
      const backedUp = tilth(['backup', file], source.env);
      assert.equal(backedUp.status, 0, backedUp.stderr);

      // The same backup with its dump's last 100 bytes cut off (a damaged download, a disk that
      // filled while copying it): pg_restore creates every table, then fails reading the last data.
      const unpacked = join(dir, 'unpacked');
      mkdirSync(unpacked);
      await tar.extract({ file, cwd: unpacked });
      const dump = join(unpacked, 'tilth.pgdump');
      truncateSync(dump, statSync(dump).size - 100);
      const broken = join(dir, 'broken.tar.gz');
      await tar.create({ file: broken, cwd: unpacked, gzip: true }, readdirSync(unpacked));

      const failed = tilth(['restore', broken], target.env);
      assert.equal(failed.status, 1, failed.stdout);
      assert.match(failed.stderr, /pg_restore failed/);
      const client = new pg.Client({ connectionString: target.env.DATABASE_URL });
      await client.connect();
      try {
        const { rows } = await client.query(
          `SELECT count(*)::int AS n FROM information_schema.tables WHERE table_schema = 'public'`,
        );
        assert.equal(rows[0].n, 0, 'nothing of the failed restore is left');
      } finally {
        await client.end();
      }

      const retried = tilth(['restore', file], target.env);
      assert.equal(retried.status, 0, `the whole backup restores into the same database afterwards: ${retried.stderr}`);
      const copy = await startChildServer(target.env);
      try {
        const res = await request(`${copy.url}/api/log/activity/${created.body.data.id}`, {
          token: await passwordToken(copy.url, ADMIN.name, ADMIN.password),
        });
        assert.equal(res.status, 200);
        assert.equal(res.body.data.attributes.name, 'Kept');
      } finally {
        await copy.stop();
      }
    } finally {
      await source.drop();
      await target.drop();
      rmSync(dir, { recursive: true, force: true });
    }
  },
);

test(
  'tilth backup where there is no farm says so, writes no backup and leaves no database behind',
  { skip: Boolean(process.env.DATABASE_URL) && 'runs on the embedded SQLite database only' },
  () => {
    const dir = mkdtempSync(join(tmpdir(), 'tilth-backup-none-'));
    try {
      const empty = join(dir, 'data');
      mkdirSync(empty);
      const file = join(dir, 'farm.tar.gz');
      const res = tilth(['backup', file], { TILTH_DATA_DIR: empty });
      assert.notEqual(res.status, 0, res.stdout);
      assert.match(res.stderr, /There is no Tilth database at .*tilth\.sqlite/);
      assert.equal(existsSync(file), false, 'no backup file');
      assert.deepEqual(readdirSync(empty), [], 'no database made where there was none');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  },
);
