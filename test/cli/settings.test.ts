// One configuration for the server and every command (operations issue, item 1): settings from
// the environment and an env file, every bad setting refused in one line naming it (exit 2, no
// stack trace), and no command but serve and migrate making a new, empty database.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT } from '../support/project.ts';

const BIN = join(ROOT, 'bin', 'tilth.js');
const PG = process.env.TILTH_CI_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

function tilth(args: string[], env: Record<string, string> = {}, cwd = ROOT) {
  const base = { ...process.env, TILTH_LOG_LEVEL: 'silent', DATABASE_URL: '' };
  return spawnSync(process.execPath, [BIN, ...args], {
    cwd,
    encoding: 'utf8',
    env: { ...base, ...env },
    timeout: 60_000,
  });
}

function scratch(): string {
  return mkdtempSync(join(tmpdir(), 'tilth-settings-'));
}

function assertOneLineRefusal(result: ReturnType<typeof tilth>, variable: string): void {
  assert.equal(result.status, 2, `exit code 2: ${result.stderr}`);
  const lines = result.stderr.trim().split('\n');
  assert.equal(lines.length, 1, `one line: ${result.stderr}`);
  assert.match(lines[0]!, new RegExp(variable));
  assert.doesNotMatch(result.stderr, /\n\s+at /, 'no stack trace');
}

test('a bad setting stops any command with one line naming it, exit code 2', () => {
  const dir = scratch();
  try {
    const file = join(dir, 'a-file');
    writeFileSync(file, 'not a directory');
    assertOneLineRefusal(tilth(['serve'], { TILTH_LOG_LEVEL: 'verbose', TILTH_DATA_DIR: dir }), 'TILTH_LOG_LEVEL');
    assertOneLineRefusal(
      tilth(['serve', '--migrate'], { TILTH_MODULES: 'ledgr', TILTH_DATA_DIR: dir }),
      'TILTH_MODULES',
    );
    assertOneLineRefusal(tilth(['migrate'], { TILTH_DATA_DIR: file }), 'TILTH_DATA_DIR');
    assertOneLineRefusal(tilth(['user', 'list'], { PORT: 'eighty' }), 'PORT');
    const missing = new URL(PG);
    missing.pathname = `/tilth_missing_${process.pid}`;
    assertOneLineRefusal(tilth(['migrate'], { DATABASE_URL: missing.toString() }), 'DATABASE_URL');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('commands other than serve and migrate never create a database; they say which setting points where', () => {
  const dir = scratch();
  try {
    const listed = tilth(['user', 'list'], { TILTH_DATA_DIR: dir });
    assert.equal(listed.status, 2, listed.stderr);
    assert.match(listed.stderr, /TILTH_DATA_DIR/);
    assert.ok(listed.stderr.includes(dir), 'it names the directory');
    assert.ok(!existsSync(join(dir, 'tilth.sqlite')), 'no empty database was made');
    const client = tilth(['client', 'list'], { TILTH_DATA_DIR: dir });
    assert.equal(client.status, 2, client.stderr);
    assert.ok(!existsSync(join(dir, 'tilth.sqlite')));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('settings come from an env file too, the same for every command, and each says which database it opened', () => {
  const dir = scratch();
  const data = join(dir, 'farm-data');
  try {
    writeFileSync(join(dir, '.env'), `# the farm's settings\nTILTH_DATA_DIR=${data}\nTILTH_FARM_NAME="Hill farm"\n`);
    const migrated = tilth(['migrate'], {}, dir);
    assert.equal(migrated.status, 0, migrated.stderr);
    assert.ok(existsSync(join(data, 'tilth.sqlite')), './.env in the working directory is read');
    assert.ok(migrated.stdout.includes(join(data, 'tilth.sqlite')), `migrate names the database: ${migrated.stdout}`);
    const created = tilth(['user', 'create', '--name', 'ines', '--password', 'a good password'], {
      TILTH_ENV_FILE: join(dir, '.env'),
    });
    assert.equal(created.status, 0, created.stderr);
    assert.ok(created.stderr.includes(join(data, 'tilth.sqlite')), `user create names the database: ${created.stderr}`);
    const listed = tilth(['user', 'list'], {}, dir);
    assert.match(listed.stdout, /ines/);
    const overridden = tilth(['user', 'list'], { TILTH_DATA_DIR: join(dir, 'elsewhere') }, dir);
    assert.equal(overridden.status, 2, 'the environment wins over the file');
    assertOneLineRefusal(tilth(['user', 'list'], { TILTH_ENV_FILE: join(dir, 'missing.env') }), 'TILTH_ENV_FILE');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('tilth --version, migrate --status listing each migration, and user delete', () => {
  const dir = scratch();
  try {
    const env = { TILTH_DATA_DIR: dir };
    const version = tilth(['--version']);
    assert.equal(version.status, 0);
    assert.match(version.stdout, /^tilth \d+\.\d+\.\d+(\+[0-9a-f]{12})? \(farmOS API 2\.x\)/);
    const before = tilth(['migrate', '--status'], env);
    assert.equal(before.status, 0, before.stderr);
    assert.match(before.stdout, /^pending {2}model\/0001_\S+$/m, 'each migration on its own line');
    assert.match(before.stdout, /0 applied, \d+ pending/);
    assert.equal(tilth(['migrate'], env).status, 0);
    const after = tilth(['migrate', '--status'], env);
    assert.match(after.stdout, /^applied {2}model\/0001_\S+$/m);
    assert.match(after.stdout, /\d+ applied, 0 pending\./);
    assert.equal(tilth(['user', 'create', '--name', 'first', '--password', 'a good password'], env).status, 0);
    assert.equal(tilth(['user', 'create', '--name', 'temp', '--password', 'a good password'], env).status, 0);
    const deleted = tilth(['user', 'delete', '--name', 'temp'], env);
    assert.equal(deleted.status, 0, deleted.stderr);
    assert.doesNotMatch(tilth(['user', 'list'], env).stdout, /temp/);
    const refused = tilth(['user', 'delete', '--name', 'first'], env);
    assert.equal(refused.status, 1);
    assert.match(refused.stderr, /user 1/);
    assert.equal(tilth(['user', 'delete', '--name', 'nobody'], env).status, 1);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
