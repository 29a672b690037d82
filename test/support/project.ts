/**
 * A scratch copy of the project's definitions/ (and optionally generated/) for generator tests.
 * It lives inside the checkout (git-ignored) with `runtime` linked, so that generated code there
 * imports the real runtime exactly as generated/ does.
 */
import { cpSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';

export const ROOT = resolve(import.meta.dirname, '..', '..');

export interface ScratchProject {
  root: string;
  read(path: string): string;
  write(path: string, text: string): void;
  remove(): void;
}

/**
 * `withCode` copies the code too (runtime/, generator/, bin/, package.json; node_modules linked),
 * so that `node <root>/bin/tilth.js …` runs that copy as a checkout of its own: its generated/ and
 * its default site/, as a farm's clone is upgraded.
 */
export function scratchProject(
  options: { withGenerated?: boolean; withCode?: boolean; from?: string } = {},
): ScratchProject {
  const source = options.from ?? ROOT;
  const root = mkdtempSync(join(ROOT, '.tilth-test-'));
  cpSync(join(source, 'definitions'), join(root, 'definitions'), { recursive: true });
  if (options.withGenerated) cpSync(join(source, 'generated'), join(root, 'generated'), { recursive: true });
  if (options.withCode) {
    for (const part of ['runtime', 'generator', 'bin', 'package.json', 'tsconfig.json'])
      cpSync(join(ROOT, part), join(root, part), { recursive: true });
    symlinkSync(join(ROOT, 'node_modules'), join(root, 'node_modules'), 'dir');
  } else symlinkSync(join(ROOT, 'runtime'), join(root, 'runtime'), 'dir');
  return {
    root,
    read: (path) => readFileSync(join(root, path), 'utf8'),
    write: (path, text) => {
      mkdirSync(dirname(join(root, path)), { recursive: true });
      writeFileSync(join(root, path), text);
    },
    remove: () => rmSync(root, { recursive: true, force: true }),
  };
}
