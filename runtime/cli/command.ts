/** A small command framework over node:util parseArgs: each command declares options and help. */
import { parseArgs, type ParseArgsConfig } from 'node:util';

export interface Command {
  /** Words that select it, e.g. ['user', 'create']. */
  name: string[];
  summary: string;
  usage: string;
  options: NonNullable<ParseArgsConfig['options']>;
  /** Whether it takes arguments besides options (e.g. a file name). */
  positionals?: boolean;
  run(values: Record<string, string | boolean | string[] | undefined>, positionals?: string[]): Promise<number>;
}

/** A mistake in how a command was called: printed with the usage, exit code 2. */
export class UsageError extends Error {}

export function parseCommandArgs(
  command: Command,
  argv: string[],
): { values: Record<string, string | boolean | string[] | undefined>; positionals: string[] } {
  const parsed = parseArgs({
    args: argv,
    options: { ...command.options, help: { type: 'boolean', short: 'h' } },
    allowPositionals: Boolean(command.positionals),
    strict: true,
  });
  return {
    values: parsed.values as Record<string, string | boolean | string[] | undefined>,
    positionals: parsed.positionals,
  };
}

export function requireOption(values: Record<string, unknown>, name: string): string {
  const v = values[name];
  if (typeof v !== 'string' || v === '') throw new UsageError(`--${name} is required.`);
  return v;
}

/**
 * Run a command body; an error of one of the `expected` kinds is the user's mistake (a rule the
 * input breaks): its message on stderr and exit code 1. Any other error is a fault and rethrown.
 */
export async function reportingMistakes(
  expected: ReadonlyArray<abstract new (...args: never[]) => Error>,
  fn: () => Promise<void>,
): Promise<number> {
  try {
    await fn();
    return 0;
  } catch (error) {
    if (expected.some((kind) => error instanceof kind)) {
      process.stderr.write(`${(error as Error).message}\n`);
      return 1;
    }
    throw error;
  }
}
