#!/usr/bin/env node
// Runs every test file with node's test runner and tsx. Node 20's runner takes file paths, not
// globs, so the files are listed here. Pass paths or name fragments to run a subset.
import { readdirSync, statSync } from 'node:fs';
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
const result = spawnSync(
  process.execPath,
  ['--import', 'tsx', '--test', '--test-reporter=spec', `--test-concurrency=${process.env.TILTH_TEST_CONCURRENCY ?? 2}`, ...files],
  { cwd: root, stdio: 'inherit', env: { ...process.env, TILTH_LOG_LEVEL: process.env.TILTH_LOG_LEVEL ?? 'silent' } },
);
process.exit(result.status ?? 1);
