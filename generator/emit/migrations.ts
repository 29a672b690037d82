/**
 * Emits Knex migrations incrementally. The schema that the existing migrations build is folded
 * from their `ops`; the model's tables are compared with it; what is missing becomes one new
 * migration. Existing migration files are never rewritten, and a model that needs no change
 * produces no file, so running the generator twice changes nothing.
 */
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type {
  ColumnSpec,
  IndexSpec,
  MoveFieldOp,
  RewriteValuesOp,
  SchemaOp,
  TableSpec,
} from '../../runtime/model/descriptor.ts';
import { tsStamp } from './stamp.ts';
import { FIELD_TYPE_SPECS } from '../../runtime/model/field-types.ts';
import type { FileMap } from './descriptors.ts';

export interface ExistingMigration {
  name: string;
  file: string;
  ops: SchemaOp[];
  /** The checksum generated/migrations/index.ts recorded when the file was written, if any. */
  recorded: string | null;
}

/** The checksum of a migration file's text (line endings normalised, so a checkout on Windows matches). */
export function migrationChecksum(text: string): string {
  return createHash('sha256').update(text.replace(/\r\n/g, '\n')).digest('hex');
}

/** The checksums index.ts records, by migration name. */
function recordedChecksums(dir: string): Map<string, string> {
  const index = join(dir, 'index.ts');
  if (!existsSync(index)) return new Map();
  return new Map(
    [...readFileSync(index, 'utf8').matchAll(/name: '([^']+)',[^\n]*checksum: '([0-9a-f]{64})'/g)].map((m) => [
      m[1]!,
      m[2]!,
    ]),
  );
}

/** Migration files that cannot stand together (two with one number). */
export class MigrationFilesError extends Error {}

/**
 * Two files with one number (a branch's own 0002 beside the 0002 it merged) would be imported
 * by index.ts under one identifier, and applied in an order no database agrees on.
 */
export function refuseSharedNumbers(files: string[], shownDir = 'generated/migrations'): void {
  const byNumber = new Map<string, string[]>();
  for (const file of files)
    byNumber.set(file.slice(0, 4), [...(byNumber.get(file.slice(0, 4)) ?? []), `${shownDir}/${file}`]);
  const shared = [...byNumber].filter(([, same]) => same.length > 1);
  if (!shared.length) return;
  const [number, same] = shared[0]!;
  throw new MigrationFilesError(
    `${same.join(' and ')} have the same number ${number} (index.ts would import both as m${number}); each migration needs a number of its own. ` +
      `Keep the one the farms you care about have applied (usually the one you merged), remove the other (git rm) and run \`npm run generate\`, ` +
      `which writes its change again as the next number; a database that applied the removed one is refused until restored from a backup or made again.`,
  );
}

/**
 * How index.ts differs from the migration files present, one sentence per difference: a file it
 * does not list (a merge that kept one side's index), a name it lists whose file is gone.
 */
