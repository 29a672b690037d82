/**
 * Creating, updating and deleting records: defaults and automatic values, required fields,
 * farmOS's save-time behaviour (farm/hooks.ts), revisions, and storage. Handlers call this inside
 * the request's one transaction; every failure throws before anything is written or rolls back.
 */
import { randomUUID } from 'node:crypto';
import type { FieldDescriptor } from '../model/descriptor.ts';
import type { ResourceType } from '../model/registry.ts';
import type { Principal } from '../access/principal.ts';
import { RecordStore, type Db, type EntityRecord, type ItemValue, type Reference } from '../storage/records.ts';
import { conflict, forbidden, tooManyRequests, ValidationError, type Violation } from '../errors.ts';
import type { EntityInput, Secret } from './input.ts';
import { beforeCreate, beforeUpdate, dependentsOnDelete, generatedName } from '../farm/hooks.ts';
import { childChanges, childrenOf, secondBirths } from '../farm/births.ts';
import { parentViolations } from '../farm/parents.ts';
import { Placements } from '../farm/placements.ts';
import { FarmValidation } from '../farm/validation.ts';
import { hashPassword } from '../accounts/passwords.ts';
import type { PasswordGuard } from '../accounts/password-guard.ts';
import { isRole, type Role } from '../access/roles.ts';
import { replaceRoles, rolesOfUser } from '../accounts/users.ts';
import { isAccountAdmin } from '../access/policy.ts';
import { assertMayChangeAccount } from '../access/accounts.ts';
import { revokeUserCredentials } from '../accounts/credentials.ts';
import type { LogGeometry } from '../farm/log-geometry.ts';
import { REVISION_LOG_MESSAGE, REVISION_METADATA_FIELDS, savesNewRevision } from '../storage/revisions.ts';
import { defaultFromCallback } from './default-callbacks.ts';

function pointerOf(field: FieldDescriptor): string {
  return `/data/${field.kind === 'relationship' ? 'relationships' : 'attributes'}/${field.name}`;
}

function isEmpty(value: ItemValue | ItemValue[] | undefined): boolean {
  return value === undefined || value === null || value === '' || (Array.isArray(value) && value.length === 0);
}

/** Hashes of the passwords a write sends, by field name, made before its transaction opens. */
export type HashedSecrets = ReadonlyMap<string, string>;

const NO_SECRETS: HashedSecrets = new Map();

export class EntityService {
  /** farmOS's rules against circular locations and group membership (farm/validation.ts). */
  private readonly farmRules: FarmValidation;
  private readonly placements: Placements;

