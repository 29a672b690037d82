#!/usr/bin/env node
// Runs every test file with node's test runner and tsx. Node 20's runner takes file paths, not
// globs, so the files are listed here. Pass paths or name fragments to run a subset.
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { spawnSync } from 'node:child_process';

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
if (!existsSync('/usr/bin/chromium') && files.some((f) => readFileSync(join(root, f), 'utf8').includes('playwright-core'))) {
  spawnSync('bash', [join(root, 'scripts', 'ensure-chromium.sh')], { cwd: root, stdio: 'inherit' });
}
const result = spawnSync(
  process.execPath,
  ['--import', 'tsx', '--test', '--test-reporter=spec', `--test-concurrency=${process.env.TILTH_TEST_CONCURRENCY ?? 2}`, ...files],
  {
    cwd: root,
    stdio: 'inherit',
    // Hundreds of accounts are made and signed in to; OWASP's floor for argon2id keeps that an
    // eighth of the time (test/unit/passwords.test.ts checks the default is argon2's own).
    env: { ...process.env, TILTH_LOG_LEVEL: process.env.TILTH_LOG_LEVEL ?? 'silent', TILTH_PASSWORD_HASH: process.env.TILTH_PASSWORD_HASH ?? 'owasp-minimum' },
  },
);
process.exit(result.status ?? 1);