export function indexDifferences(dir: string, files: string[]): string[] {
  const index = join(dir, 'index.ts');
  if (!existsSync(index)) return [];
  const text = readFileSync(index, 'utf8');
  const listed = new Set([...text.matchAll(/\{ name: '([^']+)'/g)].map((m) => m[1]!));
  const imported = new Set([...text.matchAll(/from '\.\/([^']+)\.ts'/g)].map((m) => m[1]!));
  const present = new Set(files.map((f) => f.replace(/\.ts$/, '')));
  const out: string[] = [];
  for (const name of present) {
    if (!listed.has(name)) out.push(`generated/migrations/index.ts does not list generated/migrations/${name}.ts`);
    else if (!imported.has(name))
      out.push(`generated/migrations/index.ts lists ${name} but does not import generated/migrations/${name}.ts`);
  }
  for (const name of new Set([...listed, ...imported])) {
    if (!present.has(name))
      out.push(`generated/migrations/index.ts lists ${name}, but generated/migrations/${name}.ts does not exist`);
  }
  return out;
}

/** A migration file changed since the generator wrote it. */
export class EditedMigrationError extends Error {}

interface TableState {
  columns: Map<string, ColumnSpec>;
  indexes: Map<string, IndexSpec>;
}

export async function readExistingMigrations(dir: string): Promise<ExistingMigration[]> {
  if (!existsSync(dir)) return [];
  const names = readdirSync(dir)
    .filter((f) => /^\d{4}_[a-z0-9_]+\.ts$/.test(f))
    .sort();
  refuseSharedNumbers(names);
  const recorded = recordedChecksums(dir);
  const out: ExistingMigration[] = [];
  const edited: string[] = [];
  for (const file of names) {
    const name = file.replace(/\.ts$/, '');
    const checksum = recorded.get(name) ?? null;
    if (checksum && migrationChecksum(readFileSync(join(dir, file), 'utf8')) !== checksum)
      edited.push(`generated/migrations/${file}`);
    const mod = (await import(pathToFileURL(join(dir, file)).href)) as { ops?: SchemaOp[] };
    if (!Array.isArray(mod.ops))
      throw new Error(`generated/migrations/${file} has no "ops" export; it was not written by the generator.`);
    out.push({ name, file, ops: mod.ops, recorded: checksum });
  }
  refuseEdited(edited);
  return out;
}

/** Refuse migration files changed since the generator wrote them, naming each. */
export function refuseEdited(edited: string[]): void {
  if (!edited.length) return;
  throw new EditedMigrationError(
    `${edited.join(', ')} changed since the generator wrote ${edited.length > 1 ? 'them' : 'it'}; databases may already have applied the original. ` +
      `Applied migrations are never edited: restore with \`git checkout -- ${edited.join(' ')}\`, and change definitions/ instead (the generator adds a new migration).`,
  );
}

type DataOp = RewriteValuesOp | MoveFieldOp;

/** Which rewrite a data migration made: the same bundle, field and former value (or former name) are rewritten once. */
const rewriteKey = (op: DataOp) =>
  op.op === 'moveField'
    ? `${op.entityType}--${op.bundle}.${op.to.field}<${op.from.field}`
    : `${op.entityType}--${op.bundle}.${op.field}:${op.from}`;

/** A field's move needs the former field's storage, with the same columns as the new one's. */
function checkMoveSource(op: MoveFieldOp, state: Map<string, TableState>, desired: TableSpec[]): void {
  const columnsOf = (
    s: MoveFieldOp['from']['storage'],
    tables: (name: string) => Map<string, { type: string }> | undefined,
  ) =>
    s.kind === 'table'
      ? Object.values(s.columns).map((c) => tables(s.table)?.get(c)?.type)
      : Object.values(s.columns).map((c) => tables(op.table)?.get(c)?.type);
  const had = columnsOf(op.from.storage, (t) => state.get(t)?.columns);
  // The former field's columns: the new field's, or with a type change the former type's.
  const convertFrom = op.convert ? FIELD_TYPE_SPECS[op.convert.from] : null;
  const wants = convertFrom
    ? Object.keys(op.from.storage.columns).map((prop) => convertFrom.properties[prop]?.column)
    : columnsOf(op.to.storage, (t) => new Map(desired.find((d) => d.name === t)?.columns.map((c) => [c.name, c])));
  if (had.some((t) => t === undefined) || had.join() !== wants.join()) {
    throw new Error(
      `${op.entityType}--${op.bundle}: field "${op.to.field}" is renamed from "${op.from.field}", but the migrations never stored a "${op.from.field}" of ${op.entityType} ` +
        `with the same type and cardinality (${had.some((t) => t === undefined) ? 'no such storage' : `${had.join(', ')} there, ${wants.join(', ')} here`}). Check the former name, or remove "renamed_from".`,
    );
  }
}

function fold(migrations: ExistingMigration[]): Map<string, TableState> {
  const state = new Map<string, TableState>();
  for (const m of migrations) {
    for (const op of m.ops) {
      if (op.op === 'rewriteValues' || op.op === 'moveField') continue;
      if (op.op === 'createTable') {
        state.set(op.table.name, {
          columns: new Map(op.table.columns.map((c) => [c.name, c])),
          indexes: new Map(op.table.indexes.map((i) => [i.name, i])),
        });
      } else if (op.op === 'addColumn') state.get(op.table)!.columns.set(op.column.name, op.column);
      else if (op.op === 'createIndex') state.get(op.table)!.indexes.set(op.index.name, op.index);
    }
  }
  return state;
}

/**
 * What must be added to take the folded schema to the desired tables, then the declared data
 * rewrites no migration has made yet. Throws on changes that cannot be made by adding.
 */
export function diffSchema(existing: ExistingMigration[], desired: TableSpec[], rewrites: DataOp[] = []): SchemaOp[] {
  const state = fold(existing);
  const rewritten = new Set(
    existing.flatMap((m) =>
      m.ops.filter((op): op is DataOp => op.op === 'rewriteValues' || op.op === 'moveField').map(rewriteKey),
    ),
  );
  const pendingRewrites = rewrites.filter((op) => !rewritten.has(rewriteKey(op)));
  for (const op of pendingRewrites) if (op.op === 'moveField') checkMoveSource(op, state, desired);
  const creates: SchemaOp[] = [];
  const sideCreates: SchemaOp[] = [];
  const adds: SchemaOp[] = [];
  const indexes: SchemaOp[] = [];
  for (const table of desired) {
    const current = state.get(table.name);
    if (!current) {
      (table.primaryKey ? sideCreates : creates).push({ op: 'createTable', table });
      continue;
    }
    for (const column of table.columns) {
      const have = current.columns.get(column.name);
      if (!have) {
        // A column added later cannot carry a constraint on SQLite; the runtime keeps references consistent.
        const { references: _ignored, ...plain } = column;
        adds.push({ op: 'addColumn', table: table.name, column: { ...plain, nullable: true } });
      } else if (have.type !== column.type || have.precision !== column.precision || have.scale !== column.scale) {
        const shown = (c: ColumnSpec) => `${c.type}${c.precision !== undefined ? `(${c.precision}, ${c.scale})` : ''}`;
        throw new Error(
          `The storage of ${table.name}.${column.name} changed from ${shown(have)} to ${shown(column)}. ` +
            `Migrations only add; give the field a new name, or write a data migration by hand.`,
        );
      }
    }
    for (const index of table.indexes) {
      if (!current.indexes.has(index.name)) indexes.push({ op: 'createIndex', table: table.name, index });
    }
  }
  return [...creates, ...sideCreates, ...adds, ...indexes, ...pendingRewrites];
}

/** `0003_create_log__grazed_animals_and_more`: the number and what the first operation does (Tilth's own first one is `0001_initial`; `initial: false`, a site series', names its first by what it does too). */
export function migrationName(number: number, ops: SchemaOp[], { initial = true }: { initial?: boolean } = {}): string {
  const n = String(number).padStart(4, '0');
  if (number === 1 && initial) return `${n}_initial`;
  const first = ops[0]!;
  const slug =
    first.op === 'createTable'
      ? `create_${first.table.name}`
      : first.op === 'addColumn'
        ? `add_${first.table}_${first.column.name}`
        : first.op === 'rewriteValues'
          ? `${first.to === null ? 'remove' : 'rename'}_${first.bundle}_${first.field}_values`
          : first.op === 'moveField'
            ? `rename_${first.bundle}_${first.from.field}_to_${first.to.field}`
            : `index_${first.table}`;
  return `${n}_${slug.replace(/[^a-z0-9_]/g, '_').slice(0, 60)}${ops.length > 1 ? '_and_more' : ''}`;
}

function migrationSource(ops: SchemaOp[]): string {
  return (
    `${tsStamp()}// Applied migrations are never rewritten: a later change to definitions/ adds a new file.\n` +
    `import type { Knex } from 'knex';\n` +
    `import { applySchemaOps, type SchemaOp } from '../../runtime/public.ts';\n\n` +
    `export const ops: SchemaOp[] = ${JSON.stringify(ops, null, 2)};\n\n` +
    `export async function up(knex: Knex): Promise<void> {\n  await applySchemaOps(knex, ops);\n}\n\n` +
    `export async function down(): Promise<void> {\n  throw new Error('Tilth migrations only go forward: restore a backup to go back.');\n}\n`
  );
}

/** The migration files generated/ should hold: every existing one unchanged, plus a new one if the model needs it. */
export function emitMigrations(
  existing: ExistingMigration[],
  desired: TableSpec[],
  readExisting: (file: string) => string,
  rewrites: DataOp[] = [],
): { files: FileMap; added: string | null; addedOps: SchemaOp[] } {
  const files: FileMap = new Map();
  // Each file keeps the checksum recorded when it was written (an index from before checksums
  // records the file as it is).
  const checksums = new Map<string, string>();
  for (const m of existing) {
    const text = readExisting(m.file);
    files.set(`migrations/${m.file}`, text);
    checksums.set(m.name, m.recorded ?? migrationChecksum(text));
  }
  const ops = diffSchema(existing, desired, rewrites);
  let added: string | null = null;
  const all = existing.map((m) => m.name);
  if (ops.length) {
    added = migrationName(existing.length + 1, ops);
    const text = migrationSource(ops);
    files.set(`migrations/${added}.ts`, text);
    checksums.set(added, migrationChecksum(text));
    all.push(added);
  }
  const ident = (name: string) => `m${name.slice(0, 4)}`;
  files.set(
    'migrations/index.ts',
    `${tsStamp()}import type { GeneratedMigration } from '../../runtime/public.ts';\n` +
      all.map((name) => `import * as ${ident(name)} from './${name}.ts';`).join('\n') +
      `\n\n/** Every generated migration, oldest first. */\nexport const migrations: GeneratedMigration[] = [\n` +
      all
        .map(
          (name) =>
            `  { name: '${name}', up: ${ident(name)}.up, down: ${ident(name)}.down, checksum: '${checksums.get(name)}' },`,
        )
        .join('\n') +
      `\n];\n`,
  );
  return { files, added, addedOps: ops };
}
