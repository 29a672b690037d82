/**
 * What saving a user account adds to saving any record: passwords checked and hashed before the
 * transaction, the account rules (access/accounts.ts), names by the rules of accounts/names.ts and
 * unique without regard to case across names and e-mail addresses, roles
 * kept in their own table, and credentials ended when an account is blocked or its password
 * changes. EntityService calls these at fixed points of every save; for other entity types they
 * do nothing.
 */
import type { ResourceType } from '../model/registry.ts';
import type { Principal } from '../access/principal.ts';
import type { Db, EntityRecord, ItemValue, Reference } from '../storage/records.ts';
import { forbidden, tooManyRequests, ValidationError, type Violation } from '../errors.ts';
import type { EntityInput, Secret } from './input.ts';
import { hashPassword } from '../accounts/passwords.ts';
import type { PasswordGuard } from '../accounts/password-guard.ts';
import { isRole, type Role } from '../access/roles.ts';
import { replaceRoles, rolesOfUser } from '../accounts/users.ts';
import { accountClashes, normalizeUserName, userNameProblem } from '../accounts/names.ts';
import { assertMayChangeAccount } from '../access/accounts.ts';
import { revokeUserCredentials } from '../accounts/credentials.ts';

/** Hashes of the passwords a write sends, by field name, made before its transaction opens. */
export type HashedSecrets = ReadonlyMap<string, string>;

export const NO_SECRETS: HashedSecrets = new Map();

type Values = Map<string, ItemValue | ItemValue[]>;

const isAccount = (rt: ResourceType) => rt.entityType.access === 'user';

export class AccountSaves {
  constructor(private readonly passwords: PasswordGuard) {}

  /**
   * Check and hash the passwords a write sends (read from its document by the face that received
   * it), before its transaction opens (hashing takes a while, and nothing may hold the database
   * meanwhile). Users changing their own password confirm the current one, as Drupal asks; wrong
   * ones count as failed passwords of the account. `targetId` is the account being changed, or
   * null when one is created. `address` is the client's, for the account's password allowances.
   */
  async hashSecrets(
    db: Db,
    rt: ResourceType,
    secrets: ReadonlyMap<string, Secret>,
    principal: Principal,
    targetId: number | null,
    address?: string,
  ): Promise<HashedSecrets> {
    if (!secrets.size) return NO_SECRETS;
    const hashed = new Map<string, string>();
    for (const [name, secret] of secrets) {
      const field = rt.fieldsByName.get(name)!;
      if (secret.value.length < 8)
        throw new ValidationError([{ field, detail: `${name}: a password must be at least 8 characters long.` }]);
      if (secret.value.length > 1024)
        throw new ValidationError([{ field, detail: `${name}: a password may be at most 1024 characters long.` }]);
      // One's own account asks for the current password, whatever one's role: else a stolen
      // access token of an administrator would set a new password and lock the owner out.
      // Other callers are refused later unless they administer accounts, and must not spend
      // the owner's failed-password count.
      if (targetId !== null && principal.userId === targetId) {
        if (!secret.existing)
          throw forbidden(`${name}: to change your password, send the current one as ${name}.existing.`, { field });
        const check = await this.passwords.confirm(db, targetId, secret.existing, address);
        if (check === 'wrong') throw forbidden(`${name}: the current password (${name}.existing) is wrong.`, { field });
        if (check !== 'ok')
          throw tooManyRequests(
            `${name}: too many wrong passwords for this account; try again in ${check.waitSeconds} seconds.`,
            check.waitSeconds,
          );
      }
      hashed.set(name, await hashPassword(secret.value));
    }
    return hashed;
  }

  /** Put the hashes made by hashSecrets in place of the passwords. */
  applySecrets(input: EntityInput, hashed: HashedSecrets, values: Values): void {
    for (const name of input.secrets.keys()) {
      const hash = hashed.get(name);
      if (!hash)
        throw new Error(`The password ${name} was not hashed before the transaction (call hashSecrets first).`);
      values.set(name, hash);
    }
  }

