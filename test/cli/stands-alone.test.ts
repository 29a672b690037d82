// A clone of the project with nothing beside it passes `npm ci && npm test` (module-author issue,
// Part B item 1): no test, script, benchmark or build step reads the team's reference material
// beside the project root. What a test needs of it is copied into test/fixtures/.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { ROOT } from '../support/project.ts';

/** Where the project's code lives (generated/ and the definitions are code too). */
const FOLDERS = ['.ci', 'bench', 'bin', 'deploy', 'generated', 'generator', 'runtime', 'scripts', 'test'];
const CODE = /\.(ts|js|mjs|cjs|sh|json|ya?ml)$|^run$/;
/** A path to the folder beside the root, written out with its slash or as path.join's arguments ('..', 'shared'). */
const OUTSIDE = /\.\.\/shared\b|['"]\.\.['"]\s*,\s*['"]shared['"]/;

function files(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    if (name === 'node_modules' || name.startsWith('.tilth-test-')) continue;
    const full = join(dir, name);
    if (statSync(full).isDirectory()) out.push(...files(full));
    else if (CODE.test(name)) out.push(full);
  }
  return out;
}

test('no code of the project reads the reference material beside its root', () => {
  const offenders: string[] = [];
  for (const folder of FOLDERS) {
    for (const file of files(join(ROOT, folder))) {
      readFileSync(file, 'utf8')
        .split('\n')
        .forEach((line, i) => {
          // Comments may say where a fixture came from; code may not go there.
          if (/^\s*(\/\/|\/?\*|#)/.test(line)) return;
          if (OUTSIDE.test(line)) offenders.push(`${relative(ROOT, file)}:${i + 1}: ${line.trim()}`);
        });
    }
  }
  assert.deepEqual(offenders, [], 'read from test/fixtures/ instead');
});

test('the reference schemas the parity test compares against are in the repository', () => {
  const dir = join(ROOT, 'test', 'fixtures', 'farmos-schemata');
  const bundles = ['asset', 'log', 'quantity', 'taxonomy_term', 'user'].flatMap((entity) =>
    readdirSync(join(dir, entity)).map((f) => `${entity}/${f}`),
  );
  assert.ok(bundles.length >= 20, `${bundles.length} reference schemas`);
  assert.ok(statSync(join(dir, 'raw-server-response-log--activity.json')).size > 0);
});
