/**
 * Bulk actions (issue 42 §3): one change applied to many records of one entity type, all or
 * nothing, in ONE transaction. The steps, in the order every write takes them (usecases/records.ts):
 * the records' rows locked (one statement, ascending ids: storage/locks.ts), the records loaded in
 * one read, the type's permission and then each record's checked, then (for a delete) the
 * references that keep a record (entities/reference-integrity.ts, one read per referring place for
 * all of them), and only when nothing is refused, each record saved through the entity service with
 * a revision message naming the action. Every record refused is named and nothing is written; a
 * rule broken while saving (a ValidationError of one record) names that record and rolls back all.
 *
 * The whole run is one unit of work (storage/unit-of-work.ts): each changed record gets ONE
 * change-feed row, written at the end, whatever the saves it took.
 *
 * The records as confirmed: the face may send each record's version as its confirmation showed
 * it (`versions`, UUID → version, the feed position an ETag names). A record whose version is
 * another now, changed by someone after the confirmation was shown, is refused and named (409,
 * as an If-Match a record's form sends is refused: usecases/if-match.ts), and nothing is done:
 * the action is never applied over a change its author has not seen. One read for all, after
 * the rows' lock (every save of a record, and every cascade that moves an asset, locks its row
 * before it writes its feed row: storage/locks.ts), so a version read cannot change before commit.
 *
 * A bulk action is bounded: at most BULK_LIMIT records, refused before anything is read.
 */
import type { Knex } from 'knex';
import type { ResourceType } from '../model/registry.ts';
import type { Principal } from '../access/principal.ts';
import { assertMayOnType, mayOnRecord, mayOnType } from '../access/policy.ts';
import type { Db, EntityRecord, ItemValue } from '../storage/records.ts';
import { lockToChange } from '../storage/locks.ts';
import { inUnitOfWork } from '../storage/unit-of-work.ts';
import { REVISION_LOG_MESSAGE } from '../storage/revisions.ts';
import { versionsOf } from '../storage/change-feed.ts';
import { write } from '../storage/transactions.ts';
import type { RecordLoader } from '../farm/loader.ts';
import type { EntityService } from '../entities/service.ts';
import { describeReferrers, referrersOf } from '../entities/reference-integrity.ts';
import { ApiError, ValidationError } from '../errors.ts';

/** The most records one bulk action changes (the pages say so; a larger selection is refused). */
export const BULK_LIMIT = 1000;

/** A record a bulk action may not touch, and why. */
export interface Refusal {
  uuid: string;
  type: string;
  label: string;
  reason: string;
  /** A record changed since the action was confirmed: its newest revision's author (when the principal may see users) and time. */
  changed?: { by: string | null; at: number | null };
}

/** Each record's version as the confirmation showed it (UUID → version); a record not named is not checked. */
export type Versions = ReadonlyMap<string, number>;

/** Nothing was done: these records (every one found) may not be changed so. */
export class BulkRefused extends ApiError {
  constructor(
    readonly refused: Refusal[],
    status = 403,
  ) {
    super(
      status,
      `Nothing was changed: ${refused.length} of the records may not be changed so (${refused.map((r) => `${r.type} "${r.label}": ${r.reason}`).join('; ')}).`,
    );
  }
}

/** What one record becomes: its new values (an update), or null to leave it as it is. */
export type BulkChange = (record: EntityRecord) => Map<string, ItemValue | ItemValue[]> | null;

export interface BulkOutcome {
  /** The records changed (or deleted, or the originals of those cloned), as they were loaded. */
  records: EntityRecord[];
  /** Clones: the new records' UUIDs, in the originals' order. */
  created: string[];
}

const SYSTEM_FIELDS = new Set([
  'id',
  'uuid',
  'revision_id',
  'created',
  'changed',
  'uid',
  'revision_user',
  'revision_created',
]);

export class BulkCommands {
  constructor(
    private readonly knex: Knex,
    private readonly loader: RecordLoader,
    private readonly entities: EntityService,
  ) {}

