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
import { conflict, forbidden, ValidationError, type Violation } from '../errors.ts';
import type { ResourceInput } from '../jsonapi/input.ts';
import { beforeCreate, beforeUpdate, dependentsOnDelete, generatedName } from '../farm/hooks.ts';
import { hashPassword, verifyPassword } from '../accounts/passwords.ts';
import { isAccountAdmin } from '../access/policy.ts';
import { revokeUserCredentials } from '../oauth/user-credentials.ts';
import type { LogGeometry } from '../farm/log-geometry.ts';

function pointerOf(field: FieldDescriptor): string {
  return `/data/${field.kind === 'relationship' ? 'relationships' : 'attributes'}/${field.name}`;
}

function isEmpty(value: ItemValue | ItemValue[] | undefined): boolean {
  return value === undefined || value === null || value === '' || (Array.isArray(value) && value.length === 0);
}

export class EntityService {
  constructor(
    readonly store: RecordStore,
    private readonly logGeometry: LogGeometry,
  ) {}

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

  private async writeRevision(db: Db, rt: ResourceType, id: number, principal: Principal, now: number, values: Map<string, ItemValue | ItemValue[]>): Promise<number | null> {
    if (!rt.entityType.revisionId) return null;
    const snapshot: Record<string, unknown> = {};
    for (const [k, v] of values) snapshot[k] = v;
    const message = values.get('revision_log_message');
    const [row] = await db('entity_revision')
      .insert({ entity_type: rt.entityType.entityType, entity_id: id, user_id: principal.userId, created: now, message: typeof message === 'string' && message ? message : null, data: JSON.stringify(snapshot) })
      .returning('id');
    const revisionId = Number(typeof row === 'object' ? (row as { id: number }).id : row);
    await db(rt.entityType.table).where('id', id).update({ revision_id: revisionId });
    return revisionId;
  }

  private async applySecrets(db: Db, rt: ResourceType, input: ResourceInput, principal: Principal, current: { id: number } | null, values: Map<string, ItemValue | ItemValue[]>): Promise<void> {
    for (const [name, secret] of input.secrets) {
      const field = rt.fieldsByName.get(name)!;
      if (secret.value.length < 8) throw new ValidationError([{ pointer: pointerOf(field), detail: `${name}: a password must be at least 8 characters long.` }]);
      if (current && !isAccountAdmin(principal)) {
        // Changing one's own password needs the current one, as Drupal asks for it.
        const row = await db(rt.entityType.table).where('id', current.id).first(field.storage.kind === 'columns' ? field.storage.columns.value! : 'id');
        const stored = row ? (Object.values(row)[0] as string | null) : null;
        if (!secret.existing || !(await verifyPassword(stored, secret.existing))) {
          throw forbidden(`${name}: to change your password, send the current one as ${name}.existing.`, { pointer: pointerOf(field) });
        }
      }
      values.set(name, await hashPassword(secret.value));
    }
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

  async create(db: Db, rt: ResourceType, input: ResourceInput, principal: Principal, now = Math.floor(Date.now() / 1000)): Promise<{ id: number; uuid: string }> {
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
      if (values.has(field.name) && !(isEmpty(values.get(field.name)) && field.default !== undefined && !field.multiple && values.get(field.name) === null)) continue;
      if (field.default !== undefined) values.set(field.name, typeof field.default === 'object' ? now : field.default);
      else if (!values.has(field.name)) values.set(field.name, field.multiple ? [] : null);
    }
    await this.applySecrets(db, rt, input, principal, null, values);
    beforeCreate(rt, values, { db, principal, now });
    await this.logGeometry.beforeSave(db, rt, values, null, principal);
    this.requireFields(rt, values);
    await this.checkUnique(db, rt, values, null);
    const id = await this.store.insert(db, rt, uuid, values);
    const label = rt.entityType.labelField;
    if (rt.entityType.namePattern && isEmpty(values.get(label))) {
      const name = generatedName(rt, id)!;
      values.set(label, name);
      await this.store.update(db, rt, id, new Map([[label, name]]));
    }
    await this.markFilesPermanent(db, rt, values);
    await this.writeRevision(db, rt, id, principal, now, values);
    return { id, uuid };
  }

  async update(db: Db, record: EntityRecord, input: ResourceInput, principal: Principal, now = Math.floor(Date.now() / 1000)): Promise<void> {
    const rt = record.rt;
    const changes = new Map(input.values);
    for (const field of rt.bundle.fields) {
      if (field.auto === 'changed' || field.auto === 'editor') {
        const auto = this.autoValue(field, principal, now);
        if (auto !== undefined) changes.set(field.name, auto);
      }
    }
    await this.applySecrets(db, rt, input, principal, record, changes);
    beforeUpdate(rt, changes, record, { db, principal, now });
    await this.logGeometry.beforeSave(db, rt, changes, record, principal);
    this.requireFields(rt, changes, new Set(input.values.keys()));
    await this.checkUnique(db, rt, changes, record.id);
    const label = rt.entityType.labelField;
    if (rt.entityType.namePattern && changes.has(label) && isEmpty(changes.get(label))) changes.set(label, generatedName(rt, record.id)!);
    await this.store.update(db, rt, record.id, changes);
    await this.markFilesPermanent(db, rt, changes);
    // Blocking a user ends every token and sign-in it holds, so an unblock does not revive them.
    if (rt.entityType.access === 'user' && changes.get('status') === false && record.values.get('status') !== false) {
      await revokeUserCredentials(db, record.id);
    }
    const merged = new Map(record.values);
    for (const [k, v] of changes) merged.set(k, v);
    await this.writeRevision(db, rt, record.id, principal, now, merged);
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

  async delete(db: Db, record: EntityRecord): Promise<void> {
    const dependents = await dependentsOnDelete(db, record.rt, [record.id]);
    await this.store.delete(db, record.rt.entityType.entityType, [record.id]);
    for (const d of dependents) await this.store.delete(db, d.entityType, d.ids);
  }
}
