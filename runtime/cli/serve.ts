/** `tilth serve` and `tilth migrate`. */
import type { Command } from './command.ts';
import { describeDatabase, loadConfig } from '../config.ts';
import { startServer } from '../server.ts';
import { createLogger } from '../http/logging.ts';
import { migrateLatest, migrationStatus } from '../storage/migrations.ts';
import { withStartLock } from '../storage/process-lock.ts';
import { createProcess } from '../host/process.ts';
import { openFarm } from '../host/farm.ts';

export const serveCommand: Command = {
  name: ['serve'],
  summary: 'Serve the API. Refuses a database whose migrations differ from generated/ unless --migrate is given.',
  usage: 'tilth serve [--migrate]',
  options: {
    migrate: { type: 'boolean', description: 'apply pending migrations first (npm start does this)' },
  } as Command['options'],
  async run(values) {
    const config = loadConfig();
    const logger = createLogger(config.logLevel, config.logFormat);
    // Start-up lines go to the log like everything else; a generated password only to the terminal.
    const announce = (line: string, { secret = false }: { secret?: boolean } = {}) =>
      secret ? process.stdout.write(`${line}\n`) : logger.info(line);
    // A setting to fix is said on stderr too, where a person at the terminal sees it whatever the log.
    const warn = (line: string) => process.stderr.write(`Warning: ${line}\n`);
    const running = await startServer({ config, logger, migrate: Boolean(values.migrate), announce, warn });
    const stop = async (signal: string) => {
      logger.info(`Received ${signal}; shutting down.`);
      await running.close();
      process.exit(0);
    };
    process.once('SIGINT', () => void stop('SIGINT'));
    process.once('SIGTERM', () => void stop('SIGTERM'));
    await new Promise(() => {});
    return 0;
  },
};

export const migrateCommand: Command = {
  name: ['migrate'],
  summary: 'Apply pending migrations to the configured database (--status to list them only).',
  usage: 'tilth migrate [--status]',
  options: {
    status: { type: 'boolean', description: 'list applied and pending migrations without applying any' },
  } as Command['options'],
  async run(values) {
    const config = loadConfig();
    // Opened as the server opens it (host/farm.ts), created if missing, not yet checked.
    const farm = await openFarm(createProcess(config, { logger: createLogger('silent') }), config, {
      use: 'migrate',
      opened: () => process.stdout.write(`Using the ${describeDatabase(config)}.\n`),
    });
    const { db, generated } = farm;
    try {
      if (values.status) {
        const status = await migrationStatus(db.knex, generated.migrations);
        for (const name of status.applied) {
          const unknown = name.startsWith('site/')
            ? "the farm's own, from another site folder"
            : 'it was applied by a newer one';
          process.stdout.write(
            `applied  ${name}${status.unknown.includes(name) ? `  (unknown to this copy of Tilth: ${unknown})` : ''}\n`,
          );
        }
        for (const name of status.pending) process.stdout.write(`pending  ${name}\n`);
        process.stdout.write(
          `${status.applied.length} applied, ${status.pending.length} pending.${status.pending.length ? ' Run `npx tilth migrate` to apply them.' : ''}\n`,
        );
        return status.unknown.length ? 1 : 0;
      }
      // Under the start lock: a server starting meanwhile waits, then finds the database migrated.
      const notes = new Map<string, string[]>();
      const applied = await withStartLock(db, () => migrateLatest(db.knex, generated.migrations, notes));
      const lines = applied.map((n) => [`  ${n}`, ...(notes.get(n) ?? []).map((note) => `    ${note}`)].join('\n'));
      process.stdout.write(
        applied.length
          ? `Applied ${applied.length} migration(s):\n${lines.join('\n')}\n`
          : 'The database is up to date.\n',
      );
      return 0;
    } finally {
      await farm.close();
    }
  },
};