  /**
   * The records of `entityType` these UUIDs name, among `bundles`, locked and loaded in one
   * read each (an id lookup, the rows' lock, the load), in the order given. A UUID that names no
   * such record is a 404 naming it.
   */
  private async lockedRecords(
    trx: Db,
    entityType: string,
    bundles: readonly ResourceType[],
    uuids: readonly string[],
  ): Promise<EntityRecord[]> {
    if (uuids.length > BULK_LIMIT)
      throw new ApiError(413, `A bulk action changes at most ${BULK_LIMIT} records; ${uuids.length} were chosen.`);
    const table = bundles[0]!.entityType.table;
    const wanted = [...new Set(uuids.map((u) => u.toLowerCase()))];
    const rows = wanted.length
      ? ((await trx(table)
          .whereIn('uuid', wanted)
          .whereIn(
            'bundle',
            bundles.map((b) => b.bundle.bundle),
          )
          .select('id', 'uuid')) as Array<{ id: number; uuid: string }>)
      : [];
    const missing = wanted.filter((u) => !rows.some((r) => r.uuid === u));
    if (missing.length) throw new ApiError(404, `No ${entityType} with the id "${missing[0]}" is in this list.`);
    const ids = rows.map((r) => Number(r.id));
    await lockToChange(trx, table, ids);
    const records = await this.loader.load(trx, entityType, ids, null);
    const order = new Map(wanted.map((u, i) => [u, i]));
    return records.sort((a, b) => order.get(a.uuid)! - order.get(b.uuid)!);
  }

  /**
   * Each record whose version is no longer the one confirmed, named with who changed it last and
   * when (one read of the versions; the newest revision and its author read for a stale record only).
   */
  private async refusedAsStale(
    trx: Db,
    principal: Principal,
    records: EntityRecord[],
    versions: Versions | undefined,
  ): Promise<Refusal[]> {
    const checked = versions ? records.filter((r) => versions.has(r.uuid)) : [];
    if (!checked.length) return [];
    const et = checked[0]!.rt.entityType;
    const now = await versionsOf(
      trx,
      et.entityType,
      checked.map((r) => r.id),
    );
    const store = this.entities.store;
    const refused: Refusal[] = [];
    for (const record of checked.filter((r) => now.get(r.id) !== versions!.get(r.uuid))) {
      const [last] = et.revisionId ? await store.revisions.summaries(trx, et.entityType, record.id, 1) : [];
      const changed = Number(last?.created ?? record.values.get('changed') ?? NaN);
      const users = store.registry.model.entityTypes.user;
      let by: string | null = null;
      if (last?.userId != null && users && mayOnType(principal, users, 'view')) {
        const [user] = await this.loader.load(trx, 'user', [last.userId], null);
        by = user ? String(user.values.get('name') ?? '') || null : null;
      }
      refused.push({
        ...refusal(record, 'it was changed after the action was confirmed: look at it again, then confirm again'),
        changed: { by, at: Number.isFinite(changed) ? changed : null },
      });
    }
    return refused;
  }

  /** Each record the principal may not `op`, named. */
  private refusedByAccess(principal: Principal, records: EntityRecord[], op: 'update' | 'delete'): Refusal[] {
    return records
      .filter((r) => !mayOnRecord(principal, r.rt.entityType, op, r))
      .map((r) => refusal(r, `you may not ${op === 'update' ? 'change' : 'delete'} it`));
  }

