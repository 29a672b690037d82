/** Applies the generator's schema operations with Knex, the same way on SQLite and PostgreSQL. */
import type { Knex } from 'knex';
import type { ColumnSpec, IndexSpec, SchemaOp } from '../model/descriptor.ts';
import { dialectOf } from './dialect.ts';
import { DEFAULT_DECIMAL } from '../values/decimal-value.ts';
import { moveField, rewriteValues } from './value-rewrites.ts';

function addColumn(table: Knex.CreateTableBuilder | Knex.AlterTableBuilder, column: ColumnSpec): void {
  let builder: Knex.ColumnBuilder;
  switch (column.type) {
    case 'increments':
      builder = table.increments(column.name);
      return;
    case 'uuid':
      builder = table.string(column.name, 36);
      break;
    case 'text':
      builder = table.text(column.name);
      break;
    case 'integer':
      builder = table.integer(column.name);
      break;
    case 'bigint':
      builder = table.bigInteger(column.name);
      break;
    case 'boolean':
      builder = table.boolean(column.name);
      break;
    case 'double':
      builder = table.double(column.name);
      break;
    case 'decimal':
      builder = table.decimal(
        column.name,
        column.precision ?? DEFAULT_DECIMAL.precision,
        column.scale ?? DEFAULT_DECIMAL.scale,
      );
      break;
  }
  if (column.nullable) builder.nullable();
  else builder.notNullable();
  if (column.references) {
    builder.references(column.references.column).inTable(column.references.table).onDelete(column.references.onDelete);
  }
}

export async function applySchemaOps(knex: Knex, ops: readonly SchemaOp[]): Promise<void> {
  for (const op of ops) {
    if (op.op === 'createTable') {
      await knex.schema.createTable(op.table.name, (table) => {
        for (const column of op.table.columns) addColumn(table, column);
        if (op.table.primaryKey) table.primary(op.table.primaryKey);
        for (const index of op.table.indexes) {
          if (index.caseless) continue;
          if (index.unique) table.unique(index.columns, { indexName: index.name });
          else table.index(index.columns, index.name);
        }
      });
      for (const index of op.table.indexes.filter((i) => i.caseless))
        await createCaselessIndex(knex, op.table.name, index);
    } else if (op.op === 'addColumn') {
      await knex.schema.alterTable(op.table, (table) => addColumn(table, op.column));
    } else if (op.op === 'rewriteValues') {
      await rewriteValues(knex, op);
    } else if (op.op === 'moveField') {
      await moveField(knex, op);
    } else if (op.index.caseless) {
      await createCaselessIndex(knex, op.table, op.index);
    } else {
      await knex.schema.alterTable(op.table, (table) => {
        if (op.index.unique) table.unique(op.index.columns, { indexName: op.index.name });
        else table.index(op.index.columns, op.index.name);
      });
    }
  }
}

/** An index with one column without regard to case (IndexSpec.caseless), in each dialect's words; Knex's builder has none. */
async function createCaselessIndex(knex: Knex, table: string, index: IndexSpec): Promise<void> {
  const caseless = dialectOf(knex).caselessIndexColumn;
  const parts = index.columns.map((column) => (column !== index.caseless ? '??' : caseless));
  await knex.raw(`CREATE ${index.unique ? 'UNIQUE ' : ''}INDEX ?? ON ?? (${parts.join(', ')})`, [
    index.name,
    table,
    ...index.columns,
  ]);
}
