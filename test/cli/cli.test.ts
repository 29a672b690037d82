// The tilth command: help on every command, migrate, users, and `serve --migrate` as `npm start` runs it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer as createNetServer, type AddressInfo } from 'node:net';
import { freePort } from '../support/child-server.ts';
import { ROOT } from '../support/project.ts';
import { tilthAsync } from '../support/tilth-command.ts';
import { createTestDatabase } from '../support/server.ts';
import { openDatabase } from '../../runtime/storage/database.ts';

const BIN = join(ROOT, 'bin', 'tilth.js');

function tilth(args: string[], env: Record<string, string> = {}) {
  return spawnSync(process.execPath, [BIN, ...args], {
    encoding: 'utf8',
    env: { ...process.env, TILTH_LOG_LEVEL: 'silent', ...env },
    timeout: 60_000,
  });
}

test('every command explains itself with --help', async () => {
  // The helps are asked for at once: each is a process of its own, mostly starting up.
  const commands = [
    'serve',
    'migrate',
    'generate',
    'user create',
    'user password',
    'user block',
    'client create',
    'client list',
  ];
  const [overview, unknown, ...helps] = await Promise.all(
    [['--help'], ['plough'], ...commands.map((c) => [...c.split(' '), '--help'])].map(
      (args) => tilthAsync(args, {}).done,
    ),
  );
  assert.equal(overview!.status, 0);
  for (const [i, command] of commands.entries()) {
    assert.ok(overview!.stdout.includes(command), `the overview lists ${command}`);
    assert.equal(helps[i]!.status, 0, `${command} --help: ${helps[i]!.stderr}`);
    assert.match(helps[i]!.stdout, /Usage: tilth /, command);
  }
  assert.equal(unknown!.status, 2);
  assert.match(unknown!.stderr, /Unknown command "plough"/);
});

test(
  'migrate, then create a user; serve refuses an unmigrated database and names the fix',
  { skip: Boolean(process.env.DATABASE_URL) && 'runs on the embedded SQLite database only' },
  () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'tilth-cli-'));
    try {
      const env = { TILTH_DATA_DIR: dataDir, DATABASE_URL: '' };
      const refused = tilth(['serve'], { ...env, PORT: '0' });
      assert.equal(refused.status, 1);
      assert.match(refused.stderr, /behind generated\/.*npx tilth migrate/);
      const migrated = tilth(['migrate'], env);
      assert.equal(migrated.status, 0, migrated.stderr);
      assert.match(migrated.stdout, /Applied \d+ migration/);
      assert.match(tilth(['migrate'], env).stdout, /up to date/);
      const created = tilth(
        [
          'user',
          'create',
          '--name',
          'maria',
          '--password',
          'a good password',
          '--email',
          'maria@example.org',
          '--role',
          'farm_manager',
        ],
        env,
      );
      assert.equal(created.status, 0, created.stderr);
      assert.match(created.stdout, /Created user "maria" .* farm_manager/);
      const duplicate = tilth(['user', 'create', '--name', 'maria', '--password', 'another password'], env);
      assert.equal(duplicate.status, 1);
      assert.match(duplicate.stderr, /already taken/);
      // The API's rules for names (test/api/user-names.test.ts): case, e-mail addresses, invisible characters.
      for (const name of [' MARIA ', 'Maria@Example.org', 'maria\u200b2']) {
        const refused = tilth(['user', 'create', '--name', name, '--password', 'another password'], env);
        assert.equal(refused.status, 1, name);
        assert.match(refused.stderr, /already taken|invisible/, name);
      }
      const badRole = tilth(['user', 'create', '--name', 'x', '--password', 'long enough', '--role', 'farmer'], env);
      assert.match(badRole.stderr, /Unknown role "farmer"/);
      // The other user commands find the account as signing in does: without regard to case or spaces.
      const roles = tilth(['user', 'roles', '--name', ' Maria ', '--role', 'farm_viewer'], env);
      assert.equal(roles.status, 0, roles.stderr);
      assert.match(roles.stdout, /Set the roles of "maria" to: farm_viewer/);
      const password = tilth(['user', 'password', '--name', 'MARIA', '--password', 'a new good password'], env);
      assert.equal(password.status, 0, password.stderr);
      assert.match(password.stdout, /Set the password of "maria"/);
      assert.match(tilth(['user', 'list'], env).stdout, /^maria\t\S+\tactive\tfarm_viewer$/m);
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  },
);