  /**
   * Update every record with what the change makes of it, each saved through the entity service
   * with `message` as its revision's message. `prepare` makes the change once, in the
   * transaction, after the access checks (it reads the face's input: a reference resolved once
   * for all), given the first record. Returns the records changed, as they were.
   */
  async update(
    principal: Principal,
    bundles: readonly ResourceType[],
    uuids: readonly string[],
    {
      message,
      prepare,
      versions,
    }: {
      message: string;
      prepare: (trx: Db, first: EntityRecord) => Promise<BulkChange> | BulkChange;
      versions?: Versions;
    },
  ): Promise<BulkOutcome> {
    const et = bundles[0]!.entityType;
    assertMayOnType(principal, et, 'update', `${et.entityType} resources`);
    return write(this.knex, (trx) =>
      inUnitOfWork(trx, async () => {
        const records = await this.lockedRecords(trx, et.entityType, bundles, uuids);
        refuseAny(
          this.refusedByAccess(principal, records, 'update'),
          await this.refusedAsStale(trx, principal, records, versions),
        );
        if (!records.length) return { records, created: [] };
        const change = await prepare(trx, records[0]!);
        const now = Math.floor(Date.now() / 1000);
        const changed: EntityRecord[] = [];
        for (const record of records) {
          const values = change(record);
          if (!values) continue;
          changed.push(record);
          let saved = record;
          if (record.rt.fieldsByName.has(REVISION_LOG_MESSAGE)) {
            values.set(REVISION_LOG_MESSAGE, message);
            // The service blanks a message that repeats the record's own (a client echoing the whole
            // record back, as farmOS does): this one is the action's, sent again when it is repeated.
            saved = { ...record, values: new Map(record.values) };
            saved.values.delete(REVISION_LOG_MESSAGE);
          }
          await this.saving(record, () =>
            this.entities.update(trx, saved, { values, secrets: new Map() }, principal, undefined, now),
          );
        }
        return { records: changed, created: [] };
      }),
    );
  }

  /** Delete every record; one another record keeps (farmOS's reference integrity) is named, and none goes. */
  async delete(
    principal: Principal,
    bundles: readonly ResourceType[],
    uuids: readonly string[],
    { versions }: { versions?: Versions } = {},
  ): Promise<BulkOutcome> {
    const et = bundles[0]!.entityType;
    assertMayOnType(principal, et, 'delete', `${et.entityType} resources`);
    const store = this.entities.store;
    return write(this.knex, (trx) =>
      inUnitOfWork(trx, async () => {
        const records = await this.lockedRecords(trx, et.entityType, bundles, uuids);
        const refused = this.refusedByAccess(principal, records, 'delete');
        const stale = await this.refusedAsStale(trx, principal, records, versions);
        // References between records deleted together keep none of them.
        const kept = await referrersOf(
          trx,
          store,
          et.entityType,
          records.map((r) => r.id),
        );
        for (const record of records) {
          const referrers = kept.get(record.id);
          if (referrers?.length)
            refused.push(
              refusal(record, `other records refer to it: ${await describeReferrers(trx, store, referrers)}`),
            );
        }
        refuseAny(refused, stale);
        for (const record of records) await this.saving(record, () => this.entities.delete(trx, record, principal));
        return { records, created: [] };
      }),
    );
  }

  /**
   * A copy of every record, each a new record of its bundle with the values the principal could
   * have set (not its id, times or author), changed by `change` when given (a clone's name); the
   * records a copy owns (a log's quantities: `owned` names the fields) are copied with it.
   */
  async clone(
    principal: Principal,
    bundles: readonly ResourceType[],
    uuids: readonly string[],
    {
      message,
      change,
      owned,
      versions,
    }: { message: string; change?: BulkChange; owned: (rt: ResourceType) => string[]; versions?: Versions },
  ): Promise<BulkOutcome> {
    const et = bundles[0]!.entityType;
    assertMayOnType(principal, et, 'create', `${et.entityType} resources`);
    return write(this.knex, (trx) =>
      inUnitOfWork(trx, async () => {
        const records = await this.lockedRecords(trx, et.entityType, bundles, uuids);
        // A copy is of the record as confirmed, not of what someone made of it since.
        refuseAny([], await this.refusedAsStale(trx, principal, records, versions));
        const created: string[] = [];
        for (const record of records) {
          const values = copyable(record);
          for (const [k, v] of change?.(record) ?? []) values.set(k, v);
          for (const name of owned(record.rt)) {
            const refs = [values.get(name) ?? []].flat() as Array<{ targetId: number }>;
            const field = record.rt.fieldsByName.get(name)!;
            const copies: ItemValue[] = [];
            const targetType = field.target!.entityType;
            const parts = refs.length
              ? await this.loader.load(
                  trx,
                  targetType,
                  refs.map((r) => r.targetId),
                  null,
                )
              : [];
            for (const part of parts) {
              assertMayOnType(principal, part.rt.entityType, 'create', `${targetType} resources`);
              const { id } = await this.entities.create(
                trx,
                part.rt,
                { values: copyable(part), secrets: new Map() },
                principal,
              );
              copies.push({ targetId: id, meta: {} });
            }
            values.set(name, field.multiple ? copies : (copies[0] ?? null));
          }
          if (record.rt.fieldsByName.has(REVISION_LOG_MESSAGE)) values.set(REVISION_LOG_MESSAGE, message);
          const saved = await this.saving(record, () =>
            this.entities.create(trx, record.rt, { values, secrets: new Map() }, principal),
          );
          created.push(saved.uuid);
        }
        return { records, created };
      }),
    );
  }

