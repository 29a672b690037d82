/**
 * One migration list for both databases: the generated migrations (the data model) first, then
 * the runtime's own (accounts, tokens, revisions). Knex records each by name; a database that
 * records a name this code does not know was migrated by newer code and is refused.
 *
 * Applied migrations are checked, not trusted: the checksum of each migration's file is recorded
 * when it is applied (tilth_migration_checksums), and a file that changed since is named and
 * refused, at start and before migrating. Databases migrated before checksums existed have theirs
 * recorded from the files as they are on the next `migrate`.
 */
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Knex } from 'knex';
import { coreMigrations } from './core-migrations/index.ts';
import { dialectOf } from './dialect.ts';
import { collectingNotes } from './value-rewrites.ts';

/** One migration, generated or the runtime's own (core migrations carry no recorded checksum). */
export interface GeneratedMigration {
  name: string;
  up(knex: Knex): Promise<void>;
  down(knex: Knex): Promise<void>;
  /** The checksum generated/migrations/index.ts recorded when the file was written. */
  checksum?: string;
  /** The migration's source file (set by loadGenerated, and by allMigrations for core ones). */
  file?: string;
  /** Which series it belongs to: Tilth's generated ones (`model`, the default) or the site folder's (`site`). */
  series?: 'model' | 'site';
}

const MIGRATIONS_TABLE = 'knex_migrations';
const CHECKSUMS_TABLE = 'tilth_migration_checksums';
const CORE_DIR = join(dirname(fileURLToPath(import.meta.url)), 'core-migrations');
const PROJECT_ROOT = join(CORE_DIR, '..', '..', '..');

export function allMigrations(generated: GeneratedMigration[]): GeneratedMigration[] {
  return [
    // Each series is recorded under a prefix of its own, so that Tilth's 0003 and a site's 0003 never collide.
    ...generated.map((m) => ({ ...m, name: `${m.series ?? 'model'}/${m.name}` })),
    ...coreMigrations.map((m) => ({ ...m, name: `core/${m.name}`, file: join(CORE_DIR, `${m.name}.ts`) })),
  ];
}

/** The checksum of a migration file's text, as the generator computes it (emit/migrations.ts). */
function fileChecksum(file: string): string | null {
  if (!existsSync(file)) return null;
  return createHash('sha256').update(readFileSync(file, 'utf8').replace(/\r\n/g, '\n')).digest('hex');
}

/** An applied migration's file changed after it was applied. */
export class MigrationChecksumError extends Error {
  constructor(files: string[]) {
    super(
      `${files.join(', ')} changed after ${files.length > 1 ? 'they were' : 'it was'} applied to this database. Applied migrations are never edited: ` +
        `restore with \`git checkout -- ${files.join(' ')}\` (git log -p shows the change), and put new changes in a new migration.`,
    );
    this.name = 'MigrationChecksumError';
  }
}

/** Refuse a database some of whose applied migrations no longer match their files. */
async function assertChecksums(knex: Knex, migrations: GeneratedMigration[]): Promise<void> {
  if (!(await knex.schema.hasTable(CHECKSUMS_TABLE))) return;
  const recorded = new Map(
    (await knex(CHECKSUMS_TABLE).select('name', 'checksum')).map((r: { name: string; checksum: string }) => [
      r.name,
      r.checksum,
    ]),
  );
  const changed = migrations
    .filter((m) => m.file && recorded.has(m.name) && fileChecksum(m.file) !== recorded.get(m.name))
    .map((m) => relative(PROJECT_ROOT, m.file!));
  if (changed.length) throw new MigrationChecksumError(changed);
}

/** Record the checksum of every applied migration that has none yet. */
async function recordChecksums(knex: Knex, migrations: GeneratedMigration[]): Promise<void> {
  if (!(await knex.schema.hasTable(CHECKSUMS_TABLE))) {
    await knex.schema.createTable(CHECKSUMS_TABLE, (t) => {
      t.string('name', 255).primary();
      t.string('checksum', 64).notNullable();
    });
  }
  const applied = new Set((await knex(MIGRATIONS_TABLE).select('name')).map((r: { name: string }) => r.name));
  const have = new Set((await knex(CHECKSUMS_TABLE).select('name')).map((r: { name: string }) => r.name));
  const rows = migrations
    .filter((m) => applied.has(m.name) && !have.has(m.name) && m.file)
    .map((m) => ({ name: m.name, checksum: fileChecksum(m.file!) }))
    .filter((r) => r.checksum);
  if (rows.length) await knex(CHECKSUMS_TABLE).insert(rows);
}

