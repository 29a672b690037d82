// The generator is deterministic, stamps its files, and its check mode names stale files (issue 2, item 5).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { generate } from '../../generator/index.ts';
import { STAMP } from '../../generator/emit/stamp.ts';
import { scratchProject, ROOT } from '../support/project.ts';

function walk(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const full = join(dir, name);
    return statSync(full).isDirectory() ? walk(full) : [full];
  });
}

test('the committed generated/ is exactly what the definitions produce', async () => {
  const result = await generate({ root: ROOT, check: true });
  assert.deepEqual(result, {
    changed: [],
    removed: [],
    migrationAdded: null,
    siteMigrationAdded: null,
    indexDiffers: [],
  });
});

test('every generated file is stamped as generated', () => {
  for (const file of walk(join(ROOT, 'generated'))) {
    assert.ok(readFileSync(file, 'utf8').includes(STAMP), `${relative(ROOT, file)} carries the stamp`);
  }
});

test('running the generator twice changes nothing', async () => {
  const project = scratchProject({ withGenerated: true });
  try {
    const first = await generate({ root: project.root });
    assert.deepEqual(first.changed, []);
    const snapshot = walk(join(project.root, 'generated')).map((f) => [f, readFileSync(f, 'utf8')]);
    const second = await generate({ root: project.root });
    assert.deepEqual(second, {
      changed: [],
      removed: [],
      migrationAdded: null,
      siteMigrationAdded: null,
      indexDiffers: [],
    });
    for (const [file, text] of snapshot) assert.equal(readFileSync(file!, 'utf8'), text);
  } finally {
    project.remove();
  }
});

test('check mode names each stale and each extra file and writes nothing', async () => {
  const project = scratchProject({ withGenerated: true });
  try {
    project.write('generated/schemas/log--activity.json', '{}\n');
    project.write('generated/stray.ts', '// nobody generated me\n');
    const harvest = project.read('definitions/log/harvest.yaml');
    project.write(
      'definitions/log/harvest.yaml',
      `${harvest.trimEnd()}\n  grade:\n    type: string\n    label: Grade\n`,
    );
    const result = await generate({ root: project.root, check: true });
    const rel = (p: string) => relative(project.root, join(project.root, p));
    assert.ok(result.changed.includes(rel('generated/schemas/log--activity.json')));
    assert.ok(
      result.changed.includes(rel('generated/schemas/log--harvest.json')),
      'a changed definition makes its schema stale',
    );
    assert.ok(
      result.changed.some((f) => /generated\/migrations\/\d{4}_add_log_grade(_and_more)?\.ts$/.test(f)),
      'and needs a new migration',
    );
    assert.deepEqual(result.removed, [rel('generated/stray.ts')]);
    assert.equal(project.read('generated/schemas/log--activity.json'), '{}\n', 'check mode writes nothing');
  } finally {
    project.remove();
  }
});