  /**
   * Inside the transaction of an action that writes a record of its own for the records chosen (a
   * movement or group assignment log): the records as confirmed, locked, or a refusal naming those
   * changed since (a 409, nothing written). Moving assets changes them, so the same confirmation
   * sent twice is refused the second time.
   */
  async assertAsConfirmed(
    trx: Db,
    principal: Principal,
    bundles: readonly ResourceType[],
    uuids: readonly string[],
    versions: Versions | undefined,
  ): Promise<void> {
    const records = await this.lockedRecords(trx, bundles[0]!.entityType.entityType, bundles, uuids);
    refuseAny([], await this.refusedAsStale(trx, principal, records, versions));
  }

  /** One record's save: a rule it breaks names it (and the transaction rolls back). */
  private async saving<T>(record: EntityRecord, save: () => Promise<T>): Promise<T> {
    try {
      return await save();
    } catch (error) {
      if (error instanceof ValidationError)
        throw new BulkRefused([refusal(record, error.violations.map((v) => v.detail).join(' '))], 422);
      if (error instanceof ApiError && error.status < 500 && !(error instanceof BulkRefused))
        throw new BulkRefused([refusal(record, error.detail)], error.status);
      throw error;
    }
  }
}

/**
 * Nothing is done when any record is refused: every one is named, those the principal may not
 * change so (or that others keep) with a 403, as the API answers them; records changed since
 * the confirmation alone, with a 409.
 */
function refuseAny(refused: Refusal[], stale: Refusal[]): void {
  if (refused.length) throw new BulkRefused([...refused, ...stale], 403);
  if (stale.length) throw new BulkRefused(stale, 409);
}

function refusal(record: EntityRecord, reason: string): Refusal {
  const label = record.values.get(record.rt.entityType.labelField);
  return {
    uuid: record.uuid,
    type: record.rt.type,
    label: typeof label === 'string' && label ? label : record.uuid,
    reason,
  };
}

/** A record's values a copy takes: what a client could have sent for it. */
function copyable(record: EntityRecord): Map<string, ItemValue | ItemValue[]> {
  const values = new Map<string, ItemValue | ItemValue[]>();
  for (const field of record.rt.bundle.fields) {
    if (field.computed || field.readOnly || field.internal || field.auto || field.type === 'password') continue;
    if (field.storage.kind === 'none' || SYSTEM_FIELDS.has(field.name)) continue;
    const value = record.values.get(field.name);
    if (value === undefined) continue;
    // References as their targets' ids: the save reads the rest again.
    const plain = (v: ItemValue): ItemValue =>
      v && typeof v === 'object' && 'targetId' in v
        ? { targetId: (v as { targetId: number }).targetId, meta: { ...((v as { meta?: object }).meta ?? {}) } }
        : v;
    values.set(field.name, Array.isArray(value) ? value.map(plain) : plain(value));
  }
  return values;
}
