/**
 * Creating, updating and deleting records: defaults and automatic values, required fields,
 * farmOS's save-time behaviour (farm/hooks.ts and the farm rules), revisions, and storage; what
 * accounts add is in account-saves.ts, file usage in file-usage.ts. Handlers call this inside
 * the request's one transaction; every failure throws before anything is written or rolls back.
 */
import { randomUUID } from 'node:crypto';
import type { FieldDescriptor } from '../model/descriptor.ts';
import type { ResourceType } from '../model/registry.ts';
import type { Principal } from '../access/principal.ts';
import {
  RecordStore,
  lockRows,
  type Db,
  type EntityRecord,
  type ItemValue,
  type Reference,
} from '../storage/records.ts';
import { conflict, ValidationError, type Violation } from '../errors.ts';
import type { EntityInput, Secret } from './input.ts';
import { beforeCreate, beforeUpdate, dependentsOnDelete, generatedName } from '../farm/hooks.ts';
import { copyMaterialType } from '../farm/material.ts';
import { childChanges, childrenOf, secondBirths } from '../farm/births.ts';
import { parentViolations } from '../farm/parents.ts';
import { Placements } from '../farm/placements.ts';
import { InventoryChanges, plannedAssets, type InventoryPlan } from '../farm/inventory.ts';
import { FarmValidation } from '../farm/validation.ts';
import type { PasswordGuard } from '../accounts/password-guard.ts';
import type { LogGeometry } from '../farm/log-geometry.ts';
import {
  REVISION_LOG_MESSAGE,
  REVISION_METADATA_FIELDS,
  savesNewRevision,
  storedValues,
  writeRevision,
  type RevisionInput,
} from '../storage/revisions.ts';
import { defaultValue, fillDefaults } from '../model/defaults.ts';
import { AccountSaves, NO_SECRETS, type HashedSecrets } from './account-saves.ts';
import { markFilesPermanent } from './file-usage.ts';
import { inUnitOfWork, noteChanged } from '../storage/unit-of-work.ts';
import { deleteUnderLocks, type Deletion } from './deletion-locks.ts';
import { refuseIfReferenced } from './reference-integrity.ts';

function isEmpty(value: ItemValue | ItemValue[] | undefined): boolean {
  return value === undefined || value === null || value === '' || (Array.isArray(value) && value.length === 0);
}

export type { HashedSecrets } from './account-saves.ts';

export class EntityService {
  /** farmOS's rules against circular locations and group membership (farm/validation.ts). */
  private readonly farmRules: FarmValidation;
  private readonly placements: Placements;
  /** The assets whose computed inventory a save changes (farm/inventory.ts). */
  private readonly inventories: InventoryChanges;
  /** Passwords, account rules, unique names, roles and credentials (entities/account-saves.ts). */
  private readonly accounts: AccountSaves;

  /** `shared`: the farm's placements and inventories (context.ts buildFarmServices), built once per farm. */
  constructor(
    readonly store: RecordStore,
    private readonly logGeometry: LogGeometry,
    passwords: PasswordGuard,
    shared: { placements?: Placements; inventories?: InventoryChanges } = {},
  ) {
    this.placements = shared.placements ?? new Placements(store.registry);
    this.farmRules = new FarmValidation(store.registry, { store, placements: this.placements });
    this.inventories = shared.inventories ?? new InventoryChanges(store.registry);
    this.accounts = new AccountSaves(passwords);
  }

  /** Check and hash a write's passwords before its transaction opens (AccountSaves.hashSecrets). */
  hashSecrets(
    db: Db,
    rt: ResourceType,
    secrets: ReadonlyMap<string, Secret>,
    principal: Principal,
    targetId: number | null,
    address?: string,
  ): Promise<HashedSecrets> {
    return this.accounts.hashSecrets(db, rt, secrets, principal, targetId, address);
  }

  private autoValue(field: FieldDescriptor, principal: Principal, now: number): ItemValue | ItemValue[] | undefined {
    switch (field.auto) {
      case 'created':
      case 'changed':
        return now;
      case 'author':
      case 'editor':
        return principal.userId !== null ? ({ targetId: principal.userId, meta: {} } as Reference) : null;
      default:
        return undefined;
    }
  }

  private requireFields(rt: ResourceType, values: Map<string, ItemValue | ItemValue[]>, only?: Set<string>): void {
    const violations: Violation[] = [];
    for (const field of rt.bundle.fields) {
      if ((!field.required && field.nullable !== false) || field.computed || field.auto) continue;
      if (only && !only.has(field.name)) continue;
      if (isEmpty(values.get(field.name)))
        violations.push({
          field,
          detail: `${field.name}: This value should not be null (${field.label} is required).`,
        });
    }
    if (violations.length) throw new ValidationError(violations);
  }

