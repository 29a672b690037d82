/**
 * The one owner of a write's change-feed rows. Every record a write creates, changes or deletes
 * (its cascades too: a log's quantities, the records that referred to a deleted one, the assets
 * whose placements or inventory were rebuilt, the files made permanent, a birth log's children)
 * is noted here as it is touched, and each gets ONE feed row (storage/change-feed.ts
 * recordChanges), written when the write's unit of work ends: after every row the write locks and
 * writes, before its transaction commits. Its position is the record's version (the ETag), so a
 * version read after the unit ends is the write's.
 *
 * A unit is opened with `inUnitOfWork(db, fn)` around a whole write (EntityService's create,
 * update and delete; an importer's record or page; an account change), on the write's
 * transaction object. A unit opened while one is open on the same object joins it (a birth log's
 * children are saved as updates inside the log's save): only the outermost one writes. A unit
 * whose body throws writes nothing; its transaction (or savepoint) rolls back the rest.
 *
 * Writes that note records with no unit open on their transaction object (a savepoint's own
 * object, a rebuild in a transaction of its own) have them written at once: nothing that writes a
 * record through RecordStore can forget its feed row.
 *
 * On SQLite a group commit's writes share one transaction object (storage/group-commit.ts), but
 * run one after another, each awaited to its end: a unit is opened and ended within one of them,
 * and each write still gets versions of its own.
 *
 * Lock order: a feed row is written last, after its record's row (locked by the write or made by
 * it), as every save takes them (row, then feed row; an If-Match check locks the feed row after
 * the record's row too). Rows are written by entity type in the order the write first noted one,
 * each type's in ascending ids.
 */
import type { Db } from './records.ts';
import { recordChangedIds, recordChanges, type ChangedRecord } from './change-feed.ts';

/** What one entity type's records became in a unit: known (uuid and bundle), known by id only, or deleted. */
interface Touched {
  table: string | null;
  /** id → the record's identity when known, or null (read at the end: a cascade knows ids only). */
  changed: Map<number, ChangedRecord | null>;
  deleted: Map<number, ChangedRecord>;
}

export class UnitOfWork {
  private readonly touched = new Map<string, Touched>();

  private of(entityType: string): Touched {
    let t = this.touched.get(entityType);
    if (!t) this.touched.set(entityType, (t = { table: null, changed: new Map(), deleted: new Map() }));
    return t;
  }

  /** Records created or changed, with their identity. */
  changed(entityType: string, records: readonly ChangedRecord[]): void {
    const t = this.of(entityType);
    for (const r of records)
      if (!t.deleted.has(r.id)) t.changed.set(r.id, { id: r.id, uuid: r.uuid, bundle: r.bundle });
  }

  /** Records changed, known by id only (their identity is read from `table` at the end). */
  changedIds(entityType: string, table: string, ids: Iterable<number>): void {
    const t = this.of(entityType);
    t.table = table;
    for (const id of ids) if (!t.deleted.has(id) && !t.changed.get(id)) t.changed.set(id, null);
  }

  /** Records deleted: a tombstone, whatever else the unit did to them. */
  deleted(entityType: string, records: readonly ChangedRecord[]): void {
    const t = this.of(entityType);
    for (const r of records) {
      t.changed.delete(r.id);
      t.deleted.set(r.id, { id: r.id, uuid: r.uuid, bundle: r.bundle });
    }
  }

  /** Write each noted record's feed row once (see the comment at the top). */
  async write(db: Db): Promise<void> {
    for (const [entityType, t] of this.touched) {
      const ascending = (a: number, b: number) => a - b;
      const known: ChangedRecord[] = [];
      const byId: number[] = [];
      for (const id of [...t.changed.keys()].sort(ascending)) {
        const record = t.changed.get(id);
        if (record) known.push(record);
        else byId.push(id);
      }
      await recordChanges(db, entityType, known);
      if (byId.length && t.table) await recordChangedIds(db, entityType, t.table, byId);
      await recordChanges(
        db,
        entityType,
        [...t.deleted.values()].sort((a, b) => a.id - b.id),
        { deleted: true },
      );
    }
    this.touched.clear();
  }
}

/** The unit open on each transaction object. */
const open = new WeakMap<object, UnitOfWork>();

/**
 * Run `fn` as one unit of work on `db`: the feed rows of every record it notes are written once,
 * when it returns. Joins the unit already open on `db`, if any (the outer one writes them).
 */
export async function inUnitOfWork<T>(db: Db, fn: () => Promise<T>): Promise<T> {
  if (open.has(db)) return fn();
  const unit = new UnitOfWork();
  open.set(db, unit);
  try {
    const result = await fn();
    await unit.write(db);
    return result;
  } finally {
    open.delete(db);
  }
}

/** Note records created or changed: in the unit open on `db`, or written now when none is. */
export async function noteChanged(db: Db, entityType: string, records: readonly ChangedRecord[]): Promise<void> {
  const unit = open.get(db);
  if (unit) unit.changed(entityType, records);
  else await recordChanges(db, entityType, records);
}

/** Note records changed, known by id only (a cascade): in the unit open on `db`, or written now. */
export async function noteChangedIds(db: Db, entityType: string, table: string, ids: readonly number[]): Promise<void> {
  const unit = open.get(db);
  if (unit) unit.changedIds(entityType, table, ids);
  else await recordChangedIds(db, entityType, table, ids);
}

/** Note records deleted (their tombstones): in the unit open on `db`, or written now. */
export async function noteDeleted(db: Db, entityType: string, records: readonly ChangedRecord[]): Promise<void> {
  const unit = open.get(db);
  if (unit) unit.deleted(entityType, records);
  else await recordChanges(db, entityType, records, { deleted: true });
}
