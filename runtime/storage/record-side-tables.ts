/**
 * Multi-valued fields' side tables: their rows for a record's items, reading every side table of
 * a page's records in one statement, writing a record's items.
 */
import type { Knex } from 'knex';
import type { FieldDescriptor } from '../model/descriptor.ts';
import { execute, selectRows } from './sql.ts';
import { dialectOf } from './dialect.ts';
import { directConnectionOf } from './database.ts';
import {
  chunks,
  itemFromProps,
  propsFromItem,
  type Db,
  type EntityRecord,
  type ItemValue,
  type Reference,
} from './record-values.ts';
import { insertSql, type RecordSql } from './record-sql.ts';

/** A row of the side tables' statement (RecordSql.sideTablesSql). */
type SideRow = {
  k: number;
  entity_id: number;
  p?: unknown;
  t_uuid: string | null;
  t_bundle: string | null;
  t_rev: number | null;
} & Record<string, unknown>;

/** The property names of a side table's columns, in the order its branch selects them as v0, v1, … */
const sidePropNames = new WeakMap<FieldDescriptor, string[]>();

/** A SQLite side-table row's properties, from its positional columns. */
function sidePropsOf(field: FieldDescriptor, row: SideRow): Record<string, unknown> {
  let names = sidePropNames.get(field);
  if (!names)
    sidePropNames.set(field, (names = Object.keys((field.storage as { columns: Record<string, string> }).columns)));
  const props: Record<string, unknown> = {};
  for (let j = 0; j < names.length; j++) props[names[j]!] = row[`v${j}`];
  return props;
}

/** How a multi-valued field is stored: a side table of its own. */
type SideStorage = Extract<FieldDescriptor['storage'], { kind: 'table' }>;

/** A multi-valued field's side table and its columns: entity_id, delta, then the field's own. */
export function sideColumnsOf(field: FieldDescriptor): { table: string; names: string[] } {
  const { table, columns } = field.storage as SideStorage;
  return { table, names: ['entity_id', 'delta', ...Object.values(columns)] };
}

/**
 * The rows of a multi-valued field's side table for one record's items, in sideColumnsOf's column
 * order: its id, the item's place (delta), then the item's stored properties. The API's writes
 * (writeSide) and an import's bulk inserts (insertMany) both build their rows here.
 */
export function sideRowsOf(field: FieldDescriptor, id: number, items: readonly ItemValue[]): unknown[][] {
  const props = Object.keys((field.storage as SideStorage).columns);
  return items.map((item, delta) => {
    const values = propsFromItem(field, item);
    return [id, delta, ...props.map((p) => values[p])];
  });
}

/**
 * Fill the multi-valued fields of loaded records from their side tables, every side table in one
 * UNION ALL statement (a log has ten of them: one query instead of ten), each branch joining
 * the reference's target for its UUID, bundle and revision (sideTablesSql).
 */
export async function loadSideTables(
  statements: RecordSql,
  db: Db,
  sides: Array<{ field: FieldDescriptor; records: EntityRecord[] }>,
): Promise<void> {
  if (!sides.length) return;
  const dialect = dialectOf(db);
  const owners = new Map<number, EntityRecord>();
  for (const side of sides) for (const r of side.records) owners.set(r.id, r);
  const single = owners.size === 1;
  const sql = statements.reads.get(
    `sides:${dialect.name}:${single}:${sides.map((s) => (s.field.storage as { table: string }).table).join(',')}`,
    () =>
      statements.sideTablesSql(
        dialect,
        sides.map((s) => s.field),
        { single },
      ),
  );
  const list = dialect.idListParameter([...owners.keys()]);
  const rows = await selectRows<SideRow>(
    db,
    sql,
    sides.map(() => list),
  );
  for (const row of rows) {
    const owner = owners.get(Number(row.entity_id));
    const side = sides[Number(row.k)];
    if (!owner || !side) continue;
    const item = itemFromProps(
      side.field,
      dialect.unionOfOneType
        ? ((typeof row.p === 'string' ? JSON.parse(row.p) : row.p) as Record<string, unknown>)
        : sidePropsOf(side.field, row),
    );
    if (item === null) continue;
    if (row.t_uuid)
      Object.assign(item as Reference, { uuid: row.t_uuid, bundle: row.t_bundle, revisionId: row.t_rev ?? null });
    (owner.values.get(side.field.name) as ItemValue[] | undefined)?.push(item);
  }
}

/**
 * A multi-valued field's items as rows of its side table. On SQLite in a transaction, one
 * prepared single-row statement run per item; elsewhere (PostgreSQL: a round trip per
 * statement) rows go 500 to a statement.
 */
export async function writeSide(
  statements: RecordSql,
  db: Db,
  field: FieldDescriptor,
  id: number,
  items: ItemValue[],
): Promise<void> {
  if (field.storage.kind !== 'table' || !items.length) return;
  const { table, names } = sideColumnsOf(field);
  // Rows are numbered (delta) before they are split into statements.
  const rows = sideRowsOf(field, id, items);
  const direct = directConnectionOf(db);
  if (direct) {
    const sql = statements.writes.get(`insert:${table}:1`, () => insertSql(table, names));
    for (const row of rows) direct.run(sql, row);
    return;
  }
  for (const part of chunks(rows, 500)) {
    const sql = statements.writes.get(`insert:${table}:${part.length}`, () => insertSql(table, names, part.length));
    await execute(db, sql, part.flat() as Knex.RawBinding[]);
  }
}