  /** Record a save as a revision (storage/revisions.ts writeRevision): by the principal, now, with the message it sent. */
  private writeRevision(
    db: Db,
    rt: ResourceType,
    id: number,
    principal: Principal,
    now: number,
    values: Map<string, ItemValue | ItemValue[]>,
    current: EntityRecord | null,
    reserved?: number,
  ): Promise<number | null> {
    const message = values.get(REVISION_LOG_MESSAGE);
    return writeRevision(
      db,
      this.store,
      rt,
      id,
      current,
      values,
      { userId: principal.userId, created: now, message: typeof message === 'string' ? message : '' },
      reserved,
    );
  }

  /**
   * A new revision's log message is the one its own save supplied: farmOS blanks one that is
   * missing or merely repeats the previous revision's (clients echo whole records back).
   */
  private blankRepeatedMessage(
    rt: ResourceType,
    changes: Map<string, ItemValue | ItemValue[]>,
    record: EntityRecord,
  ): void {
    if (!savesNewRevision(rt) || !rt.fieldsByName.has(REVISION_LOG_MESSAGE)) return;
    const sent = changes.get(REVISION_LOG_MESSAGE);
    if (typeof sent !== 'string' || sent === record.values.get(REVISION_LOG_MESSAGE))
      changes.set(REVISION_LOG_MESSAGE, '');
  }

  /**
   * Create a record. Every record the save touches (the record, the assets it moves, its files,
   * a birth log's children) gets its one change-feed row when it returns (storage/unit-of-work.ts).
   */
  create(
    db: Db,
    rt: ResourceType,
    input: EntityInput,
    principal: Principal,
    hashed: HashedSecrets = NO_SECRETS,
    now = Math.floor(Date.now() / 1000),
  ): Promise<{ id: number; uuid: string }> {
    return inUnitOfWork(db, () => this.createRecord(db, rt, input, principal, hashed, now));
  }

  private async createRecord(
    db: Db,
    rt: ResourceType,
    input: EntityInput,
    principal: Principal,
    hashed: HashedSecrets,
    now: number,
  ): Promise<{ id: number; uuid: string }> {
    const uuid = input.id ?? randomUUID();
    if (input.id && (await this.store.findByUuid(db, rt.entityType.entityType, uuid))) {
      throw conflict(`Conflict: a resource with the id ${uuid} already exists.`, { record: 'id' });
    }
    const values = new Map(input.values);
    for (const field of rt.bundle.fields) {
      if (field.computed || field.storage.kind === 'none') continue;
      // An automatic field a client may write (created, uid: farmOS lets them be set) keeps a value sent.
      if (field.auto && !field.readOnly && !isEmpty(input.values.get(field.name))) continue;
      const auto = this.autoValue(field, principal, now);
      if (auto !== undefined) {
        values.set(field.name, field.multiple ? (auto === null ? [] : [auto as ItemValue]) : auto);
        continue;
      }
      // The YAML's default (model/defaults.ts) for a field not sent. A generated key replaces an
      // empty one too: farmOS.js sends "" for every string it was not given. A null for a field
      // with a default gets the default, except for a required (or not nullable) field: farmOS
      // refuses that with a 422 (requireFields), it does not reset the value.
      const sent = values.get(field.name);
      const resets =
        sent === null && field.default !== undefined && !field.multiple && !field.required && field.nullable !== false;
      if (field.defaultCallback ? isEmpty(sent) : !values.has(field.name) || resets)
        values.set(field.name, defaultValue(field, now));
    }
    this.accounts.applySecrets(input, hashed, values);
    await this.accounts.checkChange(db, rt, null, input.values, principal);
    beforeCreate(rt, values, { db, principal, now });
    await copyMaterialType(db, this.store, rt, values, null);
    await this.logGeometry.beforeSave(db, rt, values, null);
    this.requireFields(rt, values);
    await this.accounts.checkUnique(db, rt, values, null);
    await this.checkParents(db, rt, null, values);
    await this.farmRules.check(db, rt, values, null);
    const children = childrenOf(rt, values);
    // The files it names stop being temporary first: on PostgreSQL that locks their rows (step 2 of
    // the global lock order, storage/locks.ts), before the record's feed row at the save's end.
    await markFilesPermanent(db, rt, values, this.store.entityType('file').table);
    // The first revision's number is taken now, so that the record is inserted with it.
    const revisionId = rt.entityType.revisionId
      ? await this.store.revisions.nextNumber(db, rt.entityType.entityType)
      : undefined;
    const id = await this.store.insert(
      db,
      rt,
      uuid,
      values,
      revisionId === undefined ? {} : { revision_id: revisionId },
    );
    await this.accounts.afterSave(db, rt, id, values, null, input, principal);
    const label = rt.entityType.labelField;
    if (rt.entityType.namePattern && isEmpty(values.get(label))) {
      const name = generatedName(rt, id)!;
      values.set(label, name);
      await this.store.update(db, rt, id, new Map([[label, name]]));
    }
    await this.writeRevision(db, rt, id, principal, now, values, null, revisionId);
    const inventory = await this.inventories.plan(db, rt.entityType.entityType, id, null, values);
    if (rt.entityType.entityType === 'log')
      await this.placements.logChanged(db, id, null, values, undefined, plannedAssets(inventory));
    await this.applyBirths(db, rt, { logId: id, created: true }, values, children, principal, now);
    await this.inventories.apply(db, inventory);
    return { id, uuid };
  }

