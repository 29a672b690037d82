/**
 * Reading records: by id or UUID, a page at a time, with their single references' targets joined,
 * their side tables read together (storage/record-side-tables.ts) and the rest of their
 * references resolved.
 */
import type { FieldDescriptor } from '../model/descriptor.ts';
import type { ResourceType } from '../model/registry.ts';
import { quoteName as quote, selectRows } from './sql.ts';
import { dialectOf } from './dialect.ts';
import {
  chunks,
  itemFromProps,
  isReferenceField,
  type Db,
  type EntityRecord,
  type ItemValue,
  type Reference,
} from './record-values.ts';
import type { RecordSql } from './record-sql.ts';
import { loadSideTables } from './record-side-tables.ts';

export class RecordReads {
  constructor(private readonly sql: RecordSql) {}

  private get registry() {
    return this.sql.registry;
  }

  private entityType(name: string) {
    return this.sql.entityType(name);
  }

  /** Find the internal id and bundle of a record by UUID within an entity type. */
  async findByUuid(db: Db, entityType: string, uuid: string): Promise<{ id: number; bundle: string } | null> {
    const sql = this.sql.reads.get(
      `uuid:${entityType}`,
      () => `SELECT id, bundle FROM ${quote(this.entityType(entityType).table)} WHERE uuid = ?`,
    );
    const [row] = await selectRows<{ id: number; bundle: string }>(db, sql, [uuid]);
    return row ? { id: Number(row.id), bundle: row.bundle } : null;
  }

  /**
   * Load records of one entity type by internal id, in the order given. Records of bundles that
   * are switched off are left out. `fields` limits which fields are read (side tables cost a query each).
   * `bundles`, when the caller knows them (a bundle's collection, a record found by UUID), limits
   * the columns read to those of the bundles' fields: the table of an entity type holds the
   * columns of all its bundles (41 for logs, 26 of them an activity log's). A row of another
   * bundle is still loaded, by a second statement that reads every column.
   */
  async load(
    db: Db,
    entityType: string,
    ids: number[],
    fields?: (rt: ResourceType) => FieldDescriptor[],
    bundles?: readonly string[],
  ): Promise<EntityRecord[]> {
    if (!ids.length) return [];
    const dialect = dialectOf(db);
    const selected = bundles ? this.columnsOf(entityType, bundles, fields) : null;
    const unique = [...new Set(ids)];
    const single = unique.length === 1;
    const sql = this.sql.reads.get(`load:${entityType}:${dialect.name}:${single}:${selected?.key ?? '*'}`, () =>
      this.sql.rowsSql(entityType, selected?.columns ?? null, dialect.inIdList('e.id', { single })),
    );
    const rows = await selectRows<any>(db, sql, [dialect.idListParameter(unique)]);
    const { byId, unexpected } = await this.recordsOf(db, entityType, rows, fields, bundles);
    if (unexpected.length)
      for (const record of await this.load(db, entityType, unexpected, fields)) byId.set(record.id, record);
    return ids.map((id) => byId.get(id)).filter((r): r is EntityRecord => Boolean(r));
  }

  /**
   * The record of `bundle` with this UUID, read as load() reads it but found by its UUID in the
   * same statement (one statement fewer than findByUuid then load); null when there is none, or
   * when the UUID is another bundle's.
   */
  async loadByUuid(
    db: Db,
    entityType: string,
    uuid: string,
    bundle: string,
    fields?: (rt: ResourceType) => FieldDescriptor[],
    options: { withVersion?: boolean } = {},
  ): Promise<EntityRecord | null> {
    const { columns, key } = this.columnsOf(entityType, [bundle], fields);
    const withVersion = options.withVersion === true;
    const sql = this.sql.reads.get(`load-uuid:${entityType}:${key}:${withVersion}`, () =>
      this.sql.rowsSql(entityType, columns, 'e.uuid = ? AND e.bundle = ?', { withVersion }),
    );
    const rows = await selectRows<any>(db, sql, withVersion ? [entityType, uuid, bundle] : [uuid, bundle]);
    const { byId } = await this.recordsOf(db, entityType, rows, fields, [bundle]);
    const record: EntityRecord | null = byId.values().next().value ?? null;
    if (record && withVersion)
      record.version =
        rows[0].tilth_version === null || rows[0].tilth_version === undefined ? null : Number(rows[0].tilth_version);
    return record;
  }

