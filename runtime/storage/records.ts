/**
 * Reading and writing records of any entity type, driven by the descriptors: RecordStore, the one
 * object the rest of Tilth uses, over the parts that do each job (issue 40 §6):
 * - storage/record-values.ts: the record and value types, and item values ↔ stored properties;
 * - storage/record-reads.ts: loading records by id or UUID, resolving references;
 * - storage/record-writes.ts: inserting, updating and deleting records;
 * - storage/record-side-tables.ts: multi-valued fields' side tables, read and written;
 * - storage/record-holders.ts: where references to an entity type are kept, who holds them;
 * - storage/record-sql.ts: the statements' SQL text, built once per shape;
 * - storage/locks.ts: locking rows (lockRows).
 * Every function takes the transaction (or Knex) to run on: SQLite has a single connection, so
 * using another handle inside a transaction would wait forever.
 */
import type { FieldDescriptor, EntityTypeDescriptor } from '../model/descriptor.ts';
import type { ModelRegistry, ResourceType } from '../model/registry.ts';
import { RevisionStore } from './revisions.ts';
import { RecordSql } from './record-sql.ts';
import { RecordReads } from './record-reads.ts';
import { RecordWrites } from './record-writes.ts';
import { RecordHolders } from './record-holders.ts';
import type { Db, EntityRecord, ItemValue, ReferencePlace } from './record-values.ts';

export {
  chunks,
  knownBundles,
  type Db,
  type EntityRecord,
  type ItemValue,
  type Reference,
  type ReferencePlace,
} from './record-values.ts';

/** How strongly lockRows locks: as an UPDATE of the row's other columns takes, or as a DELETE does (storage/dialect.ts). */
export type { RowLock } from './dialect.ts';

/**
 * Lock these rows of an entity table until the transaction ends, in ascending id order, on
 * PostgreSQL (SQLite has one writer): storage/locks.ts, which says what each strength is for.
 * For a save that writes records other than its own (a birth log's children, the assets whose
 * placements it rebuilds): each such record is locked before it is read and written, as a PATCH
 * of it locks it first (jsonapi/handlers/record-access.ts findForUpdate), so that the two wait for
 * each other instead of both replacing its side-table rows.
 */
export { lockRows } from './locks.ts';

export class RecordStore {
  /** The revisions of revisioned entity types (storage/revisions.ts). */
  readonly revisions: RevisionStore;
  private readonly sql: RecordSql;
  private readonly reads: RecordReads;
  private readonly writes: RecordWrites;
  private readonly holders: RecordHolders;

  constructor(readonly registry: ModelRegistry) {
    this.revisions = new RevisionStore((name) => this.entityType(name));
    this.sql = new RecordSql(registry);
    this.reads = new RecordReads(this.sql);
    this.holders = new RecordHolders(registry);
    this.writes = new RecordWrites(this.sql, this.holders, this.revisions);
  }

  entityType(name: string): EntityTypeDescriptor {
    return this.registry.model.entityTypes[name]!;
  }

  /** Find the internal id and bundle of a record by UUID within an entity type (storage/record-reads.ts). */
  findByUuid(db: Db, entityType: string, uuid: string): Promise<{ id: number; bundle: string } | null> {
    return this.reads.findByUuid(db, entityType, uuid);
  }

  /** Load records of one entity type by internal id, in the order given (storage/record-reads.ts). */
  load(
    db: Db,
    entityType: string,
    ids: number[],
    fields?: (rt: ResourceType) => FieldDescriptor[],
    bundles?: readonly string[],
  ): Promise<EntityRecord[]> {
    return this.reads.load(db, entityType, ids, fields, bundles);
  }

  /** The record of `bundle` with this UUID, read as load() reads it (storage/record-reads.ts). */
  loadByUuid(
    db: Db,
    entityType: string,
    uuid: string,
    bundle: string,
    fields?: (rt: ResourceType) => FieldDescriptor[],
    options: { withVersion?: boolean } = {},
  ): Promise<EntityRecord | null> {
    return this.reads.loadByUuid(db, entityType, uuid, bundle, fields, options);
  }

  /** Fill in the UUID and bundle of every reference, one query per target entity type (storage/record-reads.ts). */
  resolveReferences(db: Db, records: EntityRecord[]): Promise<void> {
    return this.reads.resolveReferences(db, records);
  }

  /** The UUIDs of these records, by id. */
  uuidsOf(db: Db, entityType: string, ids: number[]): Promise<Map<number, string>> {
    return this.reads.uuidsOf(db, entityType, ids);
  }

  /** Insert a new record; returns its internal id (storage/record-writes.ts). */
  insert(
    db: Db,
    rt: ResourceType,
    uuid: string,
    values: Map<string, ItemValue | ItemValue[]>,
    extra: Record<string, unknown> = {},
  ): Promise<number> {
    return this.writes.insert(db, rt, uuid, values, extra);
  }

  /** Insert many new records of one bundle (an import's page) in a few statements (storage/record-writes.ts). */
  insertMany(
    db: Db,
    rt: ResourceType,
    rows: ReadonlyArray<{
      uuid: string;
      values: Map<string, ItemValue | ItemValue[]>;
      extra?: Record<string, unknown>;
    }>,
  ): Promise<number[]> {
    return this.writes.insertMany(db, rt, rows);
  }

  /** Update the given fields of a record (storage/record-writes.ts). */
  update(
    db: Db,
    rt: ResourceType,
    id: number,
    changes: Map<string, ItemValue | ItemValue[]>,
    extra: Record<string, unknown> = {},
  ): Promise<void> {
    return this.writes.update(db, rt, id, changes, extra);
  }

  /** Delete records and clear single-valued references to them elsewhere (storage/record-writes.ts). */
  delete(db: Db, entityType: string, ids: number[], locked?: Map<string, Set<number>>): Promise<void> {
    return this.writes.delete(db, entityType, ids, locked);
  }

  /** The records that refer to these (other than themselves), by entity type (storage/record-holders.ts). */
  holdersOf(db: Db, entityType: string, ids: number[]): Promise<Map<string, Set<number>>> {
    return this.holders.holdersOf(db, entityType, ids);
  }

  /** The references to these records held at one place, as (target, holder) pairs (storage/record-holders.ts). */
  referencesAt(db: Db, place: ReferencePlace, ids: number[]): Promise<Array<{ target: number; holder: number }>> {
    return this.holders.referencesAt(db, place, ids);
  }

  /** Make every reference to record `from` refer to `to` instead (storage/record-holders.ts). */
  moveReferences(db: Db, entityType: string, from: number, to: number): Promise<void> {
    return this.holders.moveReferences(db, entityType, from, to);
  }

  /** Every place a record of the entity type can be referred to from (storage/record-holders.ts). */
  referencesTo(entityType: string): ReferencePlace[] {
    return this.holders.referencesTo(entityType);
  }

  /** Every (table, column) holding a single-valued reference to the entity type, across all bundles. */
  singleReferencesTo(entityType: string): Array<{ table: string; column: string }> {
    return this.holders.singleReferencesTo(entityType);
  }
}