  constructor(
    readonly store: RecordStore,
    private readonly logGeometry: LogGeometry,
    private readonly passwords: PasswordGuard,
  ) {
    this.farmRules = new FarmValidation(store.registry);
    this.placements = new Placements(store.registry);
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
      if (!field.required || field.computed || field.auto) continue;
      if (only && !only.has(field.name)) continue;
      if (isEmpty(values.get(field.name))) violations.push({ pointer: pointerOf(field), detail: `${field.name}: This value should not be null (${field.label} is required).` });
    }
    if (violations.length) throw new ValidationError(violations);
  }

  /**
   * Record a save as a revision of the record: who, when, its message and the stored values. A
   * bundle that keeps no new revisions (farmOS's vocabularies) rewrites its current one instead.
   */
  private async writeRevision(db: Db, rt: ResourceType, id: number, principal: Principal, now: number, values: Map<string, ItemValue | ItemValue[]>, current: EntityRecord | null): Promise<number | null> {
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
    const revisionId = await revisions.add(db, entityType, id, { userId: principal.userId, created: now, message: text, values: stored });
    await db(rt.entityType.table).where('id', id).update({ revision_id: revisionId });
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

  /**
   * Check and hash the passwords a write sends (read from its document by the face that received
   * it), before its transaction opens (hashing takes a while, and nothing may hold the database
   * meanwhile). Users changing their own password confirm the current one, as Drupal asks; wrong
   * ones count as failed passwords of the account. `targetId` is the account being changed, or
   * null when one is created.
   */
  async hashSecrets(db: Db, rt: ResourceType, secrets: ReadonlyMap<string, Secret>, principal: Principal, targetId: number | null): Promise<HashedSecrets> {
    if (!secrets.size) return NO_SECRETS;
    const hashed = new Map<string, string>();
    for (const [name, secret] of secrets) {
      const field = rt.fieldsByName.get(name)!;
      if (secret.value.length < 8) throw new ValidationError([{ pointer: pointerOf(field), detail: `${name}: a password must be at least 8 characters long.` }]);
      if (secret.value.length > 1024) throw new ValidationError([{ pointer: pointerOf(field), detail: `${name}: a password may be at most 1024 characters long.` }]);
      // Only one's own account asks for the current password; other callers are refused later
      // unless they administer accounts, and must not spend the owner's failed-password count.
      if (targetId !== null && principal.userId === targetId && !isAccountAdmin(principal)) {
        if (!secret.existing) throw forbidden(`${name}: to change your password, send the current one as ${name}.existing.`, { pointer: pointerOf(field) });
        const check = await this.passwords.confirm(db, targetId, secret.existing);
        if (check === 'wrong') throw forbidden(`${name}: the current password (${name}.existing) is wrong.`, { pointer: pointerOf(field) });
        if (check !== 'ok') throw tooManyRequests(`${name}: too many wrong passwords for this account; try again in ${check.waitSeconds} seconds.`, check.waitSeconds);
      }
      hashed.set(name, await hashPassword(secret.value));
    }
    return hashed;
  }

  private applySecrets(input: EntityInput, hashed: HashedSecrets, values: Map<string, ItemValue | ItemValue[]>): void {
    for (const name of input.secrets.keys()) {
      const hash = hashed.get(name);
      if (!hash) throw new Error(`The password ${name} was not hashed before the transaction (call hashSecrets first).`);
      values.set(name, hash);
    }
  }

  /** The account rules (access/accounts.ts) for a change of a user record; `record` is null on create. */
  private async checkAccountChange(db: Db, rt: ResourceType, record: EntityRecord | null, changes: Map<string, ItemValue | ItemValue[]>, principal: Principal): Promise<void> {
    if (rt.entityType.access !== 'user') return;
    const current = record ? await rolesOfUser(db, record.id) : [];
    let roles: Role[] | undefined;
    if (changes.has('roles')) {
      const next = [...new Set(((changes.get('roles') as Reference[] | null) ?? []).map((r) => String(r.meta.name)).filter(isRole))].sort();
      if (next.join() !== [...current].sort().join()) roles = next;
    }
    // Only account administrators create accounts, so only a change of an existing one can
    // touch an admin-only field without the right to.
    const adminFields = record
      ? rt.bundle.fields.filter((f) => f.visibility === 'admin' && !f.readOnly && changes.has(f.name) && changes.get(f.name) !== record.values.get(f.name)).map((f) => f.name)
      : [];
    assertMayChangeAccount(principal, record ? { id: record.id, roles: current } : null, record ? 'update' : 'create', { roles, adminFields });
  }

  /** Store a user's roles (a computed field the runtime keeps in its own table). */
  private async saveRoles(db: Db, rt: ResourceType, id: number, values: Map<string, ItemValue | ItemValue[]>): Promise<void> {
    if (rt.entityType.access !== 'user' || !values.has('roles')) return;
    const roles = ((values.get('roles') as Reference[] | null) ?? []).map((r) => String(r.meta.name)).filter(isRole);
    await replaceRoles(db, id, roles);
  }

  /** Users have unique names and e-mail addresses. */
  private async checkUnique(db: Db, rt: ResourceType, values: Map<string, ItemValue | ItemValue[]>, id: number | null): Promise<void> {
    if (rt.entityType.access !== 'user') return;
    const violations: Violation[] = [];
    for (const column of ['name', 'mail']) {
      const value = values.get(column);
      if (typeof value !== 'string' || !value) continue;
      const clash = await db(rt.entityType.table).where(column, value).whereNot('id', id ?? -1).first('id');
      if (clash) violations.push({ pointer: `/data/attributes/${column}`, detail: `${column}: "${value}" is already taken.` });
    }
    if (violations.length) throw new ValidationError(violations);
  }

  async create(db: Db, rt: ResourceType, input: EntityInput, principal: Principal, hashed: HashedSecrets = NO_SECRETS, now = Math.floor(Date.now() / 1000)): Promise<{ id: number; uuid: string }> {
    const uuid = input.id ?? randomUUID();
    if (input.id && (await this.store.findByUuid(db, rt.entityType.entityType, uuid))) {
      throw conflict(`Conflict: a resource with the id ${uuid} already exists.`, { pointer: '/data/id' });
    }
    const values = new Map(input.values);
    for (const field of rt.bundle.fields) {
      if (field.computed || field.storage.kind === 'none') continue;
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
      if (values.has(field.name) && !(isEmpty(values.get(field.name)) && field.default !== undefined && !field.multiple && values.get(field.name) === null)) continue;
      if (field.default !== undefined) values.set(field.name, typeof field.default === 'object' ? now : field.default);
      else if (!values.has(field.name)) values.set(field.name, field.multiple ? [] : null);
    }
    this.applySecrets(input, hashed, values);
    await this.checkAccountChange(db, rt, null, input.values, principal);
    beforeCreate(rt, values, { db, principal, now });
    await this.logGeometry.beforeSave(db, rt, values, null, principal);
    this.requireFields(rt, values);
    await this.checkUnique(db, rt, values, null);
    await this.checkParents(db, rt, null, values);
    await this.farmRules.check(db, rt, values, null);
    const children = await this.checkBirths(db, rt, values, null);
    const id = await this.store.insert(db, rt, uuid, values);
    await this.saveRoles(db, rt, id, values);
    const label = rt.entityType.labelField;
    if (rt.entityType.namePattern && isEmpty(values.get(label))) {
      const name = generatedName(rt, id)!;
      values.set(label, name);
      await this.store.update(db, rt, id, new Map([[label, name]]));
    }
    await this.markFilesPermanent(db, rt, values);
    await this.writeRevision(db, rt, id, principal, now, values, null);
    if (rt.entityType.entityType === 'log') await this.placements.logChanged(db, null, values);
    await this.applyBirths(db, values, children, principal, now);
    return { id, uuid };
  }

  /** A parent listed twice, or a parent chain that loops back: 422 (farm/parents.ts). */
  private async checkParents(db: Db, rt: ResourceType, id: number | null, values: ReadonlyMap<string, ItemValue | ItemValue[]>): Promise<void> {
    const violations = await parentViolations(db, rt, id, values);
    if (violations.length) throw new ValidationError(violations);
  }

  /** A birth log's children, refused (422) when one already has another birth log (farm/births.ts). */
  private async checkBirths(db: Db, rt: ResourceType, values: ReadonlyMap<string, ItemValue | ItemValue[]>, logId: number | null): Promise<number[]> {
    const children = childrenOf(rt, values);
    const violations = await secondBirths(db, this.store.registry, rt, logId, children);
    if (violations.length) throw new ValidationError(violations);
    return children;
  }

  /** Give a birth log's children their birthdate and mother, saved as updates of theirs. */
  private async applyBirths(db: Db, log: ReadonlyMap<string, ItemValue | ItemValue[]>, children: number[], principal: Principal, now: number): Promise<void> {
    if (!children.length) return;
    const records = await this.store.load(db, 'asset', children);
    for (const { child, changes } of childChanges(log, records)) await this.update(db, child, { values: changes, secrets: new Map() }, principal, NO_SECRETS, now);
  }

  async update(db: Db, record: EntityRecord, input: EntityInput, principal: Principal, hashed: HashedSecrets = NO_SECRETS, now = Math.floor(Date.now() / 1000)): Promise<void> {
    const rt = record.rt;
    const changes = new Map(input.values);
    this.blankRepeatedMessage(rt, changes, record);
    for (const field of rt.bundle.fields) {
      // A save that rewrites the current revision keeps that revision's author and time.
      if (REVISION_METADATA_FIELDS.has(field.name) && !savesNewRevision(rt)) continue;
      if (field.auto === 'changed' || field.auto === 'editor') {
        const auto = this.autoValue(field, principal, now);
        if (auto !== undefined) changes.set(field.name, auto);
      }
    }
    await this.checkAccountChange(db, rt, record, changes, principal);
    this.applySecrets(input, hashed, changes);
    beforeUpdate(rt, changes, record, { db, principal, now });
    await this.logGeometry.beforeSave(db, rt, changes, record, principal);
    this.requireFields(rt, changes, new Set(input.values.keys()));
    await this.checkUnique(db, rt, changes, record.id);
    const merged = new Map(record.values);
    for (const [k, v] of changes) merged.set(k, v);
    await this.checkParents(db, rt, record.id, changes);
    await this.farmRules.check(db, rt, changes, record);
    const children = await this.checkBirths(db, rt, merged, record.id);
    const label = rt.entityType.labelField;
    if (rt.entityType.namePattern && changes.has(label) && isEmpty(changes.get(label))) changes.set(label, generatedName(rt, record.id)!);
    await this.store.update(db, rt, record.id, changes);
    await this.saveRoles(db, rt, record.id, changes);
    await this.markFilesPermanent(db, rt, changes);
    if (rt.entityType.access === 'user') {
      // Blocking a user ends every token and sign-in it holds, so an unblock does not revive them.
      // So does a new password, but for the sign-in with which users changed their own.
      if (changes.get('status') === false && record.values.get('status') !== false) await revokeUserCredentials(db, record.id);
      else if (input.secrets.size) await revokeUserCredentials(db, record.id, principal.userId === record.id ? (principal.tokenChainId ?? undefined) : undefined);
    }
    for (const [k, v] of changes) merged.set(k, v);
    await this.writeRevision(db, rt, record.id, principal, now, merged, record);
    if (rt.entityType.entityType === 'log') await this.placements.logChanged(db, record.values, merged, changes.keys());
    if (rt.entityType.entityType === 'asset') await this.placements.assetChanged(db, record.id, changes.keys());
    await this.applyBirths(db, merged, children, principal, now);
  }

  /** Files referenced by a saved record stop being temporary (Drupal's file usage). */
  private async markFilesPermanent(db: Db, rt: ResourceType, values: Map<string, ItemValue | ItemValue[]>): Promise<void> {
    const ids: number[] = [];
    for (const field of rt.bundle.fields) {
      if ((field.type !== 'file' && field.type !== 'image') || !values.has(field.name)) continue;
      const v = values.get(field.name);
      for (const ref of (Array.isArray(v) ? v : v ? [v] : []) as Reference[]) if (ref) ids.push(ref.targetId);
    }
    if (!ids.length) return;
    const table = this.store.entityType('file').table;
    await db(table).whereIn('id', ids).where('status', false).update({ status: true });
  }

  async delete(db: Db, record: EntityRecord, principal: Principal): Promise<void> {
    if (record.rt.entityType.access === 'user') assertMayChangeAccount(principal, { id: record.id, roles: await rolesOfUser(db, record.id) }, 'delete');
    const dependents = await dependentsOnDelete(db, record.rt, [record.id]);
    const isAsset = record.rt.entityType.entityType === 'asset';
    const members = isAsset ? await this.placements.membersBeforeDelete(db, record.id) : [];
    await this.store.delete(db, record.rt.entityType.entityType, [record.id]);
    for (const d of dependents) await this.store.delete(db, d.entityType, d.ids);
    if (record.rt.entityType.entityType === 'log') await this.placements.logChanged(db, record.values, null);
    if (isAsset) await this.placements.assetDeleted(db, record.id, members);
  }
}
