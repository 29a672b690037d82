// Generated code imports only the runtime's public surface, and the runtime never imports the generator (issue 2, item 5).
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

const IMPORT = /(?:import|export)\s[^'"]*?from\s+['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/g;

function importsOf(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  return [...text.matchAll(IMPORT)].map((m) => m[1] ?? m[2]!);
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
      assert.ok(inGenerated || target === publicSurface, `${relative(ROOT, file)} imports ${spec}, which is neither generated nor runtime/public.ts`);
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
