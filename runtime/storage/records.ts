/**
 * Reading and writing records of any entity type, driven by the descriptors. A record's values
 * are kept in one internal form per field type (see FieldValue); this module maps them to and from
 * columns and side tables. Every function takes the transaction (or Knex) to run on: SQLite has a
 * single connection, so using another handle inside a transaction would wait forever.
 */
import type { Knex } from 'knex';
import type { FieldDescriptor, EntityTypeDescriptor } from '../model/descriptor.ts';
import type { ModelRegistry, ResourceType } from '../model/registry.ts';
import { FIELD_TYPE_SPECS } from '../model/field-types.ts';
import { decimalOutput, DEFAULT_DECIMAL } from '../values/decimal-value.ts';
import { RevisionStore } from './revisions.ts';
import { SqlMemo, execute, insertReturningId, quoteName as quote, returningRows, selectRows } from './sql.ts';
import { dialectOf, type SqlDialect } from './dialect.ts';
import { directConnectionOf } from './database.ts';
import { FEED_TABLE } from './change-feed.ts';
import { noteChanged, noteChangedIds, noteDeleted } from './unit-of-work.ts';

export type Db = Knex | Knex.Transaction;

/** A reference to another record, with the item properties the field type carries (file description, image alt…). */
export interface Reference {
  targetId: number;
  /** Filled in when the target is loaded: its UUID and bundle; absent for a dangling reference. */
  uuid?: string;
  bundle?: string;
  /** The target's current revision, for entity_reference_revisions fields. */
  revisionId?: number | null;
  meta: Record<string, unknown>;
}

/** The internal value of one item of a field. */
export type ItemValue = string | number | boolean | Record<string, unknown> | Reference | null;

/** A record's identity as read for the change feed. */
type ChangedRow = { id: number; uuid: string; bundle: string };

export interface EntityRecord {
  id: number;
  uuid: string;
  bundle: string;
  revisionId: number | null;
  rt: ResourceType;
  /** Field name → item value (single) or array of item values (multiple). Only loaded fields are present. */
  values: Map<string, ItemValue | ItemValue[]>;
  /** True when this is a past or named revision asked for with `?resourceVersion`: its links name the version. */
  revisionView?: boolean;
  /**
   * The record's version (its change feed position, for the ETag) when it was read with the row
   * (loadByUuid's `withVersion`); null when the feed has no row for it; absent when not read.
   */
  version?: number | null;
}

/**
 * The bundles of the records these references point at, when every one names its own (a
 * reference read from storage or resolved from input does): RecordStore.load then reads only
 * those bundles' columns. Undefined when one does not.
 */
export function knownBundles(refs: readonly Reference[]): string[] | undefined {
  return refs.every((r) => r.bundle) ? [...new Set(refs.map((r) => r.bundle!))] : undefined;
}

/**
 * A place a reference to records of `target` is kept: a single reference's column in the holding
 * entity type's table, or a multi-valued field's side table (`side`); `field` is its field's name
 * (one column or table serves the field in every bundle that has it), `fieldType` its type.
 */
export interface ReferencePlace {
  entityType: string;
  table: string;
  column: string;
  side: boolean;
  target: string;
  field: string;
  fieldType: string;
}

/** How strongly lockRows locks: as an UPDATE of the row's other columns takes, or as a DELETE does (storage/dialect.ts). */
export type { RowLock } from './dialect.ts';

/** SQL chunk size for IN lists; SQLite allows 32766 variables, PostgreSQL 65535. */
const CHUNK = 5000;

export function chunks<T>(items: T[], size = CHUNK): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

/**
 * Lock these rows of an entity table until the transaction ends, in ascending id order, on
 * PostgreSQL (SQLite has one writer): storage/locks.ts, which says what each strength is for.
 * For a save that writes records other than its own (a birth log's children, the assets whose
 * placements it rebuilds): each such record is locked before it is read and written, as a PATCH
 * of it locks it first (jsonapi/handlers/record-access.ts findForUpdate), so that the two wait for
 * each other instead of both replacing its side-table rows.
 */
export { lockRows } from './locks.ts';

/** Most bound parameters of one statement: SQLite's limit (32766) is the lower of the two (PostgreSQL's is 65535). */
const MAX_PARAMETERS = 32766;

/** Rows of `columns` columns one multi-row statement can take; at most 500, so that its text stays short. */
function rowsPerStatement(columns: number): number {
  return Math.max(1, Math.min(500, Math.floor(MAX_PARAMETERS / columns)));
}

