/**
 * The database of a command: opened from the one configuration the server uses, only if it
 * already exists (see openExistingDatabase), migrated to this code, and named on stderr so that a
 * person sees which farm a command touched while scripts still read stdout alone.
 */
import type { Knex } from 'knex';
import { describeDatabase, loadConfig, type Config } from '../config.ts';
import type { AppContext } from '../context.ts';
import { ModelRegistry } from '../model/registry.ts';
import { createLogger } from '../http/logging.ts';
import { PasswordGuard } from '../accounts/password-guard.ts';
import { usePasswordHashCost } from '../accounts/passwords.ts';
import { BodyLimits } from '../access/body-limits.ts';
import { RateLimiter } from '../access/rate-limiter.ts';
import { openExistingDatabase, type Database } from '../storage/database.ts';
import { assertMigrated } from '../storage/migrations.ts';
import { loadGenerated, type GeneratedArtifacts } from '../generated.ts';

/** The configured database, opened if it exists, named on stderr and checked to be migrated, for `fn`; closed after. */
async function withMigratedDatabase<T>(fn: (opened: { config: Config; db: Database; generated: GeneratedArtifacts }) => Promise<T>): Promise<T> {
  const config = loadConfig();
  usePasswordHashCost(config.passwordHash);
  const db = await openExistingDatabase(config);
  try {
    process.stderr.write(`Using the ${describeDatabase(config)}.\n`);
    const generated = await loadGenerated(undefined, config.siteDir);
    await assertMigrated(db.knex, generated.migrations);
    return await fn({ config, db, generated });
  } finally {
    await db.close();
  }
}

export function withExistingDatabase<T>(fn: (knex: Knex) => Promise<T>): Promise<T> {
  return withMigratedDatabase(({ db }) => fn(db.knex));
}

/**
 * The application context of a running server, for commands that save records the way the API
 * does (imports): the same model, validation and farm behaviour, without listening.
 */
export function withAppContext<T>(fn: (ctx: AppContext) => Promise<T>): Promise<T> {
  return withMigratedDatabase(({ config, db, generated }) =>
    fn({
      config,
      db,
      registry: new ModelRegistry(generated.model, config.modules),
      generated,
      logger: createLogger('silent'),
      passwords: new PasswordGuard(new RateLimiter(config.rateLimit.perUsername, config.rateLimit.windowSeconds)),
      bodies: new BodyLimits({ stallMs: config.bodyTimeoutSeconds * 1000, budgetBytes: config.bodyBudgetBytes }),
      internalUrl: '',
    }),
  );
}
