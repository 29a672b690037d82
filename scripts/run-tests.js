#!/usr/bin/env node
// Runs every test file with node's test runner and tsx. Node 20's runner takes file paths, not
// globs, so the files are listed here. Pass paths or name fragments to run a subset.
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import pg from 'pg';

const root = new URL('..', import.meta.url).pathname;
function find(dir) {
  const out = [];
  for (const name of readdirSync(dir).sort()) {
    const full = join(dir, name);
    if (statSync(full).isDirectory()) out.push(...find(full));
    else if (name.endsWith('.test.ts')) out.push(relative(root, full));
  }
  return out;
}
const filters = process.argv.slice(2);
let files = find(join(root, 'test'));
if (filters.length) files = files.filter((f) => filters.some((x) => f.includes(x)));
if (!files.length) {
  console.error('No test files match.');
  process.exit(1);
}
// The browser tests drive Debian's chromium (playwright-core downloads none). On a fresh machine
// ensure-chromium.sh installs it when it may (root with apt-get), so `npm ci && npm test` passes
// there; otherwise it says what to install, and those tests fail saying the browser is missing.
if (
  !existsSync('/usr/bin/chromium') &&
  files.some((f) => readFileSync(join(root, f), 'utf8').includes('playwright-core'))
) {
  spawnSync('bash', [join(root, 'scripts', 'ensure-chromium.sh')], { cwd: root, stdio: 'inherit' });
}
// The test servers start on copies of one database migrated once for this run (test/support/server.ts):
// a PostgreSQL database, or an SQLite file in a directory. Both are removed at the end.
const template =
  process.env.DATABASE_URL && !process.env.TILTH_TEST_PG_TEMPLATE
    ? `tilth_template_${randomBytes(6).toString('hex')}`
    : null;
const sqliteTemplate =
  process.env.DATABASE_URL || process.env.TILTH_TEST_SQLITE_TEMPLATE
    ? null
    : mkdtempSync(join(tmpdir(), 'tilth-test-template-'));
const result = spawnSync(
  process.execPath,
  [
    '--import',
    'tsx',
    '--test',
    '--test-reporter=spec',
    // Two files at once on SQLite keep both cores busy; on PostgreSQL a file's tests wait on the
    // database's own processes, which left a core about a sixth idle at two (vmstat): three there.
    `--test-concurrency=${process.env.TILTH_TEST_CONCURRENCY ?? (process.env.DATABASE_URL ? 3 : 2)}`,
    ...files,
  ],
  {
    cwd: root,
    stdio: 'inherit',
    // Hundreds of accounts are made and signed in to; OWASP's floor for argon2id keeps that an
    // eighth of the time (test/unit/passwords.test.ts checks the default is argon2's own).
    env: {
      ...process.env,
      ...(template ? { TILTH_TEST_PG_TEMPLATE: template } : {}),
      ...(sqliteTemplate ? { TILTH_TEST_SQLITE_TEMPLATE: sqliteTemplate } : {}),
      TILTH_LOG_LEVEL: process.env.TILTH_LOG_LEVEL ?? 'silent',
      TILTH_PASSWORD_HASH: process.env.TILTH_PASSWORD_HASH ?? 'owasp-minimum',
    },
  },
);
if (template) {
  const client = new pg.Client({ connectionString: process.env.DATABASE_URL });
  try {
    await client.connect();
    await client.query(`DROP DATABASE IF EXISTS ${template} WITH (FORCE)`);
    await client.query(`DROP DATABASE IF EXISTS ${template}_building WITH (FORCE)`);
  } catch (error) {
    console.error(`Could not drop the test run's template database ${template}: ${error.message}`);
  } finally {
    await client.end().catch(() => {});
  }
}
if (sqliteTemplate) rmSync(sqliteTemplate, { recursive: true, force: true });
process.exit(result.status ?? 1);
