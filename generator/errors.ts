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
