/**
 * One migration list for both databases: the generated migrations (the data model) first, then
 * the runtime's own (accounts, tokens, revisions). Knex records each by name; a database that
 * records a name this code does not know was migrated by newer code and is refused.
 */
import type { Knex } from 'knex';
import { coreMigrations } from './core-migrations/index.ts';

export interface GeneratedMigration {
  name: string;
  up(knex: Knex): Promise<void>;
  down(knex: Knex): Promise<void>;
}

interface NamedMigration {
  name: string;
  up(knex: Knex): Promise<void>;
  down(knex: Knex): Promise<void>;
}

const MIGRATIONS_TABLE = 'knex_migrations';

export function allMigrations(generated: GeneratedMigration[]): NamedMigration[] {
  return [...generated.map((m) => ({ ...m, name: `model/${m.name}` })), ...coreMigrations.map((m) => ({ ...m, name: `core/${m.name}` }))];
}

function source(migrations: NamedMigration[]): Knex.MigrationSource<NamedMigration> {
  return {
    getMigrations: async () => migrations,
    getMigrationName: (m) => m.name,
    getMigration: async (m) => ({ up: m.up, down: m.down }),
  };
}

export interface MigrationStatus {
  applied: string[];
  pending: string[];
  /** Applied in the database but unknown to this code. */
  unknown: string[];
}

export async function migrationStatus(knex: Knex, generated: GeneratedMigration[]): Promise<MigrationStatus> {
  const names = allMigrations(generated).map((m) => m.name);
  const applied = (await knex.schema.hasTable(MIGRATIONS_TABLE)) ? (await knex(MIGRATIONS_TABLE).select('name').orderBy('id')).map((r: { name: string }) => r.name) : [];
  const appliedSet = new Set(applied);
  return {
    applied,
    pending: names.filter((n) => !appliedSet.has(n)),
    unknown: applied.filter((n) => !names.includes(n)),
  };
}

/** Apply every pending migration, each in its own transaction. Returns the names applied. */
export async function migrateLatest(knex: Knex, generated: GeneratedMigration[]): Promise<string[]> {
  const status = await migrationStatus(knex, generated);
  if (status.unknown.length) throw new MigrationMismatchError(status);
  const [, log] = (await knex.migrate.latest({ migrationSource: source(allMigrations(generated)), tableName: MIGRATIONS_TABLE })) as [number, string[]];
  return log;
}

export class MigrationMismatchError extends Error {
  constructor(readonly status: MigrationStatus) {
    super(
      status.unknown.length
        ? `The database has ${status.unknown.length} migration(s) that this copy of Tilth does not know (${status.unknown.slice(0, 3).join(', ')}${status.unknown.length > 3 ? ', …' : ''}). ` +
            `It was migrated by a newer Tilth: update this one (git pull && npm ci), or point DATABASE_URL / TILTH_DATA_DIR at another database.`
        : `The database is ${status.pending.length} migration(s) behind generated/ (next: ${status.pending[0]}). Run \`npx tilth migrate\`, or start with \`npm start\`, which migrates first.`,
    );
    this.name = 'MigrationMismatchError';
  }
}

/** Refuse to serve a database that is ahead of or behind the code. */
export async function assertMigrated(knex: Knex, generated: GeneratedMigration[]): Promise<void> {
  const status = await migrationStatus(knex, generated);
  if (status.unknown.length || status.pending.length) throw new MigrationMismatchError(status);
}
