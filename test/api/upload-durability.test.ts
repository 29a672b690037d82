// An acknowledged upload is durable (issue 41 D.2): its bytes are synced before the temporary file
// is renamed into place, and the directory it lands in after, before the file's record commits and
// the 201 leaves. A power cut cannot be staged in a test; the order of the system calls can: the
// server runs in its own process, traced by strace (-y names each descriptor's file), and the
// trace of one upload is read in order. Skipped where strace is not installed or cannot trace.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createTestDatabase, ADMIN } from '../support/server.ts';
import { startChildServer, type ChildServer } from '../support/child-server.ts';
import { request, passwordToken } from '../support/http.ts';

const traceable = spawnSync('strace', ['-o', '/dev/null', 'true']).status === 0;

let database: Awaited<ReturnType<typeof createTestDatabase>>;
let server: ChildServer;
let token: string;
const scratch = mkdtempSync(join(tmpdir(), 'tilth-strace-'));

before(async () => {
  if (!traceable) return;
  database = await createTestDatabase({ migrated: true });
  server = await startChildServer(database.env);
  token = await passwordToken(server.url, ADMIN.name, ADMIN.password);
});
after(async () => {
  await server?.stop();
  await database?.drop();
  rmSync(scratch, { recursive: true, force: true });
});

/** The system calls the server makes while `work` runs, one line each, in order. */
async function traced(work: () => Promise<void>): Promise<string[]> {
  const out = join(scratch, 'trace.txt');
  const calls = 'trace=fsync,fdatasync,rename,renameat,renameat2,pwrite64,write,writev';
  const strace = spawn('strace', ['-f', '-y', '-s', '48', '-e', calls, '-o', out, '-p', String(server.process.pid)], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const exited = new Promise((resolve) => strace.once('exit', resolve));
  // Attached once it says so for the process's threads (the last of them soon after the first).
  let said = '';
  await new Promise<void>((resolve, reject) => {
    strace.stderr!.on('data', (chunk) => {
      said += chunk;
      if (/attached/.test(said)) resolve();
    });
    strace.once('exit', () => reject(new Error(`strace did not attach: ${said}`)));
  });
  await new Promise((resolve) => setTimeout(resolve, 300));
  try {
    await work();
    await new Promise((resolve) => setTimeout(resolve, 300));
  } finally {
    strace.kill('SIGINT');
    await exited;
  }
  return readFileSync(out, 'utf8').split('\n');
}

test(
  'an upload: its bytes are synced before the rename, its directory after, both before the record commits and the 201',
  { skip: traceable ? false : 'strace is not installed or cannot trace here' },
  async () => {
    let status = 0;
    const lines = await traced(async () => {
      const res = await request(`${server.url}/api/log/activity/file`, {
        method: 'POST',
        token,
        body: Buffer.from('date,yield\n2024-07-01,12\n'.repeat(100)),
        headers: { 'Content-Type': 'application/octet-stream', 'Content-Disposition': 'file; filename="yield.csv"' },
      });
      status = res.status;
    });
    assert.equal(status, 201);
    const at = (pattern: RegExp, from = 0) => lines.findIndex((line, i) => i >= from && pattern.test(line));
    const renamed = at(/rename\w*\(.*\/files\/tmp\/[0-9a-f]+", .*\/files\/farm\/log\/\d{4}-\d{2}\/yield\.csv"/);
    assert.ok(renamed >= 0, `the upload is renamed into place:\n${lines.filter((l) => /rename/.test(l)).join('\n')}`);
    const tmp = /\/files\/tmp\/[0-9a-f]+/.exec(lines[renamed]!)![0];
    const dir = /"([^"]*\/files\/farm\/log\/\d{4}-\d{2})\/yield\.csv"/.exec(lines[renamed]!)![1]!;
    const bytesSynced = at(new RegExp(`f(data)?sync\\(\\d+<[^>]*${tmp}>\\) = 0`));
    assert.ok(bytesSynced >= 0 && bytesSynced < renamed, 'the bytes are synced before the rename');
    const dirSynced = at(new RegExp(`fsync\\(\\d+<${dir}>\\) = 0`), renamed);
    assert.ok(dirSynced > renamed, 'the directory is synced after the rename');
    // The commit: the first write to SQLite's log after the rename, or PostgreSQL's COMMIT.
    const committed = at(process.env.DATABASE_URL ? /COMMIT/ : /pwrite64\(\d+<[^>]*tilth\.sqlite-wal>/, renamed);
    assert.ok(
      committed > dirSynced,
      `the directory is synced before the record commits (lines ${dirSynced}, ${committed})`,
    );
    const answered = at(/HTTP\/1\.1 201/, renamed);
    assert.ok(answered > committed, 'and before the 201');
  },
);
