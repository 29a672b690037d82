/**
 * Data migrations declared in YAML: an allowed value renamed or removed (`renamed_values`,
 * `removed_values`), and a field renamed (`renamed_from`, moveField below). The records of the bundle holding the former value get the new one, in their
 * table or side table and in their revisions' snapshots, so that a record read back validates
 * against its own schema (PATCHing it back as read, or a CSV export imported again, is not a 422).
 * Each rewrite says what it changed, with counts, in the notes of the migration running it.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { Knex } from 'knex';
import type { MoveFieldOp, RewriteValuesOp } from '../model/descriptor.ts';
import { decimalInput, decimalOutput, DEFAULT_DECIMAL } from '../values/decimal-value.ts';

/** Lines saying what a migration's data rewrites changed, collected while it runs (collectingNotes). */
const migrationNotes = new AsyncLocalStorage<string[]>();
let collecting = 0;

/**
 * Run a migration, collecting in `lines` what its data rewrites change. The storage is switched
 * off again once no migration runs: while any AsyncLocalStorage is on, Node runs a hook for every
 * promise (an await took two to three times as long in a microbenchmark on Node 20), and a
 * server that migrated as it started (its first start, every upgrade) paid that on every request
 * until it stopped. On a page of 50 logs the difference was within this machine's noise.
 */
export async function collectingNotes<T>(lines: string[], migrate: () => Promise<T>): Promise<T> {
  collecting++;
  try {
    return await migrationNotes.run(lines, migrate);
  } finally {
    if (--collecting === 0) migrationNotes.disable();
  }
}

/** A revision snapshot's value of the field with the former value replaced; undefined when it holds none. */
function rewritten(value: unknown, from: string, to: string | null): unknown {
  if (value === from) return to;
  if (Array.isArray(value) && value.includes(from))
    return value.flatMap((v) => (v === from ? (to === null ? [] : [to]) : [v]));
  return undefined;
}

/**
 * Rewrite the revision snapshots of a bundle's records that mention `needle` (LIKE narrows them,
 * its wildcards only widen; `change` decides, returning false to leave a snapshot as it is).
 * Returns how many changed. On a new database the revisions' table comes after the model's first
 * migrations: nothing to rewrite then.
 */
async function rewriteSnapshots(
  knex: Knex,
  op: { entityType: string; table: string; bundle: string },
  needle: string,
  change: (data: Record<string, unknown>) => boolean,
): Promise<number> {
  if (!(await knex.schema.hasTable('entity_revision'))) return 0;
  const rows: Array<{ id: number; data: string }> = await knex('entity_revision')
    .select('id', 'data')
    .where('entity_type', op.entityType)
    .whereIn('entity_id', knex(op.table).select('id').where('bundle', op.bundle))
    .andWhere('data', 'like', `%${needle}%`);
  let changed = 0;
  for (const row of rows) {
    const data = JSON.parse(row.data) as Record<string, unknown>;
    if (!change(data)) continue;
    await knex('entity_revision')
      .where('id', row.id)
      .update({ data: JSON.stringify(data) });
    changed++;
  }
  return changed;
}

export async function rewriteValues(knex: Knex, op: RewriteValuesOp): Promise<void> {
  const owners = () => knex(op.table).select('id').where('bundle', op.bundle);
  let records: number;
  if (op.storage.kind === 'column') {
    records = await knex(op.table)
      .where({ bundle: op.bundle, [op.storage.column]: op.from })
      .update({ [op.storage.column]: op.to });
  } else {
    const { table, column } = op.storage;
    const held = knex(table).where(column, op.from).whereIn('entity_id', owners());
    records = (await held.clone().distinct('entity_id')).length;
    if (op.to === null) await held.clone().delete();
    else await held.clone().update({ [column]: op.to });
  }
  const revisions = await rewriteSnapshots(knex, op, JSON.stringify(op.from), (data) => {
    const value = rewritten(data[op.field], op.from, op.to);
    if (value === undefined) return false;
    data[op.field] = value;
    return true;
  });
  migrationNotes
    .getStore()
    ?.push(
      `${op.entityType}--${op.bundle} ${op.field}: "${op.from}" ${op.to === null ? 'removed' : `→ "${op.to}"`} in ${records} record(s) and ${revisions} revision(s)`,
    );
}

