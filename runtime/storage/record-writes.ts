/**
 * Writing records: inserting one or many, updating fields, deleting (their references elsewhere
 * cleared, the records holding them noted as changed). Each notes its records in the write's
 * unit of work (storage/unit-of-work.ts), which writes their change feed rows.
 */
import type { Knex } from 'knex';
import type { FieldDescriptor } from '../model/descriptor.ts';
import type { ResourceType } from '../model/registry.ts';
import type { RevisionStore } from './revisions.ts';
import { execute, insertReturningId, quoteName as quote, returningRows } from './sql.ts';
import { noteChanged, noteChangedIds, noteDeleted } from './unit-of-work.ts';
import { chunks, propsFromItem, type Db, type ItemValue } from './record-values.ts';
import { insertSql, rowsPerStatement, type RecordSql } from './record-sql.ts';
import { sideColumnsOf, sideRowsOf, writeSide } from './record-side-tables.ts';
import type { RecordHolders } from './record-holders.ts';

/** A record's identity as read for the change feed. */
type ChangedRow = { id: number; uuid: string; bundle: string };

export class RecordWrites {
  constructor(
    private readonly sql: RecordSql,
    private readonly holders: RecordHolders,
    private readonly revisions: RevisionStore,
  ) {}

  private entityType(name: string) {
    return this.sql.entityType(name);
  }

  /** Insert a new record. `values` holds every stored field to write; `extra`, columns of its own (its revision). Returns the internal id. */
  async insert(
    db: Db,
    rt: ResourceType,
    uuid: string,
    values: Map<string, ItemValue | ItemValue[]>,
    extra: Record<string, unknown> = {},
  ): Promise<number> {
    const columns = ['uuid', 'bundle', ...Object.keys(extra)];
    const bindings: unknown[] = [uuid, rt.bundle.bundle, ...Object.values(extra)];
    const side: Array<{ field: FieldDescriptor; items: ItemValue[] }> = [];
    for (const field of rt.bundle.fields) {
      if (!values.has(field.name)) continue;
      const value = values.get(field.name)!;
      if (field.storage.kind === 'columns') this.columnValues(field, value as ItemValue, columns, bindings);
      else if (field.storage.kind === 'table') side.push({ field, items: (value as ItemValue[]) ?? [] });
    }
    const table = rt.entityType.table;
    const sql = this.sql.writes.get(`insert:${table}:${columns.join(',')}`, () => insertSql(table, columns));
    const id = await insertReturningId(db, sql, bindings as Knex.RawBinding[]);
    for (const { field, items } of side) await writeSide(this.sql, db, field, id, items);
    await noteChanged(db, rt.entityType.entityType, [{ id, uuid, bundle: rt.bundle.bundle }]);
    return id;
  }

  /**
   * Insert many new records of one bundle (an import's page) in a few statements: one multi-row
   * INSERT per table (split only at the database's parameter limit), their change feed rows noted
   * together (storage/unit-of-work.ts). Each row as `insert` takes it. The API's writes go through `insert`; this is the
   * bulk path of `tilth import farmos` (farmos-import/records.ts). Returns the ids in row order.
   */
  async insertMany(
    db: Db,
    rt: ResourceType,
    rows: ReadonlyArray<{
      uuid: string;
      values: Map<string, ItemValue | ItemValue[]>;
      extra?: Record<string, unknown>;
    }>,
  ): Promise<number[]> {
    if (!rows.length) return [];
    const table = rt.entityType.table;
    // Rows with the same columns share a statement (a page's rows of one bundle all do).
    const shapes = new Map<string, { columns: string[]; rows: Array<{ index: number; bindings: unknown[] }> }>();
    const sides = new Map<string, { field: FieldDescriptor; items: Array<{ index: number; items: ItemValue[] }> }>();
    rows.forEach((row, index) => {
      const extra = row.extra ?? {};
      const columns = ['uuid', 'bundle', ...Object.keys(extra)];
      const bindings: unknown[] = [row.uuid, rt.bundle.bundle, ...Object.values(extra)];
      for (const field of rt.bundle.fields) {
        if (!row.values.has(field.name)) continue;
        const value = row.values.get(field.name)!;
        if (field.storage.kind === 'columns') this.columnValues(field, value as ItemValue, columns, bindings);
        else if (field.storage.kind === 'table') {
          let side = sides.get(field.storage.table);
          if (!side) sides.set(field.storage.table, (side = { field, items: [] }));
          side.items.push({ index, items: (value as ItemValue[]) ?? [] });
        }
      }
      const key = columns.join(',');
      let shape = shapes.get(key);
      if (!shape) shapes.set(key, (shape = { columns, rows: [] }));
      shape.rows.push({ index, bindings });
    });
    const ids: number[] = new Array(rows.length);
    for (const { columns, rows: shaped } of shapes.values()) {
      for (const part of chunks(shaped, rowsPerStatement(columns.length))) {
        const sql = this.sql.writes.get(
          `insert-many:${table}:${columns.join(',')}:${part.length}`,
          () => `${insertSql(table, columns, part.length)} RETURNING id, uuid`,
        );
        const returned = await returningRows<{ id: number; uuid: string }>(
          db,
          sql,
          part.flatMap((r) => r.bindings) as Knex.RawBinding[],
        );
        const byUuid = new Map(returned.map((r) => [r.uuid, Number(r.id)]));
        for (const r of part) ids[r.index] = byUuid.get(rows[r.index]!.uuid)!;
      }
    }
    for (const { field, items } of sides.values()) {
      if (field.storage.kind !== 'table') continue;
      const { table: sideTable, names } = sideColumnsOf(field);
      const sideRows = items.flatMap(({ index, items: list }) => sideRowsOf(field, ids[index]!, list));
      for (const part of chunks(sideRows, rowsPerStatement(names.length))) {
        const sql = this.sql.writes.get(`insert:${sideTable}:${part.length}`, () =>
          insertSql(sideTable, names, part.length),
        );
        await execute(db, sql, part.flat() as Knex.RawBinding[]);
      }
    }
    await noteChanged(
      db,
      rt.entityType.entityType,
      rows.map((row, i) => ({ id: ids[i]!, uuid: row.uuid, bundle: rt.bundle.bundle })),
    );
    return ids;
  }

