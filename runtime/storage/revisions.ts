/**
 * The revisions of records: one row in `entity_revision` per revision, holding who saved it, when,
 * its log message and a snapshot of the record's stored values as that save left them.
 *
 * Revision numbers count per entity type (Drupal keeps one revision table and serial per type).
 * Each database hands them out its own way (storage/revision-numbers.ts): a sequence per type on
 * PostgreSQL, so that saves of one type do not take turns for a number; a counter row per type
 * on SQLite, which writes one transaction at a time anyway. Not MAX()+1: two PostgreSQL
 * transactions saving logs at once would both read the same MAX and one would fail on the unique
 * index.
 */
import type { ResourceType } from '../model/registry.ts';
import type { EntityTypeDescriptor, FieldDescriptor } from '../model/descriptor.ts';
import type { Db, EntityRecord, ItemValue, Reference } from './records.ts';
import { SqlMemo, execute, quoteName, selectRows } from './sql.ts';
import { dialectOf } from './dialect.ts';

/** What a list of revisions shows: who, when and why, without the record's values. */
export interface RevisionSummary {
  revisionId: number;
  userId: number | null;
  created: number;
  message: string | null;
}

export interface RevisionRow extends RevisionSummary {
  /** Field name → internal value, as EntityRecord.values held them at that save. */
  values: Map<string, ItemValue | ItemValue[]>;
}

export interface RevisionInput {
  userId: number | null;
  created: number;
  message: string;
  values: Map<string, ItemValue | ItemValue[]>;
}

/**
 * Whether a save of this bundle adds a revision (Drupal's bundle setting `new_revision`). farmOS's
 * asset, log and quantity types say yes; its vocabularies leave Drupal's default, no, so a term's
 * save rewrites its one revision.
 */
export function savesNewRevision(rt: ResourceType): boolean {
  return Boolean(rt.entityType.revisionId) && rt.bundle.newRevision !== false;
}

/** Revision metadata that only a save adding a revision sets (Drupal's revision_metadata_keys). */
export const REVISION_METADATA_FIELDS: ReadonlySet<string> = new Set(['revision_created', 'revision_user']);

/** The field holding a revision's log message. */
export const REVISION_LOG_MESSAGE = 'revision_log_message';

/** The values a revision's snapshot keeps: the stored fields' (not computed ones, nor those stored nowhere). */
export function storedValues(
  rt: ResourceType,
  values: ReadonlyMap<string, ItemValue | ItemValue[]>,
): Map<string, ItemValue | ItemValue[]> {
  return new Map(
    [...values].filter(([name]) => {
      const field = rt.fieldsByName.get(name);
      return field && !field.computed && field.storage.kind !== 'none';
    }),
  );
}

/** What writeRevision needs of RecordStore: its revisions, and the record's row to point at a new one. */
interface RevisionedRecords {
  readonly revisions: RevisionStore;
  update(
    db: Db,
    rt: ResourceType,
    id: number,
    changes: Map<string, ItemValue | ItemValue[]>,
    extra?: Record<string, unknown>,
  ): Promise<void>;
}

/**
 * Record a save of record `id` as a revision: who, when, its message and the stored `values` (the
 * whole record as the save leaves it). The one place revisions are written: the entity service's
 * saves and the importer's (with the source's author, time and message). A bundle that keeps no
 * new revisions (farmOS's vocabularies) rewrites the record's current one instead. `reserved`: the
 * number a new record was inserted with (nextNumber); otherwise the record's row is moved on to
 * the new revision. Returns the revision's number; null for a type without revisions.
 */
export async function writeRevision(
  db: Db,
  records: RevisionedRecords,
  rt: ResourceType,
  id: number,
  current: { revisionId: number | null } | null,
  values: ReadonlyMap<string, ItemValue | ItemValue[]>,
  meta: Omit<RevisionInput, 'values'>,
  reserved?: number,
): Promise<number | null> {
  if (!rt.entityType.revisionId) return null;
  const revisions = records.revisions;
  const stored = storedValues(rt, values);
  await revisions.pinTargetRevisions(db, rt, stored);
  const entityType = rt.entityType.entityType;
  if (
    current?.revisionId &&
    !savesNewRevision(rt) &&
    (await revisions.replace(db, entityType, id, current.revisionId, { message: meta.message, values: stored }))
  ) {
    return current.revisionId;
  }
  const revisionId = await revisions.add(db, entityType, id, { ...meta, values: stored }, reserved);
  // A new record was inserted with its revision's number; a save of one moves it on.
  if (reserved === undefined) await records.update(db, rt, id, new Map(), { revision_id: revisionId });
  return revisionId;
}

const TABLE = 'entity_revision';

