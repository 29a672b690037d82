import { isAbsolute, relative } from 'node:path';

/** A path as messages show it: relative to the project root, or absolute when outside it (a site folder elsewhere). */
export function shownPath(root: string, full: string): string {
  const rel = relative(root, full);
  return rel.startsWith('..') || isAbsolute(rel) ? full : rel;
}

/** A mistake in a definition file, reported as `file:line: sentence` (`file:line:column:` for YAML syntax) and never as a stack trace. */
export class DefinitionError extends Error {
  constructor(
    readonly file: string,
    readonly line: number | undefined,
    readonly sentence: string,
    readonly column?: number,
  ) {
    super(`${file}${line ? `:${line}${column ? `:${column}` : ''}` : ''}: ${sentence}`);
    this.name = 'DefinitionError';
  }
}

/** Several definition mistakes at once, so an author can fix them in one pass. */
export class DefinitionErrors extends Error {
  constructor(readonly errors: DefinitionError[]) {
    super(errors.map((e) => e.message).join('\n'));
    this.name = 'DefinitionErrors';
  }
}
