// Generated code imports only the runtime's public surface, and the runtime never imports the generator (issue 2, item 5);
// the runtime's layers point one way, down (issue 9, item 1).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, resolve, dirname } from 'node:path';
import { ROOT } from '../support/project.ts';

function tsFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const full = join(dir, name);
    return statSync(full).isDirectory() ? tsFiles(full) : name.endsWith('.ts') ? [full] : [];
  });
}

const IMPORT =
  /(?:import|export)\s[^'"]*?from\s+['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)|^import\s+['"]([^'"]+)['"]/gm;

function importsOf(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  return [...text.matchAll(IMPORT)].map((m) => m[1] ?? m[2] ?? m[3]!);
}

test('generated code imports only runtime/public.ts, other generated files and type-only packages', () => {
  const publicSurface = join(ROOT, 'runtime', 'public.ts');
  for (const file of tsFiles(join(ROOT, 'generated'))) {
    for (const spec of importsOf(file)) {
      if (!spec.startsWith('.')) {
        assert.equal(spec, 'knex', `${relative(ROOT, file)} imports the package ${spec}`);
        continue;
      }
      const target = resolve(dirname(file), spec);
      const inGenerated = target.startsWith(join(ROOT, 'generated') + '/');
      assert.ok(
        inGenerated || target === publicSurface,
        `${relative(ROOT, file)} imports ${spec}, which is neither generated nor runtime/public.ts`,
      );
    }
  }
});

test('the runtime never imports the generator', () => {
  for (const file of tsFiles(join(ROOT, 'runtime'))) {
    for (const spec of importsOf(file)) {
      const target = spec.startsWith('.') ? resolve(dirname(file), spec) : spec;
      assert.ok(!target.startsWith(join(ROOT, 'generator')), `${relative(ROOT, file)} imports ${spec}`);
    }
  }
});

/**
 * The layers of the runtime, bottom to top (ARCHITECTURE.md). A file may import its own rank and
 * the ranks below it, never one above. Every folder and top-level file of runtime/ has a rank; so
 * has generated/, which runtime/generated.ts loads and which imports only runtime/public.ts.
 */
const RANKS: ReadonlyArray<{ name: string; paths: readonly string[] }> = [
  // Imports nothing of the runtime: plain values, errors, the version, the settings.
  { name: 'values', paths: ['runtime/values', 'runtime/errors.ts', 'runtime/version.ts', 'runtime/config.ts'] },
  // The data model the generator emits (the registry reads the settings), and the types of the
  // definitions format it is made from (generated from the meta-schema, types only).
  { name: 'model', paths: ['runtime/model', 'generated/meta-schema.ts'] },
  // Records in the database and files on disk; the public surface and what the generator made of it.
  {
    name: 'storage',
    paths: ['runtime/storage', 'runtime/files', 'runtime/public.ts', 'runtime/generated.ts', 'generated'],
  },
  { name: 'access', paths: ['runtime/access'] },
  { name: 'accounts', paths: ['runtime/accounts'] },
  // farmOS's behaviour, and loading records with their computed fields (farm/loader.ts).
  { name: 'farm', paths: ['runtime/farm'] },
  // Saving records; and the context every face is handed (it names storage, model and accounts).
  { name: 'entities', paths: ['runtime/entities', 'runtime/context.ts'] },
  // The commands every face runs on records (view, create, update, delete with a version, attach a
  // file), each its sequence of lock, precondition, access, save and reload written once.
  { name: 'usecases', paths: ['runtime/usecases'] },
  // The HTTP faces: side by side, JSON:API and OAuth never import each other (APART below); the
  // web interface reads and saves through the JSON:API face's parts and signs in with OAuth's session.
  { name: 'faces', paths: ['runtime/jsonapi', 'runtime/oauth', 'runtime/web'] },
  // The Express application; imports save as the JSON:API face saves, and copying a farm in reads as it reads.
  { name: 'http', paths: ['runtime/http', 'runtime/imports', 'runtime/farmos-import'] },
  { name: 'top', paths: ['runtime/cli', 'runtime/server.ts', 'runtime/host'] },
];

/** Places of one rank that must not import each other. */
const APART: ReadonlyArray<readonly [string, string]> = [['runtime/jsonapi', 'runtime/oauth']];

interface Place {
  path: string;
  rank: number;
  name: string;
}

/** The ranked place a file (a path relative to the checkout) belongs to, or null when none. */
function placeOf(file: string): Place | null {
  for (const [rank, { name, paths }] of RANKS.entries()) {
    for (const path of paths) if (file === path || file.startsWith(path + '/')) return { path, rank, name };
  }
  return null;
}

/** Every import that runs up, or between places kept apart, or to or from an unranked place; empty when the layers hold. */
function layerViolations(importsByFile: ReadonlyMap<string, readonly string[]>): string[] {
  const out: string[] = [];
  for (const [file, specs] of importsByFile) {
    const from = placeOf(file);
    if (!from) {
      out.push(`${file} is in no rank: add its folder to RANKS in test/generator/layers.test.ts`);
      continue;
    }
    for (const spec of specs) {
      if (!spec.startsWith('.')) continue;
      const target = relative(ROOT, resolve(ROOT, dirname(file), spec));
      const to = placeOf(target);
      if (!to) out.push(`${file} imports ${spec} (${target}), which is in no rank`);
      else if (to.rank > from.rank)
        out.push(
          `${file} (rank ${from.rank}, ${from.name}) imports ${spec} (rank ${to.rank}, ${to.name}): an import that runs up`,
        );
      else if (APART.some(([a, b]) => (from.path === a && to.path === b) || (from.path === b && to.path === a))) {
        out.push(
          `${file} (${from.path}) imports ${spec} (${to.path}): the two are kept apart at rank ${to.rank}, ${to.name}`,
        );
      }
    }
  }
  return out;
}

test('every folder and top-level file of runtime/ has a rank', () => {
  const unranked = readdirSync(join(ROOT, 'runtime'))
    .map((name) => `runtime/${name}`)
    .filter((path) => (statSync(join(ROOT, path)).isDirectory() || path.endsWith('.ts')) && !placeOf(path));
  assert.deepEqual(unranked, [], `unranked: ${unranked.join(', ')} (add them to RANKS)`);
});

test('runtime imports point down the rank table, never up', () => {
  const imports = new Map(tsFiles(join(ROOT, 'runtime')).map((file) => [relative(ROOT, file), importsOf(file)]));
  const violations = layerViolations(imports);
  assert.deepEqual(violations, [], violations.join('\n'));
});

test('the layer check names an upward import, an import between faces and an unranked folder', () => {
  const violations = layerViolations(
    new Map([
      ['runtime/farm/x.ts', ['../jsonapi/loader.ts', '../storage/records.ts']],
      ['runtime/oauth/bearer.ts', ['../jsonapi/router.ts']],
      ['runtime/elsewhere/y.ts', []],
    ]),
  );
  assert.deepEqual(violations, [
    'runtime/farm/x.ts (rank 5, farm) imports ../jsonapi/loader.ts (rank 8, faces): an import that runs up',
    'runtime/oauth/bearer.ts (runtime/oauth) imports ../jsonapi/router.ts (runtime/jsonapi): the two are kept apart at rank 8, faces',
    'runtime/elsewhere/y.ts is in no rank: add its folder to RANKS in test/generator/layers.test.ts',
  ]);
});
