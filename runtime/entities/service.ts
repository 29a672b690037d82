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
import { RecordStore, lockRows, type Db, type EntityRecord, type ItemValue, type Reference } from '../storage/records.ts';
import { conflict, fieldPointer, ValidationError, type Violation } from '../errors.ts';
import type { EntityInput, Secret } from './input.ts';
import { beforeCreate, beforeUpdate, dependentsOnDelete, generatedName } from '../farm/hooks.ts';
import { copyMaterialType } from '../farm/material.ts';
import { childChanges, childrenOf, secondBirths } from '../farm/births.ts';
import { parentViolations } from '../farm/parents.ts';
import { Placements } from '../farm/placements.ts';
import { InventoryChanges, plannedAssets } from '../farm/inventory.ts';
import { FarmValidation } from '../farm/validation.ts';
import type { PasswordGuard } from '../accounts/password-guard.ts';
import type { LogGeometry } from '../farm/log-geometry.ts';
import { REVISION_LOG_MESSAGE, REVISION_METADATA_FIELDS, savesNewRevision } from '../storage/revisions.ts';
import { defaultFromCallback } from './default-callbacks.ts';
import { AccountSaves, NO_SECRETS, type HashedSecrets } from './account-saves.ts';
import { markFilesPermanent } from './file-usage.ts';
import { recordChanges } from '../storage/change-feed.ts';
import { lockForDeletion } from './deletion-locks.ts';
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
  hashSecrets(db: Db, rt: ResourceType, secrets: ReadonlyMap<string, Secret>, principal: Principal, targetId: number | null, address?: string): Promise<HashedSecrets> {
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
      if (isEmpty(values.get(field.name))) violations.push({ pointer: fieldPointer(field), detail: `${field.name}: This value should not be null (${field.label} is required).` });
    }
    if (violations.length) throw new ValidationError(violations);
  }

  /**
   * Record a save as a revision of the record: who, when, its message and the stored values. A
   * bundle that keeps no new revisions (farmOS's vocabularies) rewrites its current one instead.
   */
  private async writeRevision(db: Db, rt: ResourceType, id: number, principal: Principal, now: number, values: Map<string, ItemValue | ItemValue[]>, current: EntityRecord | null, reserved?: number): Promise<number | null> {
    if (!rt.entityType.revisionId) return null;
    const revisions = this.store.revisions;
    const stored = new Map([...values].filter(([name]) => {
      const field = rt.fieldsByName.get(name);
      return field && !field.computed && field.storage.kind !== 'none';
    }));
    await revisions.pinTargetRevisions(db, rt, stored);
    const message = values.get(REVISION_LOG_MESSAGE);
    const text = typeof message === 'string' ? message : '';
    const entityType = rt.entityType.entityType;
    if (current?.revisionId && !savesNewRevision(rt) && (await revisions.replace(db, entityType, id, current.revisionId, { message: text, values: stored }))) {
      return current.revisionId;
    }
    const revisionId = await revisions.add(db, entityType, id, { userId: principal.userId, created: now, message: text, values: stored }, reserved);
    // A new record was inserted with its revision's number (create); a save of one moves it on.
    if (reserved === undefined) await this.store.update(db, rt, id, new Map(), { revision_id: revisionId });
    return revisionId;
  }

  /**
   * A new revision's log message is the one its own save supplied: farmOS blanks one that is
   * missing or merely repeats the previous revision's (clients echo whole records back).
   */
  private blankRepeatedMessage(rt: ResourceType, changes: Map<string, ItemValue | ItemValue[]>, record: EntityRecord): void {
    if (!savesNewRevision(rt) || !rt.fieldsByName.has(REVISION_LOG_MESSAGE)) return;
    const sent = changes.get(REVISION_LOG_MESSAGE);
    if (typeof sent !== 'string' || sent === record.values.get(REVISION_LOG_MESSAGE)) changes.set(REVISION_LOG_MESSAGE, '');
  }

  async create(db: Db, rt: ResourceType, input: EntityInput, principal: Principal, hashed: HashedSecrets = NO_SECRETS, now = Math.floor(Date.now() / 1000)): Promise<{ id: number; uuid: string }> {
    const uuid = input.id ?? randomUUID();
    if (input.id && (await this.store.findByUuid(db, rt.entityType.entityType, uuid))) {
      throw conflict(`Conflict: a resource with the id ${uuid} already exists.`, { pointer: '/data/id' });
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
      // A generated key replaces an empty one too: farmOS.js sends "" for every string it was not given.
      if (field.defaultCallback && isEmpty(values.get(field.name))) {
        values.set(field.name, defaultFromCallback(field.defaultCallback));
        continue;
      }
      // A null for a field with a default gets the default, except for a required (or not
      // nullable) field: farmOS refuses that with a 422 (requireFields), it does not reset the value.
      if (values.has(field.name) && !(isEmpty(values.get(field.name)) && field.default !== undefined && !field.multiple && values.get(field.name) === null && !field.required && field.nullable !== false)) continue;
      if (field.default !== undefined) values.set(field.name, typeof field.default === 'object' ? now : field.default);
      else if (!values.has(field.name)) values.set(field.name, field.multiple ? [] : null);
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
    // The files it names stop being temporary first: on PostgreSQL that locks their rows, and a
    // save of another record (update) locks files before the revision counter, so the same order here.
    await markFilesPermanent(db, rt, values, this.store.entityType('file').table);
    // The first revision's number is taken now, so that the record is inserted with it.
    const revisionId = rt.entityType.revisionId ? await this.store.revisions.nextNumber(db, rt.entityType.entityType) : undefined;
    const id = await this.store.insert(db, rt, uuid, values, revisionId === undefined ? {} : { revision_id: revisionId });
    await this.accounts.afterSave(db, rt, id, values, null, input, principal);
    const label = rt.entityType.labelField;
    if (rt.entityType.namePattern && isEmpty(values.get(label))) {
      const name = generatedName(rt, id)!;
      values.set(label, name);
      await this.store.update(db, rt, id, new Map([[label, name]]));
    }
    await this.writeRevision(db, rt, id, principal, now, values, null, revisionId);
    const inventory = await this.inventories.plan(db, rt.entityType.entityType, id, null, values);
    if (rt.entityType.entityType === 'log') await this.placements.logChanged(db, id, null, values, undefined, plannedAssets(inventory));
    await this.applyBirths(db, rt, id, true, values, children, principal, now);
    await this.inventories.apply(db, inventory);
    return { id, uuid };
  }

  /** A parent listed twice, or a parent chain that loops back: 422 (farm/parents.ts). */
  private async checkParents(db: Db, rt: ResourceType, id: number | null, values: ReadonlyMap<string, ItemValue | ItemValue[]>): Promise<void> {
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
   * new birth logs of one child would both pass the check. Taken here, after the log's own row,
   * revision counter and feed row and with the assets placements locks (a superset, when it
   * rebuilds any), as every log save takes them; each child's feed row follows its lock.
   */
  private async applyBirths(db: Db, rt: ResourceType, logId: number, created: boolean, log: ReadonlyMap<string, ItemValue | ItemValue[]>, children: number[], principal: Principal, now: number): Promise<void> {
    if (!children.length) return;
    await lockRows(db, this.store.entityType('asset').table, children);
    const violations = created ? await secondBirths(db, this.store.registry, rt, logId, children) : [];
    if (violations.length) throw new ValidationError(violations);
    const records = await this.store.load(db, 'asset', children);
    const mother = ((Array.isArray(log.get('mother')) ? (log.get('mother') as ItemValue[])[0] : log.get('mother')) ?? null) as Reference | null;
    const [motherRecord] = mother?.targetId ? await this.store.load(db, 'asset', [mother.targetId]) : [];
    const motherName = motherRecord ? String(motherRecord.values.get(motherRecord.rt.entityType.labelField) ?? '') : null;
    for (const { child, changes } of childChanges(log, records, motherName)) await this.update(db, child, { values: changes, secrets: new Map() }, principal, NO_SECRETS, now);
  }

  async update(db: Db, record: EntityRecord, input: EntityInput, principal: Principal, hashed: HashedSecrets = NO_SECRETS, now = Math.floor(Date.now() / 1000)): Promise<void> {
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
    if (rt.entityType.namePattern && changes.has(label) && isEmpty(changes.get(label))) changes.set(label, generatedName(rt, record.id)!);
    await this.store.update(db, rt, record.id, changes);
    await recordChanges(db, rt.entityType.entityType, [record], false);
    await this.accounts.afterSave(db, rt, record.id, changes, record, input, principal);
    await markFilesPermanent(db, rt, changes, this.store.entityType('file').table);
    for (const [k, v] of changes) merged.set(k, v);
    await this.writeRevision(db, rt, record.id, principal, now, merged, record);
    const inventory = await this.inventories.plan(db, rt.entityType.entityType, record.id, record.values, merged);
    if (rt.entityType.entityType === 'log') await this.placements.logChanged(db, record.id, record.values, merged, changes.keys(), plannedAssets(inventory));
    if (rt.entityType.entityType === 'asset') await this.placements.assetChanged(db, record.id, changes.keys());
    await this.applyBirths(db, rt, record.id, false, merged, children, principal, now);
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
  async delete(db: Db, record: EntityRecord, principal: Principal): Promise<void> {
    await this.accounts.checkDelete(db, record, principal);
    const holders = await lockForDeletion(db, this.store, record.rt.entityType.entityType, [record.id], { placements: this.placements, rt: record.rt });
    await refuseIfReferenced(db, this.store, record);
    const dependents = await dependentsOnDelete(db, record.rt, [record.id]);
    const isAsset = record.rt.entityType.entityType === 'asset';
    const members = isAsset ? await this.placements.membersBeforeDelete(db, record.id) : [];
    const inventory = await this.inventories.plan(db, record.rt.entityType.entityType, record.id, record.values, null, dependents.flatMap((d) => (d.entityType === 'quantity' ? d.ids : [])));
    await this.store.delete(db, record.rt.entityType.entityType, [record.id], holders);
    for (const d of dependents) await this.store.delete(db, d.entityType, d.ids);
    if (record.rt.entityType.entityType === 'log') await this.placements.logChanged(db, record.id, record.values, null, undefined, plannedAssets(inventory));
    if (isAsset) await this.placements.assetDeleted(db, record.id, members);
    await this.inventories.apply(db, inventory);
  }
}

/** A time the client sent for an automatic time field, other than the one stored. */
function isClientTime(sent: ItemValue | ItemValue[] | undefined, stored: ItemValue | ItemValue[] | undefined): boolean {
  return typeof sent === 'number' && sent !== stored;
}