  /**
   * Store a record as another farm has it (the importer: farmos-import/records.ts): verbatim, with
   * none of farmOS's save-time behaviour (no automatic values, generated names, births or
   * placements: the importer rebuilds those at its end), but with the bookkeeping of every save: a
   * new record's YAML defaults (model/defaults.ts), its revision by the given author, time and
   * message (storage/revisions.ts writeRevision; `older` ones, from the source's history, numbered
   * and written before it), and its change-feed row once (storage/unit-of-work.ts). `current`:
   * the record here it replaces, or null for a new one. Returns its id.
   */
  saveVerbatim(
    db: Db,
    rt: ResourceType,
    uuid: string,
    current: EntityRecord | null,
    values: Map<string, ItemValue | ItemValue[]>,
    revision: Omit<RevisionInput, 'values'>,
    older: readonly RevisionInput[] = [],
    now = Math.floor(Date.now() / 1000),
  ): Promise<number> {
    return inUnitOfWork(db, async () => {
      const store = this.store;
      const entityType = rt.entityType.entityType;
      let id: number;
      let reserved: number | undefined;
      if (current) {
        id = current.id;
        // Named with its UUID, which the feed would otherwise read again (as update does).
        await noteChanged(db, entityType, [current]);
        await store.update(db, rt, id, values);
      } else {
        fillDefaults(rt.bundle.fields, values, now);
        // Older revisions are numbered before the current one (ascending numbers, the last the current's).
        const numbers = rt.entityType.revisionId
          ? await store.revisions.reserve(db, entityType, older.length + 1)
          : older.map(() => undefined);
        reserved = rt.entityType.revisionId ? numbers.pop() : undefined;
        id = await store.insert(db, rt, uuid, values, reserved === undefined ? {} : { revision_id: reserved });
        for (const [i, past] of older.entries()) await store.revisions.add(db, entityType, id, past, numbers[i]);
      }
      const merged = new Map(current?.values ?? []);
      for (const [k, v] of values) merged.set(k, v);
      await writeRevision(db, store, rt, id, current, merged, revision, reserved);
      return id;
    });
  }

  /**
   * Many new records of one bundle stored verbatim at once (an import's page), as saveVerbatim
   * stores a new one without history: one INSERT per table (RecordStore.insertMany), their first
   * revisions numbered together and written in one statement per 500, their feed rows together.
   * Returns the ids in row order.
   */
  createManyVerbatim(
    db: Db,
    rt: ResourceType,
    rows: ReadonlyArray<{
      uuid: string;
      values: Map<string, ItemValue | ItemValue[]>;
      revision: Omit<RevisionInput, 'values'>;
    }>,
    now = Math.floor(Date.now() / 1000),
  ): Promise<number[]> {
    return inUnitOfWork(db, async () => {
      const store = this.store;
      for (const row of rows) fillDefaults(rt.bundle.fields, row.values, now);
      const entityType = rt.entityType.entityType;
      // Not consecutive on PostgreSQL (storage/revision-numbers.ts): each row takes its own.
      const numbers = rt.entityType.revisionId ? await store.revisions.reserve(db, entityType, rows.length) : undefined;
      const ids = await store.insertMany(
        db,
        rt,
        rows.map((r, i) => ({
          uuid: r.uuid,
          values: r.values,
          extra: numbers === undefined ? {} : { revision_id: numbers[i] },
        })),
      );
      if (numbers === undefined) return ids;
      const revisions = [];
      for (const [i, r] of rows.entries()) {
        const stored = storedValues(rt, r.values);
        // No statement: the references a revision pins were read with their target's revision (InputReader).
        await store.revisions.pinTargetRevisions(db, rt, stored);
        revisions.push({ entityId: ids[i]!, revisionId: numbers[i]!, input: { ...r.revision, values: stored } });
      }
      await store.revisions.addMany(db, entityType, revisions);
      return ids;
    });
  }

