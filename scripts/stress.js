#!/usr/bin/env node
// `npm run stress`: the long versions of the tests in test/stress (TILTH_STRESS=full) on SQLite,
// then on PostgreSQL when TILTH_STRESS_DATABASE_URL (or DATABASE_URL) names a server. Each test
// appends its figures to stress-results/<time>.jsonl (git-ignored); a summary is printed at the end.
// Pass name fragments to run some of them: `npm run stress -- crashes`.
import { mkdirSync, readFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';

const root = new URL('..', import.meta.url).pathname;
const dir = join(root, 'stress-results');
mkdirSync(dir, { recursive: true });
const results = join(dir, `${new Date().toISOString().replace(/[:.]/g, '-')}.jsonl`);
const filters = process.argv.slice(2).map((f) => `stress/${f}`);
const pg = process.env.TILTH_STRESS_DATABASE_URL ?? process.env.DATABASE_URL;

let failed = false;
for (const databaseUrl of [null, ...(pg ? [pg] : [])]) {
  console.log(`== Stress tests on ${databaseUrl ? 'PostgreSQL' : 'SQLite'}`);
  const env = { ...process.env, TILTH_STRESS: 'full', TILTH_STRESS_RESULTS: results, TILTH_TEST_CONCURRENCY: '1' };
  delete env.DATABASE_URL;
  if (databaseUrl) env.DATABASE_URL = databaseUrl;
  const run = spawnSync(
    process.execPath,
    [join(root, 'scripts/run-tests.js'), ...(filters.length ? filters : ['stress/'])],
    { cwd: root, stdio: 'inherit', env },
  );
  if (run.status !== 0) failed = true;
}
if (!pg) console.log('(PostgreSQL skipped: set TILTH_STRESS_DATABASE_URL=postgres://… to run there too.)');

console.log(`\n== Figures (${results})`);
if (existsSync(results)) {
  for (const line of readFileSync(results, 'utf8').split('\n').filter(Boolean)) {
    const { name, database, full: _full, ...figures } = JSON.parse(line);
    console.log(
      `${database.padEnd(8)} ${name.padEnd(22)} ${Object.entries(figures)
        .map(([k, v]) => `${k}=${v}`)
        .join(' ')}`,
    );
  }
}
process.exit(failed ? 1 : 0);
