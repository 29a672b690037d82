/**
 * A scratch copy of the project's definitions/ (and optionally generated/) for generator tests.
 * It lives inside the checkout (git-ignored) with `runtime` linked, so that generated code there
 * imports the real runtime exactly as generated/ does.
 */
import { cpSync, mkdtempSync, rmSync, symlinkSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

export const ROOT = resolve(import.meta.dirname, '..', '..');

export interface ScratchProject {
  root: string;
  read(path: string): string;
  write(path: string, text: string): void;
  remove(): void;
}

export function scratchProject(options: { withGenerated?: boolean; from?: string } = {}): ScratchProject {
  const source = options.from ?? ROOT;
  const root = mkdtempSync(join(ROOT, '.tilth-test-'));
  cpSync(join(source, 'definitions'), join(root, 'definitions'), { recursive: true });
  if (options.withGenerated) cpSync(join(source, 'generated'), join(root, 'generated'), { recursive: true });
  symlinkSync(join(ROOT, 'runtime'), join(root, 'runtime'), 'dir');
  return {
    root,
    read: (path) => readFileSync(join(root, path), 'utf8'),
    write: (path, text) => writeFileSync(join(root, path), text),
    remove: () => rmSync(root, { recursive: true, force: true }),
  };
}
