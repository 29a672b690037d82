/**
 * Data migrations declared in YAML: an allowed value renamed or removed (`renamed_values`,
 * `removed_values`). The records of the bundle holding the former value get the new one, in their
 * table or side table and in their revisions' snapshots, so that a record read back validates
 * against its own schema (PATCHing it back as read, or a CSV export imported again, is not a 422).
 * Each rewrite says what it changed, with counts, in the notes of the migration running it.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { Knex } from 'knex';
import type { RewriteValuesOp } from '../model/descriptor.ts';

/** Lines saying what a migration's data rewrites changed, collected while it runs (storage/migrations.ts). */
export const migrationNotes = new AsyncLocalStorage<string[]>();

/** A revision snapshot's value of the field with the former value replaced; undefined when it holds none. */
function rewritten(value: unknown, from: string, to: string | null): unknown {
  if (value === from) return to;
  if (Array.isArray(value) && value.includes(from)) return value.flatMap((v) => (v === from ? (to === null ? [] : [to]) : [v]));
  return undefined;
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
  let revisions = 0;
  // On a new database the revisions' table comes after the model's first migrations: nothing to rewrite then.
  if (await knex.schema.hasTable('entity_revision')) {
    // LIKE narrows the snapshots to those mentioning the value (its wildcards only widen); the JSON decides.
    const rows: Array<{ id: number; data: string }> = await knex('entity_revision')
      .select('id', 'data')
      .where('entity_type', op.entityType)
      .whereIn('entity_id', owners())
      .andWhere('data', 'like', `%${JSON.stringify(op.from)}%`);
    for (const row of rows) {
      const data = JSON.parse(row.data) as Record<string, unknown>;
      const value = rewritten(data[op.field], op.from, op.to);
      if (value === undefined) continue;
      data[op.field] = value;
      await knex('entity_revision').where('id', row.id).update({ data: JSON.stringify(data) });
      revisions++;
    }
  }
  migrationNotes
    .getStore()
    ?.push(`${op.entityType}--${op.bundle} ${op.field}: "${op.from}" ${op.to === null ? 'removed' : `→ "${op.to}"`} in ${records} record(s) and ${revisions} revision(s)`);
}