  /** The account rules (access/accounts.ts) for a change of a user record; `record` is null on create. */
  async checkChange(
    db: Db,
    rt: ResourceType,
    record: EntityRecord | null,
    changes: Values,
    principal: Principal,
  ): Promise<void> {
    if (!isAccount(rt)) return;
    const current = record ? await rolesOfUser(db, record.id) : [];
    let roles: Role[] | undefined;
    if (changes.has('roles')) {
      const next = [
        ...new Set(((changes.get('roles') as Reference[] | null) ?? []).map((r) => String(r.meta.name)).filter(isRole)),
      ].sort();
      if (next.join() !== [...current].sort().join()) roles = next;
    }
    // Only account administrators create accounts, so only a change of an existing one can
    // touch an admin-only field without the right to.
    const adminFields = record
      ? rt.bundle.fields
          .filter(
            (f) =>
              f.visibility === 'admin' &&
              !f.readOnly &&
              changes.has(f.name) &&
              changes.get(f.name) !== record.values.get(f.name),
          )
          .map((f) => f.name)
      : [];
    assertMayChangeAccount(principal, record ? { id: record.id, roles: current } : null, record ? 'update' : 'create', {
      roles,
      adminFields,
    });
  }

  /**
   * A new name, trimmed, must follow the rules for names, and neither it nor a new e-mail address
   * may be another account's name or address without regard to case (accounts/names.ts, shared
   * with `tilth user create`). `record` is the account before the change, null on create: values
   * it already has are not checked again, so an account named before these rules keeps working.
   */
  async checkUnique(db: Db, rt: ResourceType, values: Values, record: EntityRecord | null): Promise<void> {
    if (!isAccount(rt)) return;
    const changed = (field: 'name' | 'mail'): string | undefined => {
      const value = values.get(field);
      return typeof value === 'string' && value !== '' && (!record || value !== record.values.get(field))
        ? value
        : undefined;
    };
    const violations: Violation[] = [];
    let name = changed('name');
    if (name !== undefined) {
      name = normalizeUserName(name);
      values.set('name', name);
      const problem = record && name === record.values.get('name') ? null : userNameProblem(name);
      if (problem) {
        violations.push({ field: { kind: 'attribute', name: 'name' }, detail: `name: ${problem}` });
        name = undefined;
      }
    }
    for (const clash of await accountClashes(db, { name, mail: changed('mail') }, record?.id ?? null)) {
      violations.push({ field: { kind: 'attribute', name: clash.field }, detail: `${clash.field}: ${clash.message}` });
    }
    if (violations.length) throw new ValidationError(violations);
  }

  /** After the record is stored: its roles, and (on update) the credentials a block or a new password ends. */
  async afterSave(
    db: Db,
    rt: ResourceType,
    id: number,
    changes: Values,
    before: EntityRecord | null,
    input: EntityInput,
    principal: Principal,
  ): Promise<void> {
    if (!isAccount(rt)) return;
    if (changes.has('roles'))
      await replaceRoles(
        db,
        id,
        ((changes.get('roles') as Reference[] | null) ?? []).map((r) => String(r.meta.name)).filter(isRole),
      );
    if (!before) return;
    // Blocking a user ends every token and sign-in it holds, so an unblock does not revive them.
    // So does a new password, but for the sign-in with which users changed their own.
    if (changes.get('status') === false && before.values.get('status') !== false) await revokeUserCredentials(db, id);
    else if (input.secrets.size)
      await revokeUserCredentials(db, id, principal.userId === id ? (principal.tokenChainId ?? undefined) : undefined);
  }

  /** Before an account is deleted: the account rules. */
  async checkDelete(db: Db, record: EntityRecord, principal: Principal): Promise<void> {
    if (isAccount(record.rt))
      assertMayChangeAccount(principal, { id: record.id, roles: await rolesOfUser(db, record.id) }, 'delete');
  }
}
