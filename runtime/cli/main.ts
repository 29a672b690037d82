/** `tilth <command>`: the runtime's command line. `tilth generate` is handled by generator/cli.ts. */
import { serveCommand, migrateCommand } from './serve.ts';
import { userCommands } from './users.ts';
import { backupCommands } from './backup.ts';
import { importCommands } from './import.ts';
import { importFarmosCommand } from './import-farmos.ts';
import { ImportError } from '../imports/run.ts';
import { BackupError } from '../storage/backup.ts';
import { SqliteInUseError } from '../storage/process-lock.ts';
import { clientCommands } from './clients.ts';
import { fieldKitCommands } from './fieldkit.ts';
import { parseCommandArgs, UsageError, type Command } from './command.ts';
import { ConfigError } from '../config.ts';
import { AccountError } from '../accounts/users.ts';
import { GeneratedLoadError, SiteOutputError } from '../generated.ts';
import { MigrationChecksumError, MigrationFailedError, MigrationMismatchError } from '../storage/migrations.ts';
import { TILTH_API_VERSION, TILTH_VERSION } from '../version.ts';

const commands: Command[] = [
  serveCommand,
  migrateCommand,
  ...backupCommands,
  ...importCommands,
  importFarmosCommand,
  ...userCommands,
  ...clientCommands,
  ...fieldKitCommands,
];

const GENERATE = { name: ['generate'], summary: 'Regenerate generated/ from definitions/ (--check to verify only).' };

function overview(): string {
  const width = Math.max(...[...commands, GENERATE].map((c) => c.name.join(' ').length));
  const lines = [...commands, GENERATE].map((c) => `  ${c.name.join(' ').padEnd(width)} ${c.summary}`);
  return `Usage: tilth <command> [options]\n\nCommands:\n${lines.join('\n')}\n\nRun \`tilth <command> --help\` for the options of one command, \`tilth --version\` for the version.\n`;
}

async function main(argv: string[]): Promise<number> {
  if (argv[0] === '--version' || argv[0] === '-v' || argv[0] === 'version') {
    process.stdout.write(`tilth ${TILTH_VERSION} (farmOS API ${TILTH_API_VERSION})\n`);
    return 0;
  }
  if (argv.length === 0 || argv[0] === '--help' || argv[0] === '-h' || argv[0] === 'help') {
    process.stdout.write(overview());
    return argv.length === 0 ? 2 : 0;
  }
  const command = commands
    .filter((c) => c.name.every((word, i) => argv[i] === word))
    .sort((a, b) => b.name.length - a.name.length)[0];
  if (!command) {
    process.stderr.write(`Unknown command "${argv.join(' ')}".\n\n${overview()}`);
    return 2;
  }
  const rest = argv.slice(command.name.length);
  try {
    const { values, positionals } = parseCommandArgs(command, rest);
    if (values.help) {
      process.stdout.write(`Usage: ${command.usage}\n\n${command.summary}\n\n${describeOptions(command)}`);
      return 0;
    }
    return await command.run(values, positionals);
  } catch (error) {
    // `code` is not always a string: a DOMException's (a fetch's timeout) is a number.
    const parseError =
      typeof (error as { code?: unknown }).code === 'string' &&
      (error as { code: string }).code.startsWith('ERR_PARSE_ARGS');
    if (error instanceof UsageError || parseError) {
      process.stderr.write(`${(error as Error).message}\n\nUsage: ${command.usage}\n${describeOptions(command)}`);
      return 2;
    }
    // A bad setting: one line naming it, exit code 2 (the same as a wrong command line).
    if (error instanceof ConfigError) {
      process.stderr.write(`${error.message}\n`);
      return 2;
    }
    if (
      error instanceof AccountError ||
      error instanceof MigrationMismatchError ||
      error instanceof MigrationChecksumError ||
      error instanceof MigrationFailedError ||
      error instanceof GeneratedLoadError ||
      error instanceof SiteOutputError ||
      error instanceof BackupError ||
      error instanceof ImportError ||
      error instanceof SqliteInUseError
    ) {
      process.stderr.write(`${error.message}\n`);
      return 1;
    }
    const code = (error as { code?: string }).code;
    if (code === 'EADDRINUSE' || code === 'EACCES') {
      process.stderr.write(
        `Cannot listen on ${process.env.HOST || '127.0.0.1'}:${process.env.PORT || 8080}: ${code === 'EADDRINUSE' ? 'the port is in use' : 'permission denied'}. Choose another with PORT=….\n`,
      );
      return 1;
    }
    if (
      code === 'ECONNREFUSED' ||
      code === 'ENOTFOUND' ||
      code === 'EAI_AGAIN' ||
      code === '28P01' ||
      code === '28000' ||
      code === '3D000'
    ) {
      process.stderr.write(
        `DATABASE_URL: cannot use that database: ${(error as Error).message.split('\n')[0]}${code === '3D000' ? createDatabaseHint() : ''}\n`,
      );
      return 2;
    }
    throw error;
  }
}

/** Tilth creates the tables, never the database itself (its user may not be allowed to): the statement that does. */
function createDatabaseHint(): string {
  let name = '';
  try {
    name = decodeURIComponent(new URL(process.env.DATABASE_URL ?? '').pathname.slice(1));
  } catch {
    // Not a URL: the hint goes without the name.
  }
  const quoted = /^[a-z_][a-z0-9_]*$/.test(name) ? name : `"${name.replace(/"/g, '""')}"`;
  return `; create it with \`CREATE DATABASE ${name ? quoted : '…'};\` (psql, as a user allowed to), then run the command again`;
}

function describeOptions(command: Command): string {
  const options = [
    ...Object.entries(command.options).map(
      ([name, o]) =>
        [`--${name}${o.type === 'string' ? ' VALUE' : ''}`, (o as { description?: string }).description ?? ''] as const,
    ),
    ['--help', 'show this help'] as const,
  ];
  // The descriptions line up two spaces past the longest option, however long a new one is.
  const width = Math.max(24, ...options.map(([option]) => option.length + 2));
  return `Options:\n${options.map(([option, description]) => `  ${option.padEnd(width)}${description}`).join('\n')}\n`;
}

process.exitCode = await main(process.argv.slice(2));