function source(
  migrations: GeneratedMigration[],
  running?: (m: GeneratedMigration) => void,
  notes?: Map<string, string[]>,
): Knex.MigrationSource<GeneratedMigration> {
  return {
    getMigrations: async () => migrations,
    getMigrationName: (m) => m.name,
    getMigration: async (m) => ({
      up: async (knex: Knex) => {
        running?.(m);
        // What its data rewrites changed (storage/value-rewrites.ts), for `tilth migrate` to report.
        const lines: string[] = [];
        await collectingNotes(lines, () => m.up(knex));
        if (lines.length) notes?.set(m.name, lines);
      },
      down: m.down,
    }),
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
  const applied = (await knex.schema.hasTable(MIGRATIONS_TABLE))
    ? (await knex(MIGRATIONS_TABLE).select('name').orderBy('id')).map((r: { name: string }) => r.name)
    : [];
  const appliedSet = new Set(applied);
  return {
    applied,
    pending: names.filter((n) => !appliedSet.has(n)),
    unknown: applied.filter((n) => !names.includes(n)),
  };
}

/**
 * Apply every pending migration, each in its own transaction. Returns the names applied; `notes`
 * receives, by name, what the data migrations among them changed ("… in 3 record(s) and 5 revision(s)").
 */
export async function migrateLatest(
  knex: Knex,
  generated: GeneratedMigration[],
  notes?: Map<string, string[]>,
): Promise<string[]> {
  const status = await migrationStatus(knex, generated);
  if (status.unknown.length) throw new MigrationMismatchError(status);
  const migrations = allMigrations(generated);
  await assertChecksums(knex, migrations);
  // The SQLite writer keeps temporary data in memory (storage/database.ts), where its sorter never
  // spills: a migration's CREATE INDEX over a big farm's logs would be sorted wholly in RAM.
  const sqlite = dialectOf(knex).name === 'sqlite';
  if (sqlite && status.pending.length) await knex.raw('PRAGMA temp_store = FILE');
  let log: string[];
  // The statement of each failed query, by its error (Knex prefixes the statement to the message).
  const statements = new WeakMap<object, string>();
  const onQueryError = (error: unknown, query: { sql?: string }) => {
    if (error && typeof error === 'object' && query?.sql) statements.set(error, query.sql);
  };
  knex.on('query-error', onQueryError);
  let running: GeneratedMigration | null = null;
  try {
    [, log] = (await knex.migrate.latest({
      migrationSource: source(migrations, (m) => (running = m), notes),
      tableName: MIGRATIONS_TABLE,
    })) as [number, string[]];
  } catch (error) {
    // Knex runs every pending migration in one transaction; the one that threw is the last begun.
    // Say which, what the database said, and what to do, never a stack trace.
    if (!running) throw error;
    const statement = error && typeof error === 'object' ? statements.get(error) : undefined;
    throw new MigrationFailedError(running, error, statement ?? null);
  } finally {
    knex.off('query-error', onQueryError);
    if (sqlite && status.pending.length) await knex.raw('PRAGMA temp_store = MEMORY');
  }
  await recordChecksums(knex, migrations);
  return log;
}

/** A migration failed: nothing of the run was applied. Names the file, the statement, the database's words and what to do. */
export class MigrationFailedError extends Error {
  constructor(migration: GeneratedMigration, cause: unknown, statement: string | null) {
    const message = cause instanceof Error ? cause.message : String(cause);
    // Knex puts the statement in front of the driver's message: "<statement> - <message>".
    const said = statement && message.startsWith(`${statement} - `) ? message.slice(statement.length + 3) : message;
    const file = migration.file ? relative(PROJECT_ROOT, migration.file) : migration.name;
    const exists = /already exists/i.test(said);
    super(
      `Migration ${migration.name} (${file}) failed, so nothing of this run was applied (the pending migrations run in one transaction).\n` +
        (statement && said !== message
          ? `  statement: ${statement.length > 300 ? `${statement.slice(0, 300)}…` : statement}\n`
          : '') +
        `  the database said: ${said.split('\n')[0]}\n` +
        (exists
          ? `What to do: the database already has something this migration creates, so it does not match the migrations it records as applied ` +
            `(its record of this migration was lost, or the table was made by hand or by another program). Restore a backup made before ` +
            `(\`npx tilth restore FILE.tar.gz\`, into an empty data directory or database), or remove what is in the way by hand after a \`npx tilth backup\`, then run \`npx tilth migrate\` again; ` +
            `\`npx tilth migrate --status\` lists what is applied.`
          : `What to do: take a \`npx tilth backup\`, fix what the database said (or restore a backup with \`npx tilth restore FILE.tar.gz\` into an empty data directory or database), ` +
            `then run \`npx tilth migrate\` again; \`npx tilth migrate --status\` lists what is applied.`),
    );
    this.name = 'MigrationFailedError';
  }
}

export class MigrationMismatchError extends Error {
  constructor(readonly status: MigrationStatus) {
    super(
      status.unknown.length
        ? `The database has ${status.unknown.length} migration(s) that this copy of Tilth does not know (${status.unknown.slice(0, 3).join(', ')}${status.unknown.length > 3 ? ', …' : ''}). ` +
            (status.unknown.every((n) => n.startsWith('site/'))
              ? `They are the farm's own (site/…): point TILTH_SITE_DIR at the site folder that made them (its definitions/ and generated/), or restore the files its generated/migrations/ lost from where the farm keeps the site folder (its own repository or a backup).`
              : `It was migrated by a newer Tilth: update this one (git pull && npm ci), or point DATABASE_URL / TILTH_DATA_DIR at another database.`)
        : `The database is ${status.pending.length} migration(s) behind generated/ (next: ${status.pending[0]}). Run \`npx tilth migrate\`, or start with \`npm start\`, which migrates first.`,
    );
    this.name = 'MigrationMismatchError';
  }
}

/** Whether the database records migrations this code does not know (a newer release migrated it); false when it cannot be asked. */
export async function databaseAhead(knex: Knex, generated: GeneratedMigration[]): Promise<boolean> {
  try {
    return (await migrationStatus(knex, generated)).unknown.length > 0;
  } catch {
    return false;
  }
}

/** Refuse to serve a database that is ahead of or behind the code. */
export async function assertMigrated(knex: Knex, generated: GeneratedMigration[]): Promise<void> {
  const status = await migrationStatus(knex, generated);
  if (status.unknown.length || status.pending.length) throw new MigrationMismatchError(status);
  await assertChecksums(knex, allMigrations(generated));
}