/** A value of the former type as the new type stores it (only the conversions model/conversions.ts defines). */
function convertValue(value: unknown, convert: NonNullable<MoveFieldOp['convert']>): unknown {
  if (value === null || value === undefined) return null;
  if (convert.to === 'decimal') {
    const d = decimalInput(
      value,
      convert.precision ?? DEFAULT_DECIMAL.precision,
      convert.scale ?? DEFAULT_DECIMAL.scale,
    );
    if ('problem' in d)
      throw new Error(
        `${JSON.stringify(value)} cannot become a decimal: it ${d.problem}. Give the field a larger precision.`,
      );
    return d.value;
  }
  // To text: a decimal as it is served (no trailing zeros), anything else as its text.
  if (convert.from === 'decimal') return decimalOutput(value as string | number, DEFAULT_DECIMAL.scale);
  return String(value);
}

/** Move the bundle's records' values of a renamed field to its new storage, and rename the field in their revisions. */
export async function moveField(knex: Knex, op: MoveFieldOp): Promise<void> {
  const owners = () => knex(op.table).select('id').where('bundle', op.bundle);
  const { from, to } = op;
  let records: number;
  const convert = op.convert ? (value: unknown) => convertValue(value, op.convert!) : null;
  if (convert && from.storage.kind === 'columns' && to.storage.kind === 'columns') {
    // A type change: each value converted here, the same way in the record and in its revisions.
    const [source, target] = [from.storage.columns.value!, to.storage.columns.value!];
    const rows: Array<{ id: number; value: unknown }> = await knex(op.table)
      .select('id', { value: source })
      .where('bundle', op.bundle)
      .whereNotNull(source);
    for (const row of rows)
      await knex(op.table)
        .where('id', row.id)
        .update({ [target]: convert(row.value), [source]: null });
    records = rows.length;
  } else if (from.storage.kind === 'columns' && to.storage.kind === 'columns') {
    const fromColumns = from.storage.columns;
    const formerColumns = Object.values(fromColumns);
    // SET new = old, old = NULL reads every right-hand side from the row as it was, on both databases.
    const changes: Record<string, unknown> = {};
    for (const [prop, column] of Object.entries(to.storage.columns)) changes[column] = knex.ref(fromColumns[prop]!);
    for (const column of formerColumns) changes[column] = null;
    records = await knex(op.table)
      .where('bundle', op.bundle)
      .andWhere((q) => formerColumns.forEach((c) => q.orWhereNotNull(c)))
      .update(changes);
  } else if (from.storage.kind === 'table' && to.storage.kind === 'table') {
    const [source, target] = [from.storage, to.storage];
    const props = Object.keys(target.columns);
    const held = () => knex(source.table).whereIn('entity_id', owners());
    records = (await held().distinct('entity_id')).length;
    await knex.raw(`INSERT INTO ?? (??) SELECT ?? FROM ?? WHERE entity_id IN (SELECT id FROM ?? WHERE bundle = ?)`, [
      target.table,
      ['entity_id', 'delta', ...props.map((p) => target.columns[p]!)],
      ['entity_id', 'delta', ...props.map((p) => source.columns[p]!)],
      source.table,
      op.table,
      op.bundle,
    ]);
    await held().delete();
  } else {
    throw new Error(
      `${op.entityType}--${op.bundle}: "${from.field}" and "${to.field}" are stored differently (one value and several); a rename keeps the cardinality.`,
    );
  }
  const revisions = await rewriteSnapshots(knex, op, `${JSON.stringify(from.field)}:`, (data) => {
    if (!(from.field in data)) return false;
    data[to.field] = convert && data[from.field] !== null ? convert(data[from.field]) : data[from.field];
    delete data[from.field];
    return true;
  });
  const types = op.convert ? ` (${op.convert.from} → ${op.convert.to})` : '';
  migrationNotes
    .getStore()
    ?.push(
      `${op.entityType}--${op.bundle}: field "${from.field}" renamed to "${to.field}"${types} in ${records} record(s) and ${revisions} revision(s)`,
    );
}
