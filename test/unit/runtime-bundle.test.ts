// The runtime's bundle (bin/runtime-bundle.js) is used only while it was made from the sources as
// they are: a stale bundle would serve old code. Checked on a project of two files, with the real
// esbuild, so that it is cheap; the CLI tests run the real runtime's bundle.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
// @ts-expect-error: a JavaScript module of bin/ (run without a TypeScript loader), untyped here.
import { bundleKey, runtimeBundle, ROOT } from '../../bin/runtime-bundle.js';

const build = runtimeBundle as (options: { root: string; build?: boolean }) => Promise<string | null>;
const key = bundleKey as (root: string, inputs: string[], read?: (path: string) => string) => string | null;

/** A project with runtime/cli/main.ts importing runtime/part.ts, which says what it is and where. */
function project(): { root: string; write(text: string): void; remove(): void } {
  const root = mkdtempSync(join(tmpdir(), 'tilth-bundle-'));
  mkdirSync(join(root, 'runtime', 'cli'), { recursive: true });
  writeFileSync(join(root, 'package.json'), '{ "type": "module" }');
  symlinkSync(join(ROOT, 'node_modules'), join(root, 'node_modules'), 'dir');
  writeFileSync(
    join(root, 'runtime', 'cli', 'main.ts'),
    "import { part } from '../part.ts';\nexport const said: string = part;\n",
  );
  const write = (text: string) =>
    writeFileSync(
      join(root, 'runtime', 'part.ts'),
      `export const part: string = ${JSON.stringify(text)} + ' at ' + import.meta.url;\n`,
    );
  write('first');
  return { root, write, remove: () => rmSync(root, { recursive: true, force: true }) };
}

const said = async (url: string) => ((await import(url)) as { said: string }).said;

test('a bundle is used while its sources are unchanged, and made again after an edit: never the old code', async () => {
  const p = project();
  try {
    assert.equal(await build({ root: p.root, build: false }), null, 'none yet');
    const first = await build({ root: p.root });
    assert.ok(first);
    // import.meta.url is the source file's own, not the bundle's.
    assert.equal(await said(first), `first at ${pathToFileURL(join(p.root, 'runtime', 'part.ts')).href}`);
    assert.equal(await build({ root: p.root, build: false }), first, 'fresh: used as it is');

    p.write('fresh'); // the same length: only the content differs
    assert.equal(await build({ root: p.root, build: false }), null, 'an edited source makes it stale');
    const second = await build({ root: p.root });
    assert.ok(second && second !== first);
    assert.match(await said(second), /^fresh at /);

    // Back to the first content (an undo, a checkout): the first bundle's key again, whatever the file times say.
    p.write('first');
    assert.equal(await build({ root: p.root, build: false }), null);
    assert.equal(await build({ root: p.root }), first);
  } finally {
    p.remove();
  }
});

test('a source that no longer builds gives no bundle (bin/tilth.js then runs the sources through tsx), not the last good one', async () => {
  const p = project();
  try {
    assert.ok(await build({ root: p.root }));
    writeFileSync(
      join(p.root, 'runtime', 'cli', 'main.ts'),
      "import { part } from '../gone.ts';\nexport const said = part;\n",
    );
    assert.equal(await build({ root: p.root }), null);
    assert.equal(await build({ root: p.root, build: false }), null);
  } finally {
    p.remove();
  }
});

test("a bundle's key covers each input's content and name, and the project's place (a copy must not run the original's files)", async () => {
  const files: Record<string, string> = { '/p/a.ts': 'a', '/p/b.ts': 'b' };
  const read = (path: string) => {
    if (!(path in files)) throw new Error('ENOENT');
    return files[path]!;
  };
  const base = key('/p', ['a.ts', 'b.ts'], read);
  assert.match(base!, /^[0-9a-f]{32}$/);
  assert.equal(key('/p', ['a.ts', 'b.ts'], read), base);
  files['/p/b.ts'] = 'B';
  assert.notEqual(key('/p', ['a.ts', 'b.ts'], read), base);
  files['/p/b.ts'] = 'b';
  // The same bytes split differently between two files.
  files['/p/a.ts'] = 'ab';
  files['/p/b.ts'] = '';
  assert.notEqual(key('/p', ['a.ts', 'b.ts'], read), base);
  assert.equal(key('/p', ['a.ts', 'gone.ts'], read), null, 'a missing input: stale');
  files['/q/a.ts'] = 'a';
  files['/q/b.ts'] = 'b';
  files['/p/a.ts'] = 'a';
  files['/p/b.ts'] = 'b';
  assert.notEqual(key('/q', ['a.ts', 'b.ts'], read), base);
  // The real project's bundle is made from its sources: the CLI's entry and the generated/ it serves among them.
  assert.ok(await build({ root: ROOT }));
  const manifest = JSON.parse(readFileSync(join(ROOT, '.cache', 'runtime', 'manifest.json'), 'utf8')) as {
    inputs: string[];
  };
  for (const input of [
    'runtime/cli/main.ts',
    'runtime/server.ts',
    'generated/routes.ts',
    'generated/descriptors/index.ts',
    'generated/migrations/index.ts',
  ])
    assert.ok(manifest.inputs.includes(input), input);
});