/** `INSERT INTO table (columns) VALUES (?, …)`, with `rows` rows of placeholders. */
function insertSql(table: string, columns: readonly string[], rows = 1): string {
  const row = `(${columns.map(() => '?').join(', ')})`;
  return `INSERT INTO ${quote(table)} (${columns.map(quote).join(', ')}) VALUES ${Array.from({ length: rows }, () => row).join(', ')}`;
}

function isReferenceField(field: FieldDescriptor): boolean {
  return FIELD_TYPE_SPECS[field.type].kind === 'relationship';
}

/** Build an item value from stored property values. */
function itemFromProps(field: FieldDescriptor, props: Record<string, unknown>): ItemValue {
  if (isReferenceField(field)) {
    if (props.target_id === null || props.target_id === undefined) return null;
    const meta: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(props))
      if (k !== 'target_id') meta[k] = field.type === 'file' && k === 'display' ? (v === null ? null : Boolean(v)) : v;
    return { targetId: Number(props.target_id), meta } as Reference;
  }
  switch (field.type) {
    case 'boolean':
      return props.value === null || props.value === undefined ? null : Boolean(props.value);
    case 'integer':
    case 'timestamp':
      return props.value === null || props.value === undefined ? null : Number(props.value);
    case 'decimal':
      // SQLite hands back a float (2.75), PostgreSQL a string padded to the scale ("2.7500000000"): one form for both.
      return props.value === null || props.value === undefined
        ? null
        : decimalOutput(props.value as string | number, field.scale ?? DEFAULT_DECIMAL.scale);
    case 'text_long':
      return props.value === null || props.value === undefined
        ? null
        : { value: props.value, format: props.format ?? 'default' };
    case 'fraction':
      return props.numerator === null || props.numerator === undefined
        ? null
        : { numerator: Number(props.numerator), denominator: Number(props.denominator) };
    case 'geofield':
      return props.value === null || props.value === undefined || props.value === '' ? null : { ...props };
    case 'id_tag':
      return { id: props.id ?? null, type: props.type ?? null, location: props.location ?? null };
    default:
      return (props.value as string | null | undefined) ?? null;
  }
}

/** A row of the side tables' statement (RecordStore.sideTablesSql). */
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

/** The stored properties of each field type (not the computed output ones), worked out once. */
const STORED_PROPERTIES = new Map(
  Object.entries(FIELD_TYPE_SPECS).map(([type, spec]) => [
    type,
    Object.entries(spec.properties)
      .filter(([, p]) => !p.output)
      .map(([name]) => name),
  ]),
);

/** Stored property values of an item value. */
function propsFromItem(field: FieldDescriptor, item: ItemValue): Record<string, unknown> {
  const stored = STORED_PROPERTIES.get(field.type)!;
  const out: Record<string, unknown> = {};
  for (const p of stored) out[p] = null;
  if (item === null || item === undefined) return out;
  if (isReferenceField(field)) {
    const ref = item as Reference;
    out.target_id = ref.targetId;
    for (const p of stored) if (p !== 'target_id' && ref.meta[p] !== undefined) out[p] = ref.meta[p];
    return out;
  }
  if (stored.length === 1) {
    out.value = item;
    return out;
  }
  for (const p of stored) out[p] = (item as Record<string, unknown>)[p] ?? null;
  return out;
}

/** How a multi-valued field is stored: a side table of its own. */
type SideStorage = Extract<FieldDescriptor['storage'], { kind: 'table' }>;

/** A multi-valued field's side table and its columns: entity_id, delta, then the field's own. */
function sideColumnsOf(field: FieldDescriptor): { table: string; names: string[] } {
  const { table, columns } = field.storage as SideStorage;
  return { table, names: ['entity_id', 'delta', ...Object.values(columns)] };
}

/**
 * The rows of a multi-valued field's side table for one record's items, in sideColumnsOf's column
 * order: its id, the item's place (delta), then the item's stored properties. The API's writes
 * (writeSide) and an import's bulk inserts (insertMany) both build their rows here.
 */
function sideRowsOf(field: FieldDescriptor, id: number, items: readonly ItemValue[]): unknown[][] {
  const props = Object.keys((field.storage as SideStorage).columns);
  return items.map((item, delta) => {
    const values = propsFromItem(field, item);
    return [id, delta, ...props.map((p) => values[p])];
  });
}

