/**
 * The farm of a command: opened from the one configuration the server uses, by the one path the
 * server opens it by (host/farm.ts openFarm), only if its database already exists (see
 * openExistingDatabase), migrated to this code, and named on stderr so that a person sees which
 * farm a command touched while scripts still read stdout alone.
 */
import type { Knex } from 'knex';
import { describeDatabase, loadConfig, type Config } from '../config.ts';
import type { AppContext } from '../context.ts';
import { createLogger } from '../http/logging.ts';
import { createProcess } from '../host/process.ts';
import { openFarm, type Farm } from '../host/farm.ts';

/**
 * The configured farm, opened if its database exists, named on stderr and checked to be migrated,
 * for `fn`; closed after. `use`: `backup` opens it without the migration check (host/farm.ts
 * OpenFarmOptions); `says`: the line on stderr that names it (`Using the <database>.`).
 */
export async function withFarm<T>(
  fn: (farm: Farm) => Promise<T>,
  options: { use?: 'command' | 'backup'; says?: (config: Config) => string } = {},
): Promise<T> {
  const config = loadConfig();
  const says = options.says ?? ((c: Config) => `Using the ${describeDatabase(c)}.`);
  // A command's process logs nothing: what it says goes to stdout and stderr.
  const farm = await openFarm(createProcess(config, { logger: createLogger('silent') }), config, {
    use: options.use ?? 'command',
    opened: () => process.stderr.write(`${says(config)}\n`),
  });
  try {
    return await fn(farm);
  } finally {
    await farm.close();
  }
}

export function withExistingDatabase<T>(fn: (knex: Knex) => Promise<T>): Promise<T> {
  return withFarm((farm) => fn(farm.db.knex));
}

/**
 * The context of the farm a server would serve, for commands that save records the way the API
 * does (imports): the same model, services graph, validation, farm behaviour and rate limiters
 * (in the database on PostgreSQL, counting with the servers'), without listening.
 */
export function withAppContext<T>(fn: (ctx: AppContext) => Promise<T>): Promise<T> {
  return withFarm((farm) => fn(farm.ctx));
}