  /** A parent listed twice, or a parent chain that loops back: 422 (farm/parents.ts). */
  private async checkParents(
    db: Db,
    rt: ResourceType,
    id: number | null,
    values: ReadonlyMap<string, ItemValue | ItemValue[]>,
  ): Promise<void> {
    const violations = await parentViolations(db, rt, id, values);
    if (violations.length) throw new ValidationError(violations);
  }

  /**
   * Give a birth log's children their birthdate and mother, saved as updates of theirs; a new log
   * is refused (422) when a child already has another birth log, an existing one is not checked,
   * as in farmOS (farm/births.ts).
   *
   * The children are locked first (ascending ids, storage/records.ts lockRows), then checked and
   * read: a PATCH of a child, or another birth log naming it, saved at the same time on
   * PostgreSQL, would otherwise replace its parent rows beside this save (a 409 from the two
   * inserts colliding, a deadlock, or the mother set over a parent this save did not see), and two
   * new birth logs of one child would both pass the check. Taken here, after the log's own row
   * and with the assets placements locks (a superset, when it rebuilds any), as
   * every log save takes them; every feed row, the children's too, comes after, when the save's
   * unit of work ends (storage/unit-of-work.ts).
   */
  private async applyBirths(
    db: Db,
    rt: ResourceType,
    { logId, created }: { logId: number; created: boolean },
    log: ReadonlyMap<string, ItemValue | ItemValue[]>,
    children: number[],
    principal: Principal,
    now: number,
  ): Promise<void> {
    if (!children.length) return;
    await lockRows(db, this.store.entityType('asset').table, children);
    const violations = created ? await secondBirths(db, this.store.registry, rt, logId, children) : [];
    if (violations.length) throw new ValidationError(violations);
    const records = await this.store.load(db, 'asset', children);
    const mother = ((Array.isArray(log.get('mother')) ? (log.get('mother') as ItemValue[])[0] : log.get('mother')) ??
      null) as Reference | null;
    const [motherRecord] = mother?.targetId ? await this.store.load(db, 'asset', [mother.targetId]) : [];
    const motherName = motherRecord
      ? String(motherRecord.values.get(motherRecord.rt.entityType.labelField) ?? '')
      : null;
    for (const { child, changes } of childChanges(log, records, motherName))
      await this.update(db, child, { values: changes, secrets: new Map() }, principal, NO_SECRETS, now);
  }

  /** Update a record; its feed rows as for create. */
  update(
    db: Db,
    record: EntityRecord,
    input: EntityInput,
    principal: Principal,
    hashed: HashedSecrets = NO_SECRETS,
    now = Math.floor(Date.now() / 1000),
  ): Promise<void> {
    return inUnitOfWork(db, () => this.updateRecord(db, record, input, principal, hashed, now));
  }

