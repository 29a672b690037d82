// What a newcomer sees when the database cannot be used (issue 41 Part E, item 2): one line saying
// what is wrong and what to do, never a stack trace before it (knex's "Acquire connection error"
// printed nine lines of pg's internals first), and for a missing PostgreSQL database the statement
// that creates it. A second server on one SQLite folder says so without a TypeScript trace.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { tilthAsync } from '../support/tilth-command.ts';
import { startChildServer } from '../support/child-server.ts';
import knexFactory from 'knex';

/** The PostgreSQL server the tests use (DATABASE_URL's, or the default one): a database on it is made and dropped here. */
const SERVER = (process.env.DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/test').replace(/\/[^/]*$/, '');

const dirs: string[] = [];
after(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));
const scratch = () => {
  const dir = mkdtempSync(join(tmpdir(), 'tilth-connection-'));
  dirs.push(dir);
  return dir;
};

/** The command's stderr has no line of a stack trace. */
function assertNoTrace(stderr: string, what: string): void {
  assert.doesNotMatch(stderr, /^\s+at /m, `${what}: no stack trace:\n${stderr}`);
}

test('a missing PostgreSQL database or a refused port: one line, no stack trace, from serve, migrate, restore and user list', async () => {
  // A backup of a PostgreSQL farm to restore (restore reads the file first, then opens DATABASE_URL).
  const source = `tilth_source_${randomBytes(4).toString('hex')}`;
  const admin = knexFactory({ client: 'pg', connection: `${SERVER}/postgres` });
  await admin.raw(`CREATE DATABASE ${source}`);
  after(async () => {
    await admin.raw(`DROP DATABASE IF EXISTS ${source}`);
    await admin.destroy();
  });
  const file = join(scratch(), 'farm.tar.gz');
  assert.equal((await tilthAsync(['migrate'], { DATABASE_URL: `${SERVER}/${source}` }).done).status, 0);
  const backup = await tilthAsync(['backup', file], { DATABASE_URL: `${SERVER}/${source}`, TILTH_DATA_DIR: scratch() })
    .done;
  assert.equal(backup.status, 0, backup.stderr);

  const name = `tilth_missing_${randomBytes(4).toString('hex')}`;
  const commands = [['serve'], ['migrate'], ['restore', file], ['user', 'list']];
  for (const [url, said] of [
    [`${SERVER}/${name}`, new RegExp(`database "${name}" does not exist.*create it.*CREATE DATABASE ${name}`)],
    ['postgres://postgres@127.0.0.1:1/tilth', /ECONNREFUSED 127\.0\.0\.1:1/],
  ] as const) {
    const runs = await Promise.all(
      commands.map((args) => tilthAsync(args, { DATABASE_URL: url, TILTH_DATA_DIR: scratch(), PORT: '0' }).done),
    );
    for (const [i, run] of runs.entries()) {
      const what = `${commands[i]!.join(' ')} on ${url}`;
      assert.equal(run.status, 2, `${what}: ${run.stderr}`);
      assertNoTrace(run.stderr, what);
      assert.match(run.stderr, /^DATABASE_URL: cannot use that database: /m, what);
      assert.match(run.stderr, said, what);
      assert.equal(run.stderr.trim().split('\n').length, 1, `${what}: one line:\n${run.stderr}`);
    }
  }
});

test(
  'a second server on one SQLite folder says another is serving it, without a trace',
  { skip: Boolean(process.env.DATABASE_URL) && 'one SQLite folder' },
  async () => {
    const dataDir = scratch();
    const first = await startChildServer({ TILTH_DATA_DIR: dataDir, DATABASE_URL: '' });
    try {
      const second = await tilthAsync(['serve'], { TILTH_DATA_DIR: dataDir, PORT: '0' }).done;
      assert.equal(second.status, 1, second.stderr);
      assertNoTrace(second.stderr, 'the second serve');
      assert.equal(second.stderr.trim(), second.stderr.trim().split('\n')[0], `one line:\n${second.stderr}`);
      assert.match(second.stderr, /Another Tilth process is already serving the SQLite database/);
    } finally {
      await first.stop();
    }
  },
);