  /**
   * Records from rows read by rowsSql, with their side tables and references filled. Rows of
   * bundles other than `bundles` (when given) are not made into records: their ids come back as
   * `unexpected`, for the caller to load with every column.
   */
  private async recordsOf(
    db: Db,
    entityType: string,
    rows: any[],
    fields?: (rt: ResourceType) => FieldDescriptor[],
    bundles?: readonly string[],
  ): Promise<{ byId: Map<number, EntityRecord>; unexpected: number[] }> {
    // Single-valued references are joined to their targets by rowsSql, so rendering them needs no
    // further query (the UUID and bundle of the target travel with the row).
    const joins = this.sql.singleReferenceJoins(entityType);
    const byId = new Map<number, EntityRecord>();
    const sideFields = new Map<string, { field: FieldDescriptor; records: EntityRecord[] }>();
    // The fields to read, once per bundle on the page rather than once per row.
    const fieldsOf = new Map<ResourceType, FieldDescriptor[]>();
    const unexpected: number[] = [];
    for (const row of rows) {
      if (bundles && !bundles.includes(row.bundle)) {
        unexpected.push(Number(row.id));
        continue;
      }
      const rt = this.registry.get(`${entityType}--${row.bundle}`);
      if (!rt) continue;
      const record: EntityRecord = {
        id: Number(row.id),
        uuid: row.uuid,
        bundle: row.bundle,
        revisionId: row.revision_id ?? null,
        rt,
        values: new Map(),
      };
      let list = fieldsOf.get(rt);
      if (!list) fieldsOf.set(rt, (list = fields ? fields(rt) : rt.bundle.fields));
      for (const field of list) {
        if (field.storage.kind === 'columns') record.values.set(field.name, this.columnReader(field, joins)(row));
        else if (field.storage.kind === 'table') {
          record.values.set(field.name, []);
          let entry = sideFields.get(field.storage.table);
          if (!entry) sideFields.set(field.storage.table, (entry = { field, records: [] }));
          entry.records.push(record);
        }
      }
      byId.set(record.id, record);
    }
    await loadSideTables(this.sql, db, [...sideFields.values()]);
    await this.resolveReferences(db, [...byId.values()]);
    return { byId, unexpected };
  }

  private readonly columnsCache = new WeakMap<readonly FieldDescriptor[], { columns: string[]; key: string }>();

  /**
   * The columns load() reads for records of these bundles: identity, then each field's, in a
   * stable order; and the list joined, to key the statement by. Kept per field list when there
   * is one bundle (a bundle's whole field list is the same array on every request).
   */
  private columnsOf(
    entityType: string,
    bundles: readonly string[],
    fields?: (rt: ResourceType) => FieldDescriptor[],
  ): { columns: string[]; key: string } {
    const et = this.entityType(entityType);
    const lists = bundles.flatMap((bundle) => {
      const rt = this.registry.get(`${entityType}--${bundle}`);
      return rt ? [fields ? fields(rt) : rt.bundle.fields] : [];
    });
    const known = lists.length === 1 ? this.columnsCache.get(lists[0]!) : undefined;
    if (known) return known;
    const columns = new Set(['id', 'uuid', 'bundle']);
    if (et.revisionId) columns.add('revision_id');
    for (const list of lists) {
      for (const field of list) {
        if (field.storage.kind === 'columns')
          for (const column of Object.values(field.storage.columns)) columns.add(column);
      }
    }
    const result = { columns: [...columns], key: [...columns].join(',') };
    if (lists.length === 1) this.columnsCache.set(lists[0]!, result);
    return result;
  }

  /** By the entity type's joins (cached per entity type), then by field. */
  private readonly columnReaders = new WeakMap<
    object,
    WeakMap<FieldDescriptor, (row: Record<string, unknown>) => ItemValue>
  >();