  /**
   * Update the given fields of a record; fields not in `changes` stay as they are. The record gets
   * its feed row (storage/unit-of-work.ts), as an insert and a delete do.
   */
  async update(
    db: Db,
    rt: ResourceType,
    id: number,
    changes: Map<string, ItemValue | ItemValue[]>,
    extra: Record<string, unknown> = {},
  ): Promise<void> {
    const columns = Object.keys(extra);
    const bindings: unknown[] = Object.values(extra);
    if (changes.size || columns.length) await noteChangedIds(db, rt.entityType.entityType, rt.entityType.table, [id]);
    for (const [name, value] of changes) {
      const field = rt.fieldsByName.get(name)!;
      if (field.storage.kind === 'columns') this.columnValues(field, value as ItemValue, columns, bindings);
      else if (field.storage.kind === 'table') {
        const { table } = field.storage;
        await execute(
          db,
          this.sql.writes.get(`clear:${table}`, () => `DELETE FROM ${quote(table)} WHERE entity_id = ?`),
          [id],
        );
        await writeSide(this.sql, db, field, id, (value as ItemValue[]) ?? []);
      }
    }
    if (!columns.length) return;
    const table = rt.entityType.table;
    const sql = this.sql.writes.get(
      `update:${table}:${columns.join(',')}`,
      () => `UPDATE ${quote(table)} SET ${columns.map((c) => `${quote(c)} = ?`).join(', ')} WHERE id = ?`,
    );
    await execute(db, sql, [...bindings, id] as Knex.RawBinding[]);
  }

  /** The columns of a field stored in columns, and their values for `item`, appended. */
  private columnValues(field: FieldDescriptor, item: ItemValue, columns: string[], bindings: unknown[]): void {
    const props = propsFromItem(field, item);
    for (const [prop, column] of Object.entries((field.storage as { columns: Record<string, string> }).columns)) {
      columns.push(column);
      bindings.push(props[prop]);
    }
  }

  /**
   * Delete records and clear single-valued references to them elsewhere (multi-valued ones go
   * with the rows, by foreign key). Side tables of the deleted records cascade too. `locked`: the
   * holders lockForDeletion found and locked with these records (entities/deletion-locks.ts), on
   * PostgreSQL; no save can change them now, so they are not looked for again.
   */
  async delete(db: Db, entityType: string, ids: number[], locked?: Map<string, Set<number>>): Promise<void> {
    if (!ids.length) return;
    const et = this.entityType(entityType);
    // Found first, as the references go with the delete (storage/change-feed.ts lists them).
    const holders = locked ?? (await this.holders.holdersOf(db, entityType, ids));
    for (const { table, column } of this.holders.singleReferencesTo(entityType)) {
      for (const part of chunks(ids))
        await db(table)
          .whereIn(column, part)
          .update({ [column]: null });
    }
    const gone: ChangedRow[] = [];
    for (const part of chunks(ids)) {
      gone.push(...((await db(et.table).whereIn('id', part).select('id', 'uuid', 'bundle')) as ChangedRow[]));
      await db(et.table).whereIn('id', part).delete();
    }
    if (et.revisionId) for (const part of chunks(ids)) await this.revisions.deleteOf(db, entityType, part);
    // The feed's rows are written when the write's unit of work ends (storage/unit-of-work.ts):
    // after its rows, as a save locks its record's row, then its feed row.
    await noteDeleted(
      db,
      entityType,
      gone.map((r) => ({ id: Number(r.id), uuid: r.uuid, bundle: r.bundle })),
    );
    for (const [owner, found] of holders) await noteChangedIds(db, owner, this.entityType(owner).table, [...found]);
  }
}