// A migration that fails names its file, what the database said and what to do, and never shows a
// stack trace (issue 29 Part A). Here a table already exists because its migration's record was lost.
test('a failed migration names its file, the error and what to do, without a stack trace', async () => {
  const database = await createTestDatabase();
  try {
    const env: Record<string, string> = { DATABASE_URL: '', ...database.env };
    assert.equal(tilth(['migrate'], env).status, 0);
    const db = openDatabase({ databaseUrl: env.DATABASE_URL || null, dataDir: env.TILTH_DATA_DIR! });
    try {
      await db.knex('knex_migrations').where({ name: 'model/0002_create_data_stream_and_more' }).delete();
    } finally {
      await db.close();
    }
    const failed = tilth(['migrate'], env);
    assert.equal(failed.status, 1, failed.stderr);
    assert.doesNotMatch(failed.stderr, /\n\s+at /, `no stack trace:\n${failed.stderr}`);
    assert.match(failed.stderr, /generated\/migrations\/0002_create_data_stream_and_more\.ts/);
    assert.match(failed.stderr, /statement: create table .data_stream. \(/);
    assert.match(failed.stderr, /the database said: .*data_stream.* already exists/);
    assert.match(failed.stderr, /nothing of this run was applied/);
    assert.match(failed.stderr, /What to do: .*tilth restore .*tilth migrate/);
  } finally {
    await database.drop();
  }
});

test(
  'serve --migrate (npm start) prints where it serves and the generated admin password, once',
  { skip: Boolean(process.env.DATABASE_URL) && 'runs on the embedded SQLite database only' },
  async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'tilth-start-'));
    const port = await freePort();
    const child = spawn(process.execPath, [BIN, 'serve', '--migrate'], {
      // The start-up lines are log lines (info); the generated password is printed, never logged.
      env: {
        ...process.env,
        TILTH_DATA_DIR: dataDir,
        PORT: String(port),
        DATABASE_URL: '',
        TILTH_ADMIN_PASSWORD: '',
        TILTH_LOG_LEVEL: 'info',
      },
    });
    try {
      let out = '';
      child.stdout.on('data', (d) => (out += d));
      const deadline = Date.now() + 30_000;
      // The start-up lines are log lines, written asynchronously: wait for both.
      while (!(/password: \S+/.test(out) && /Tilth is serving/.test(out)) && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 100));
      assert.match(out, new RegExp(`serving .* at http://localhost:${port}/api`));
      const password = /password: (\S+)/.exec(out)![1]!;
      const token = await fetch(`http://127.0.0.1:${port}/oauth/token`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ grant_type: 'password', username: 'admin', password, client_id: 'farm' }),
      });
      assert.equal(token.status, 200, 'the printed credentials work');
    } finally {
      child.kill('SIGTERM');
      await new Promise((r) => child.once('exit', r));
      rmSync(dataDir, { recursive: true, force: true });
    }
  },
);

test('a first start on a busy port creates no administrator: it names the port, and the next start prints the password', async (t) => {
  // Issue 41 Part E, item 3: the first start migrated, created the administrator, then failed to
  // listen; its password was printed nowhere and the next start printed nothing.
  const database = await createTestDatabase();
  const busy = createNetServer();
  await new Promise<void>((resolve) => busy.listen(0, '127.0.0.1', resolve));
  t.after(async () => {
    busy.close();
    await database.drop();
  });
  const env = { ...database.env, HOST: '127.0.0.1', TILTH_ADMIN_PASSWORD: '', TILTH_LOG_LEVEL: 'info' };
  const port = (busy.address() as AddressInfo).port;
  const refused = await tilthAsync(['serve', '--migrate'], { ...env, PORT: String(port) }).done;
  assert.equal(refused.status, 1, refused.stderr);
  assert.match(refused.stderr, new RegExp(`Cannot listen on 127\\.0\\.0\\.1:${port}: the port is in use`));
  assert.doesNotMatch(refused.stdout, /Created the administrator/);

  let out = '';
  const second = tilthAsync(
    ['serve', '--migrate'],
    { ...env, PORT: String(await freePort()) },
    (text) => (out += text),
  );
  const deadline = Date.now() + 30_000;
  while (!/Tilth is serving/.test(out) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  second.kill();
  await second.done;
  assert.match(
    out,
    /Created the administrator "admin" with the password: \S+/,
    'the second start creates the administrator and prints its password',
  );
});

test('help lists each option apart from its description, and no empty Options block', async () => {
  // Issue 41 Part E, item 6: `--client-secret-file VALUEa file…`, and an empty line under "Options:" for backup and restore.
  const helps = await Promise.all(
    [['import', 'farmos'], ['backup'], ['restore']].map((args) => tilthAsync([...args, '--help'], {}).done),
  );
  for (const help of helps) {
    assert.equal(help.status, 0, help.stderr);
    assert.doesNotMatch(help.stdout, /Options:\n\n/, help.stdout);
    for (const line of help.stdout
      .slice(help.stdout.indexOf('Options:\n') + 9)
      .trimEnd()
      .split('\n'))
      assert.match(line, /^ {2}--[a-z-]+( VALUE)? {2,}\S/, `an option line: ${JSON.stringify(line)}`);
  }
  assert.match(helps[0]!.stdout, /--client-secret-file VALUE {2,}a file holding/);
});
