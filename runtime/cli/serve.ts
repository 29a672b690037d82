/** `tilth serve` and `tilth migrate`. */
import type { Command } from './command.ts';
import { loadConfig } from '../config.ts';
import { startServer } from '../server.ts';
import { openDatabase } from '../storage/database.ts';
import { migrateLatest, migrationStatus } from '../storage/migrations.ts';
import { loadGenerated } from '../generated.ts';

export const serveCommand: Command = {
  name: ['serve'],
  summary: 'Serve the API. Refuses a database whose migrations differ from generated/ unless --migrate is given.',
  usage: 'tilth serve [--migrate]',
  options: {
    migrate: { type: 'boolean', description: 'apply pending migrations first (npm start does this)' },
  } as Command['options'],
  async run(values) {
    const running = await startServer({ migrate: Boolean(values.migrate), announce: (line) => process.stdout.write(`${line}\n`) });
    const stop = async (signal: string) => {
      process.stdout.write(`Received ${signal}; shutting down.\n`);
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
    const generated = await loadGenerated();
    const db = openDatabase(config);
    try {
      if (values.status) {
        const status = await migrationStatus(db.knex, generated.migrations);
        process.stdout.write(`Applied: ${status.applied.length}\nPending: ${status.pending.join(', ') || 'none'}\n`);
        if (status.unknown.length) process.stdout.write(`Unknown to this code: ${status.unknown.join(', ')}\n`);
        return status.unknown.length ? 1 : 0;
      }
      const applied = await migrateLatest(db.knex, generated.migrations);
      process.stdout.write(applied.length ? `Applied ${applied.length} migration(s):\n${applied.map((n) => `  ${n}`).join('\n')}\n` : 'The database is up to date.\n');
      return 0;
    } finally {
      await db.close();
    }
  },
};