/**
 * A reference as a snapshot keeps it: without the target's UUID and bundle (looked up again when
 * read), and with a target revision only when it names one. A reference loaded from the database
 * carries `revisionId: null` where the target keeps no revisions, one sent in a request or set by
 * a save rule carries none; both are stored alike, so a snapshot does not depend on where a
 * value came from (asRecord reads a missing revision as none).
 */
function storedItem(item: ItemValue): ItemValue {
  if (item === null || typeof item !== 'object' || !('targetId' in item)) return item;
  const { uuid: _uuid, bundle: _bundle, revisionId, ...kept } = item as Reference;
  return (revisionId === null || revisionId === undefined ? kept : { ...kept, revisionId }) as Reference;
}

/**
 * The stored form of a snapshot: references keep their target id, item meta and target revision.
 * (Written without a JSON.stringify replacer, which is called for every key of every value.)
 */
function snapshotOf(values: Map<string, ItemValue | ItemValue[]>): string {
  const out: Record<string, unknown> = {};
  for (const [name, value] of values) out[name] = Array.isArray(value) ? value.map(storedItem) : storedItem(value);
  return JSON.stringify(out);
}

function rowOf(row: any): RevisionRow {
  const data = JSON.parse(row.data) as Record<string, ItemValue | ItemValue[]>;
  return {
    revisionId: Number(row.revision_id),
    userId: row.user_id === null || row.user_id === undefined ? null : Number(row.user_id),
    created: Number(row.created),
    message: row.message ?? null,
    values: new Map(Object.entries(data)),
  };
}

/** A revision's row, as `add` writes it. */
/** The newest revisions' summaries of one record: the page of revisions needs no snapshot. */
const SUMMARIES = `SELECT revision_id, user_id, created, message FROM ${TABLE} WHERE entity_type = ? AND entity_id = ? ORDER BY revision_id DESC LIMIT ?`;
const INSERT = `INSERT INTO ${TABLE} (entity_type, entity_id, revision_id, user_id, created, message, data) VALUES (?, ?, ?, ?, ?, ?, ?)`;
const REPLACE = `UPDATE ${TABLE} SET message = ?, data = ? WHERE entity_type = ? AND entity_id = ? AND revision_id = ?`;

export class RevisionStore {
  /** The statements reading targets' current revisions, by table. */
  private readonly sql = new SqlMemo();

  constructor(private readonly entityType: (name: string) => EntityTypeDescriptor) {}

  /**
   * Name, on every entity_reference_revisions item that does not name one yet, the target's
   * current revision: the one this save references, shown as `target_revision_id` in revisions.
   */
  async pinTargetRevisions(db: Db, rt: ResourceType, values: Map<string, ItemValue | ItemValue[]>): Promise<void> {
    for (const field of rt.relationships) {
      if (field.type !== 'entity_reference_revisions' || !values.has(field.name)) continue;
      const v = values.get(field.name);
      const refs = ((Array.isArray(v) ? v : v ? [v] : []) as Reference[]).filter(
        (r) => r && r.revisionId === undefined,
      );
      if (!refs.length) continue;
      const table = this.entityType(field.target!.entityType).table;
      const ids = [...new Set(refs.map((r) => r.targetId))];
      const dialect = dialectOf(db);
      const single = ids.length === 1;
      const sql = this.sql.get(
        `${table}:${dialect.name}:${single}`,
        () => `SELECT id, revision_id FROM ${quoteName(table)} WHERE ${dialect.inIdList('id', { single })}`,
      );
      const rows = await selectRows<{ id: number; revision_id: number | null }>(db, sql, [
        dialect.idListParameter(ids),
      ]);
      const current = new Map(
        rows.map((r: { id: number; revision_id: number | null }) => [Number(r.id), r.revision_id ?? null]),
      );
      for (const ref of refs) ref.revisionId = current.get(ref.targetId) ?? null;
    }
  }

  /** The next revision number of an entity type (storage/revision-numbers.ts: on SQLite the counter row stays locked until commit). */
  async nextNumber(db: Db, entityType: string): Promise<number> {
    return (await this.reserve(db, entityType, 1))[0]!;
  }

  /**
   * `count` new revision numbers of an entity type, ascending, in one statement: numbers for a
   * page of new records, or for a record's older revisions and its current one. Not always
   * consecutive (on PostgreSQL other saves take numbers meanwhile): use the list.
   */
  reserve(db: Db, entityType: string, count: number): Promise<number[]> {
    return dialectOf(db).revisionNumbers.take(db, entityType, count);
  }

  /** Record the first revision of many records (an import's page), numbered beforehand with `reserve`, in one statement per 500. */
  async addMany(
    db: Db,
    entityType: string,
    rows: ReadonlyArray<{ entityId: number; revisionId: number; input: RevisionInput }>,
  ): Promise<void> {
    for (let i = 0; i < rows.length; i += 500) {
      const part = rows.slice(i, i + 500);
      const sql = this.sql.get(
        `insert:${part.length}`,
        () => `${INSERT}${', (?, ?, ?, ?, ?, ?, ?)'.repeat(part.length - 1)}`,
      );
      await execute(
        db,
        sql,
        part.flatMap((r) => [
          entityType,
          r.entityId,
          r.revisionId,
          r.input.userId,
          r.input.created,
          r.input.message || null,
          snapshotOf(r.input.values),
        ]),
      );
    }
  }

