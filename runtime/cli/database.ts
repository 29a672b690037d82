/**
 * The database of a command: opened from the one configuration the server uses, only if it
 * already exists (see openExistingDatabase), migrated to this code, and named on stderr so that a
 * person sees which farm a command touched while scripts still read stdout alone.
 */
import type { Knex } from 'knex';
import { describeDatabase, loadConfig } from '../config.ts';
import type { AppContext } from '../context.ts';
import { ModelRegistry } from '../model/registry.ts';
import { createLogger } from '../http/logging.ts';
import { PasswordGuard } from '../accounts/password-guard.ts';
import { RateLimiter } from '../access/rate-limiter.ts';
import { openExistingDatabase } from '../storage/database.ts';
import { assertMigrated } from '../storage/migrations.ts';
import { loadGenerated } from '../generated.ts';

export async function withExistingDatabase<T>(fn: (knex: Knex) => Promise<T>): Promise<T> {
  const config = loadConfig();
  const db = await openExistingDatabase(config);
  try {
    process.stderr.write(`Using the ${describeDatabase(config)}.\n`);
    await assertMigrated(db.knex, (await loadGenerated()).migrations);
    return await fn(db.knex);
  } finally {
    await db.close();
  }
}

/**
 * The application context of a running server, for commands that save records the way the API
 * does (imports): the same model, validation and farm behaviour, without listening.
 */
export async function withAppContext<T>(fn: (ctx: AppContext) => Promise<T>): Promise<T> {
  const config = loadConfig();
  const db = await openExistingDatabase(config);
  try {
    process.stderr.write(`Using the ${describeDatabase(config)}.\n`);
    const generated = await loadGenerated();
    await assertMigrated(db.knex, generated.migrations);
    const ctx: AppContext = {
      config,
      db,
      registry: new ModelRegistry(generated.model, config.modules),
      generated,
      logger: createLogger('silent'),
      passwords: new PasswordGuard(new RateLimiter(config.rateLimit.perUsername, config.rateLimit.windowSeconds)),
      internalUrl: '',
    };
    return await fn(ctx);
  } finally {
    await db.close();
  }
}