  /**
   * How a field stored in columns is read from a row of load()'s statement, worked out once per
   * field: its columns, and for a reference the joined target's UUID, bundle and revision.
   */
  private columnReader(
    field: FieldDescriptor,
    joins: Array<{ column: string; alias: string }>,
  ): (row: Record<string, unknown>) => ItemValue {
    let readers = this.columnReaders.get(joins);
    if (!readers) this.columnReaders.set(joins, (readers = new WeakMap()));
    let read = readers.get(field);
    if (read) return read;
    const columns = Object.entries((field.storage as { columns: Record<string, string> }).columns);
    const join = isReferenceField(field)
      ? joins.find((j) => j.column === (field.storage as { columns: Record<string, string> }).columns.target_id)
      : undefined;
    const [uuid, bundle, rev] = join ? [`${join.alias}_uuid`, `${join.alias}_bundle`, `${join.alias}_rev`] : [];
    read = (row) => {
      const props: Record<string, unknown> = {};
      for (const [prop, column] of columns) props[prop] = row[column];
      const item = itemFromProps(field, props);
      if (item && uuid && row[uuid]) {
        const ref = item as Reference;
        ref.uuid = row[uuid] as string;
        ref.bundle = row[bundle!] as string;
        ref.revisionId = (row[rev!] as number | null | undefined) ?? null;
      }
      return item;
    };
    readers.set(field, read);
    return read;
  }

  /** Fill in the UUID and bundle of every reference, one query per target entity type. */
  async resolveReferences(db: Db, records: EntityRecord[]): Promise<void> {
    const wanted = new Map<string, Set<number>>();
    const refs: Array<{ ref: Reference; entityType: string }> = [];
    for (const record of records) {
      for (const field of record.rt.relationships) {
        const value = record.values.get(field.name);
        if (value === undefined || value === null) continue;
        for (const item of Array.isArray(value) ? value : [value]) {
          const ref = item as Reference;
          if (!ref || ref.uuid) continue;
          const et = field.target!.entityType;
          refs.push({ ref, entityType: et });
          let set = wanted.get(et);
          if (!set) wanted.set(et, (set = new Set()));
          set.add(ref.targetId);
        }
      }
    }
    for (const [entityType, ids] of wanted) {
      const found = new Map<number, { uuid: string; bundle: string; revisionId: number | null }>();
      const et = this.entityType(entityType);
      const dialect = dialectOf(db);
      const single = ids.size === 1;
      const sql = this.sql.reads.get(
        `targets:${entityType}:${dialect.name}:${single}`,
        () =>
          `SELECT id, uuid, bundle${et.revisionId ? ', revision_id' : ''} FROM ${quote(et.table)} WHERE ${dialect.inIdList('id', { single })}`,
      );
      for (const row of await selectRows<{ id: number; uuid: string; bundle: string; revision_id?: number | null }>(
        db,
        sql,
        [dialect.idListParameter([...ids])],
      )) {
        found.set(Number(row.id), { uuid: row.uuid, bundle: row.bundle, revisionId: row.revision_id ?? null });
      }
      for (const { ref, entityType: et } of refs) {
        if (et !== entityType) continue;
        const hit = found.get(ref.targetId);
        if (hit) {
          ref.uuid = hit.uuid;
          ref.bundle = hit.bundle;
          // A revision's snapshot names the target revision it referenced then; keep that one.
          if (ref.revisionId === undefined) ref.revisionId = hit.revisionId;
        }
      }
    }
  }

  /** The UUIDs of these records, by id. */
  async uuidsOf(db: Db, entityType: string, ids: number[]): Promise<Map<number, string>> {
    const uuids = new Map<number, string>();
    for (const part of chunks(ids)) {
      for (const row of (await db(this.entityType(entityType).table)
        .whereIn('id', part)
        .select('id', 'uuid')) as Array<{ id: number; uuid: string }>)
        uuids.set(Number(row.id), row.uuid);
    }
    return uuids;
  }
}