  private async updateRecord(
    db: Db,
    record: EntityRecord,
    input: EntityInput,
    principal: Principal,
    hashed: HashedSecrets,
    now: number,
  ): Promise<void> {
    const rt = record.rt;
    const changes = new Map(input.values);
    this.blankRepeatedMessage(rt, changes, record);
    for (const field of rt.bundle.fields) {
      // A save that rewrites the current revision keeps that revision's author and time.
      if (REVISION_METADATA_FIELDS.has(field.name) && !savesNewRevision(rt)) continue;
      if (field.auto === 'changed' || field.auto === 'editor') {
        // A time of change the client may send (`changed`) and did, other than the stored one: kept,
        // as farmOS keeps it (ChangedItem::preSave): an offline client's edit keeps its own time.
        if (!field.readOnly && isClientTime(input.values.get(field.name), record.values.get(field.name))) continue;
        const auto = this.autoValue(field, principal, now);
        if (auto !== undefined) changes.set(field.name, auto);
      }
    }
    await this.accounts.checkChange(db, rt, record, changes, principal);
    this.accounts.applySecrets(input, hashed, changes);
    beforeUpdate(rt, changes, record, { db, principal, now });
    await copyMaterialType(db, this.store, rt, changes, record);
    await this.logGeometry.beforeSave(db, rt, changes, record);
    this.requireFields(rt, changes, new Set(input.values.keys()));
    await this.accounts.checkUnique(db, rt, changes, record);
    const merged = new Map(record.values);
    for (const [k, v] of changes) merged.set(k, v);
    await this.checkParents(db, rt, record.id, changes);
    await this.farmRules.check(db, rt, changes, record);
    const children = childrenOf(rt, merged);
    const label = rt.entityType.labelField;
    if (rt.entityType.namePattern && changes.has(label) && isEmpty(changes.get(label)))
      changes.set(label, generatedName(rt, record.id)!);
    // A save with no changes is a new version too; the record is named with its UUID, which the
    // feed would otherwise read again.
    await noteChanged(db, rt.entityType.entityType, [record]);
    await this.store.update(db, rt, record.id, changes);
    await this.accounts.afterSave(db, rt, record.id, changes, record, input, principal);
    await markFilesPermanent(db, rt, changes, this.store.entityType('file').table);
    for (const [k, v] of changes) merged.set(k, v);
    await this.writeRevision(db, rt, record.id, principal, now, merged, record);
    const inventory = await this.inventories.plan(db, rt.entityType.entityType, record.id, record.values, merged);
    if (rt.entityType.entityType === 'log')
      await this.placements.logChanged(db, record.id, record.values, merged, changes.keys(), plannedAssets(inventory));
    if (rt.entityType.entityType === 'asset') await this.placements.assetChanged(db, record.id, changes.keys());
    await this.applyBirths(db, rt, { logId: record.id, created: false }, merged, children, principal, now);
    await this.inventories.apply(db, inventory);
  }

  /**
   * Delete a record and the quantities that go with a log; a record other records reference is
   * refused (403, as in farmOS: entities/reference-integrity.ts). The references that do not keep
   * it (a log's file or quantity, a revision's user) go, and an asset's members and the assets
   * placed in it get their placements rebuilt. On PostgreSQL, everything it writes besides the
   * record is locked first (entities/deletion-locks.ts, which says in what order), then found:
   * the references' check, the quantities' and the members see every save that ran beside it.
   */
  delete(db: Db, record: EntityRecord, principal: Principal): Promise<void> {
    return inUnitOfWork(db, () => this.deleteRecord(db, record, principal));
  }

  private async deleteRecord(db: Db, record: EntityRecord, principal: Principal): Promise<void> {
    await this.accounts.checkDelete(db, record, principal);
    const entityType = record.rt.entityType.entityType;
    const isAsset = entityType === 'asset';
    let dependents: Awaited<ReturnType<typeof dependentsOnDelete>> = [];
    let members: number[] = [];
    let inventory: InventoryPlan | undefined;
    await deleteUnderLocks(db, this.store, entityType, [record.id], {
      farm: { placements: this.placements, rt: record.rt },
      ownLocked: true,
      going: async (ids) => {
        await refuseIfReferenced(db, this.store, record);
        return ids;
      },
      before: async () => {
        dependents = await dependentsOnDelete(db, record.rt, [record.id]);
        members = isAsset ? await this.placements.membersBeforeDelete(db, record.id) : [];
        inventory = await this.inventories.plan(
          db,
          entityType,
          record.id,
          record.values,
          null,
          dependents.flatMap((d) => (d.entityType === 'quantity' ? d.ids : [])),
        );
      },
    });
    for (const d of dependents) await this.store.delete(db, d.entityType, d.ids);
    if (entityType === 'log')
      await this.placements.logChanged(db, record.id, record.values, null, undefined, plannedAssets(inventory!));
    if (isAsset) await this.placements.assetDeleted(db, record.id, members);
    await this.inventories.apply(db, inventory!);
  }

  /**
   * Delete records of one entity type as records, with none of farmOS's behaviour on delete (no
   * quantities with a log, no placements rebuilt: the importer rebuilds them at its end), under
   * the deletion locks and in one unit of work (entities/deletion-locks.ts deleteUnderLocks):
   * the importer's --prune. `going` picks, once everything is locked, the records that go.
   */
  deleteMany(db: Db, entityType: string, ids: number[], options: Pick<Deletion, 'going'> = {}): Promise<number[]> {
    return deleteUnderLocks(db, this.store, entityType, ids, options);
  }
}

/** A time the client sent for an automatic time field, other than the one stored. */
function isClientTime(sent: ItemValue | ItemValue[] | undefined, stored: ItemValue | ItemValue[] | undefined): boolean {
  return typeof sent === 'number' && sent !== stored;
}