export class RecordStore {
  /** The revisions of revisioned entity types (storage/revisions.ts). */
  readonly revisions: RevisionStore;

  constructor(readonly registry: ModelRegistry) {
    this.revisions = new RevisionStore((name) => this.entityType(name));
  }

  entityType(name: string): EntityTypeDescriptor {
    return this.registry.model.entityTypes[name]!;
  }

  /** Find the internal id and bundle of a record by UUID within an entity type. */
  async findByUuid(db: Db, entityType: string, uuid: string): Promise<{ id: number; bundle: string } | null> {
    const sql = this.sql.get(
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
    const sql = this.sql.get(`load:${entityType}:${dialect.name}:${single}:${selected?.key ?? '*'}`, () =>
      this.rowsSql(entityType, selected?.columns ?? null, dialect.inIdList('e.id', single)),
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
    const sql = this.sql.get(`load-uuid:${entityType}:${key}:${withVersion}`, () =>
      this.rowsSql(entityType, columns, 'e.uuid = ? AND e.bundle = ?', withVersion),
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
   * The statement reading rows of an entity type (`columns`, or all) with their single references'
   * targets joined; with `withVersion`, also each row's change feed position (`tilth_version`, one
   * lookup by the feed's key, its entity type the statement's first parameter): a record read for
   * its ETag then needs no second statement (storage/change-feed.ts versionOf reads the same).
   */
  private rowsSql(entityType: string, columns: string[] | null, where: string, withVersion = false): string {
    const et = this.entityType(entityType);
    const selected = columns ? columns.map((c) => `e.${quote(c)}`) : ['e.*'];
    if (withVersion)
      selected.push(`(SELECT position FROM ${FEED_TABLE} WHERE entity_type = ? AND entity_id = e.id) AS tilth_version`);
    const from = [`${quote(et.table)} AS e`];
    for (const j of this.singleReferenceJoins(entityType)) {
      if (columns && !columns.includes(j.column)) continue;
      selected.push(`${j.alias}.uuid AS ${j.alias}_uuid`, `${j.alias}.bundle AS ${j.alias}_bundle`);
      if (j.revisions) selected.push(`${j.alias}.revision_id AS ${j.alias}_rev`);
      from.push(`LEFT JOIN ${quote(j.table)} AS ${j.alias} ON ${j.alias}.id = e.${quote(j.column)}`);
    }
    return `SELECT ${selected.join(', ')} FROM ${from.join(' ')} WHERE ${where}`;
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
    const joins = this.singleReferenceJoins(entityType);
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
    await this.loadSideTables(db, [...sideFields.values()]);
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

  /**
   * Fill the multi-valued fields of loaded records from their side tables, every side table in one
   * UNION ALL statement (a log has ten of them: one query instead of ten), each branch joining
   * the reference's target for its UUID, bundle and revision (sideTablesSql).
   */
  private async loadSideTables(
    db: Db,
    sides: Array<{ field: FieldDescriptor; records: EntityRecord[] }>,
  ): Promise<void> {
    if (!sides.length) return;
    const dialect = dialectOf(db);
    const owners = new Map<number, EntityRecord>();
    for (const side of sides) for (const r of side.records) owners.set(r.id, r);
    const single = owners.size === 1;
    const sql = this.sql.get(
      `sides:${dialect.name}:${single}:${sides.map((s) => (s.field.storage as { table: string }).table).join(',')}`,
      () =>
        this.sideTablesSql(
          dialect,
          sides.map((s) => s.field),
          single,
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
   * Every side table of `fields` in one statement, the branches lined up column by column. On
   * SQLite a branch selects its field's properties as columns v0, v1, … (NULL where it has fewer);
   * PostgreSQL wants one type per column of a UNION, so there each branch selects its properties
   * as one JSON object instead. Each branch joins the reference's target.
   */
  private sideTablesSql(dialect: SqlDialect, fields: FieldDescriptor[], single: boolean): string {
    const width = Math.max(
      ...fields.map((f) => Object.keys((f.storage as { columns: Record<string, string> }).columns).length),
    );
    const branches = fields.map((field, i) => {
      const { table, columns } = field.storage as { table: string; columns: Record<string, string> };
      const target = isReferenceField(field) ? this.entityType(field.target!.entityType) : null;
      const stored = Object.values(columns);
      const props = dialect.unionOfOneType
        ? `json_build_object(${Object.entries(columns)
            .flatMap(([prop, column]) => [`'${prop}'`, `s.${quote(column)}`])
            .join(', ')}) AS p`
        : Array.from(
            { length: width },
            (_, j) => `${j < stored.length ? `s.${quote(stored[j]!)}` : 'NULL'} AS v${j}`,
          ).join(', ');
      const targetColumns = target
        ? `t.uuid AS t_uuid, t.bundle AS t_bundle, ${target.revisionId ? 't.revision_id' : 'CAST(NULL AS integer)'} AS t_rev`
        : 'CAST(NULL AS text) AS t_uuid, CAST(NULL AS text) AS t_bundle, CAST(NULL AS integer) AS t_rev';
      const join = target ? ` LEFT JOIN ${quote(target.table)} AS t ON t.id = s.target_id` : '';
      return `SELECT ${i} AS k, s.entity_id, s.delta, ${props}, ${targetColumns} FROM ${quote(table)} AS s${join} WHERE ${dialect.inIdList('s.entity_id', single)}`;
    });
    return `SELECT * FROM (${branches.join(' UNION ALL ')}) AS u ORDER BY entity_id, k, delta`;
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

  /** Built SQL text, by entity type and shape: reads, and writes apart (a PATCH's columns vary with what it sends). */
  private readonly sql = new SqlMemo();
  private readonly writeSql = new SqlMemo();

  private joinCache = new Map<string, Array<{ column: string; table: string; alias: string; revisions: boolean }>>();

  /** One LEFT JOIN per single-valued reference column of the entity type. */
  private singleReferenceJoins(
    entityType: string,
  ): Array<{ column: string; table: string; alias: string; revisions: boolean }> {
    let joins = this.joinCache.get(entityType);
    if (joins) return joins;
    joins = [];
    const seen = new Set<string>();
    for (const bundle of this.registry.model.bundles) {
      if (bundle.entityType !== entityType) continue;
      for (const field of bundle.fields) {
        if (!isReferenceField(field) || field.storage.kind !== 'columns') continue;
        const column = field.storage.columns.target_id!;
        if (seen.has(column)) continue;
        seen.add(column);
        const target = this.entityType(field.target!.entityType);
        joins.push({ column, table: target.table, alias: `j${joins.length}`, revisions: Boolean(target.revisionId) });
      }
    }
    this.joinCache.set(entityType, joins);
    return joins;
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
      const sql = this.sql.get(
        `targets:${entityType}:${dialect.name}:${single}`,
        () =>
          `SELECT id, uuid, bundle${et.revisionId ? ', revision_id' : ''} FROM ${quote(et.table)} WHERE ${dialect.inIdList('id', single)}`,
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
    const sql = this.writeSql.get(`insert:${table}:${columns.join(',')}`, () => insertSql(table, columns));
    const id = await insertReturningId(db, sql, bindings as Knex.RawBinding[]);
    for (const { field, items } of side) await this.writeSide(db, field, id, items);
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
        const sql = this.writeSql.get(
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
        const sql = this.writeSql.get(`insert:${sideTable}:${part.length}`, () =>
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
          this.writeSql.get(`clear:${table}`, () => `DELETE FROM ${quote(table)} WHERE entity_id = ?`),
          [id],
        );
        await this.writeSide(db, field, id, (value as ItemValue[]) ?? []);
      }
    }
    if (!columns.length) return;
    const table = rt.entityType.table;
    const sql = this.writeSql.get(
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
   * A multi-valued field's items as rows of its side table. On SQLite in a transaction, one
   * prepared single-row statement run per item; elsewhere (PostgreSQL: a round trip per
   * statement) rows go 500 to a statement.
   */
  private async writeSide(db: Db, field: FieldDescriptor, id: number, items: ItemValue[]): Promise<void> {
    if (field.storage.kind !== 'table' || !items.length) return;
    const { table, names } = sideColumnsOf(field);
    // Rows are numbered (delta) before they are split into statements.
    const rows = sideRowsOf(field, id, items);
    const direct = directConnectionOf(db);
    if (direct) {
      const sql = this.writeSql.get(`insert:${table}:1`, () => insertSql(table, names));
      for (const row of rows) direct.run(sql, row);
      return;
    }
    for (const part of chunks(rows, 500)) {
      const sql = this.writeSql.get(`insert:${table}:${part.length}`, () => insertSql(table, names, part.length));
      await execute(db, sql, part.flat() as Knex.RawBinding[]);
    }
  }

  /**
   * The records that refer to these (other than themselves), by entity type: a delete of these
   * changes them too (their references go), so the change feed lists them.
   */
  async holdersOf(db: Db, entityType: string, ids: number[]): Promise<Map<string, Set<number>>> {
    const holders = new Map<string, Set<number>>();
    for (const { entityType: owner, table, column, side } of this.referencesTo(entityType)) {
      for (const part of chunks(ids)) {
        for (const h of (await db(table)
          .whereIn(column, part)
          .distinct(side ? 'entity_id as id' : 'id')) as Array<{ id: number }>) {
          if (owner === entityType && ids.includes(Number(h.id))) continue;
          if (!holders.has(owner)) holders.set(owner, new Set());
          holders.get(owner)!.add(Number(h.id));
        }
      }
    }
    return holders;
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
    const holders = locked ?? (await this.holdersOf(db, entityType, ids));
    for (const { table, column } of this.singleReferencesTo(entityType)) {
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

  /**
   * The references to these records held at one place (referencesTo), as pairs of the record
   * referred to and the record holding the reference, in ascending holders; a record of the same
   * type among `ids` is left out (it goes with them).
   */
  async referencesAt(db: Db, place: ReferencePlace, ids: number[]): Promise<Array<{ target: number; holder: number }>> {
    const pairs: Array<{ target: number; holder: number }> = [];
    const holder = place.side ? 'entity_id' : 'id';
    for (const part of chunks(ids)) {
      const rows = (await db(place.table)
        .whereIn(place.column, part)
        .distinct(`${holder} as holder`, `${place.column} as target`)) as Array<{ holder: number; target: number }>;
      for (const row of rows) pairs.push({ target: Number(row.target), holder: Number(row.holder) });
    }
    const own = new Set(place.entityType === place.target ? ids : []);
    return pairs.filter((p) => !own.has(p.holder)).sort((a, b) => a.holder - b.holder);
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

  /**
   * Make every reference to record `from` of the entity type refer to `to` instead (`tilth user
   * delete --reassign-to`); a record that names both keeps one. The records changed get a new
   * version in the change feed. On PostgreSQL the caller has locked them (entities/deletion-locks.ts).
   */
  async moveReferences(db: Db, entityType: string, from: number, to: number): Promise<void> {
    const holders = await this.holdersOf(db, entityType, [from]);
    for (const { table, column, side } of this.referencesTo(entityType)) {
      if (side)
        await db(table)
          .where(column, from)
          .whereIn('entity_id', db(table).where(column, to).select('entity_id'))
          .delete();
      await db(table)
        .where(column, from)
        .update({ [column]: to });
    }
    for (const [owner, found] of holders) await noteChangedIds(db, owner, this.entityType(owner).table, [...found]);
  }

  private referenceCache = new Map<string, Array<{ table: string; column: string }>>();
  private holderCache = new Map<string, ReferencePlace[]>();

  /**
   * Every place a record of the entity type can be referred to from: a single reference's column
   * in its entity table, or a multi-valued one's side table (`entity_id` → `target_id`).
   */
  referencesTo(entityType: string): ReferencePlace[] {
    let cached = this.holderCache.get(entityType);
    if (cached) return cached;
    const seen = new Set<string>();
    cached = [];
    for (const bundle of this.registry.model.bundles) {
      for (const field of bundle.fields) {
        if (field.target?.entityType !== entityType) continue;
        const owner = bundle.entityType;
        const entry =
          field.storage.kind === 'columns'
            ? {
                entityType: owner,
                table: this.registry.model.entityTypes[owner]!.table,
                column: field.storage.columns.target_id!,
                side: false,
                target: entityType,
                field: field.name,
                fieldType: field.type,
              }
            : field.storage.kind === 'table'
              ? {
                  entityType: owner,
                  table: field.storage.table,
                  column: field.storage.columns.target_id!,
                  side: true,
                  target: entityType,
                  field: field.name,
                  fieldType: field.type,
                }
              : null;
        if (!entry || seen.has(`${entry.table}.${entry.column}`)) continue;
        seen.add(`${entry.table}.${entry.column}`);
        cached.push(entry);
      }
    }
    this.holderCache.set(entityType, cached);
    return cached;
  }

  /** Every (table, column) holding a single-valued reference to the entity type, across all bundles. */
  singleReferencesTo(entityType: string): Array<{ table: string; column: string }> {
    let cached = this.referenceCache.get(entityType);
    if (!cached) this.referenceCache.set(entityType, (cached = this.referencesTo(entityType).filter((r) => !r.side)));
    return cached;
  }
}