  /**
   * Record a new revision of a record; returns its number: `reserved`, when the caller took it
   * with nextNumber beforehand (a new record is inserted with its revision's number already).
   */
  async add(db: Db, entityType: string, entityId: number, input: RevisionInput, reserved?: number): Promise<number> {
    const revisionId = reserved ?? (await this.nextNumber(db, entityType));
    await execute(db, INSERT, [
      entityType,
      entityId,
      revisionId,
      input.userId,
      input.created,
      input.message || null,
      snapshotOf(input.values),
    ]);
    return revisionId;
  }

  /**
   * Rewrite a record's current revision in place (a save that makes no new revision, as terms of
   * farmOS's vocabularies). Its author and time stay those of the save that created it. False when
   * there is no such row (a record saved before it kept revisions), so the caller adds one.
   */
  async replace(
    db: Db,
    entityType: string,
    entityId: number,
    revisionId: number,
    input: Pick<RevisionInput, 'message' | 'values'>,
  ): Promise<boolean> {
    return (
      (await execute(db, REPLACE, [
        input.message || null,
        snapshotOf(input.values),
        entityType,
        entityId,
        revisionId,
      ])) > 0
    );
  }

  /** One revision of one record, or null when the record has no revision of that number. */
  async find(db: Db, entityType: string, entityId: number, revisionId: number): Promise<RevisionRow | null> {
    if (!Number.isSafeInteger(revisionId) || revisionId < 1) return null;
    const row = await db(TABLE)
      .where({ entity_type: entityType, revision_id: revisionId, entity_id: entityId })
      .first();
    return row ? rowOf(row) : null;
  }

  /** A page of a record's revisions, newest first. */
  async list(
    db: Db,
    entityType: string,
    entityId: number,
    page: { offset: number; limit: number },
  ): Promise<RevisionRow[]> {
    const rows = await db(TABLE)
      .where({ entity_type: entityType, entity_id: entityId })
      .orderBy('revision_id', 'desc')
      .offset(page.offset)
      .limit(page.limit);
    return rows.map(rowOf);
  }

  /**
   * The newest `limit` revisions of a record, newest first, without their snapshots (a fixed
   * statement: a record's page asks it on every view; parsing twenty snapshots it does not show
   * was a tenth of that page's time).
   */
  async summaries(db: Db, entityType: string, entityId: number, limit: number): Promise<RevisionSummary[]> {
    const rows = await selectRows<{
      revision_id: number;
      user_id: number | null;
      created: number;
      message: string | null;
    }>(db, SUMMARIES, [entityType, entityId, limit]);
    return rows.map((row) => ({
      revisionId: Number(row.revision_id),
      userId: row.user_id === null || row.user_id === undefined ? null : Number(row.user_id),
      created: Number(row.created),
      message: row.message ?? null,
    }));
  }

  /** Forget the revisions of deleted records (ids may be reused, and a deleted record's past is not served). */
  async deleteOf(db: Db, entityType: string, entityIds: number[]): Promise<void> {
    if (entityIds.length) await db(TABLE).where('entity_type', entityType).whereIn('entity_id', entityIds).delete();
  }

  /**
   * The record as a revision left it: the revision's stored values over the current record's
   * identity. Fields the snapshot lacks (added to the bundle since) are empty; computed fields are
   * left for the loader to compute as of now. References are resolved again (a target deleted
   * since renders as missing), keeping the target revision the snapshot named.
   */
  asRecord(
    current: EntityRecord,
    revision: RevisionRow,
    fields: readonly FieldDescriptor[] = current.rt.bundle.fields,
  ): EntityRecord {
    const values = new Map<string, ItemValue | ItemValue[]>();
    for (const field of fields) {
      if (field.computed) continue;
      const stored = revision.values.get(field.name);
      if (stored === undefined) {
        values.set(field.name, field.multiple ? [] : null);
        continue;
      }
      const copy = structuredClone(stored);
      if (field.kind === 'relationship') {
        for (const item of Array.isArray(copy) ? copy : [copy]) {
          if (item && typeof item === 'object') {
            const ref = item as Reference;
            ref.meta ??= {};
            if (field.type !== 'entity_reference_revisions') delete ref.revisionId;
          }
        }
      }
      values.set(field.name, copy);
    }
    return {
      id: current.id,
      uuid: current.uuid,
      bundle: current.bundle,
      revisionId: revision.revisionId,
      rt: current.rt,
      values,
      revisionView: true,
    };
  }
}
