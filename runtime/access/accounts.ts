/**
 * Who may change which user account, over and above "account administrators administer users,
 * everyone edits their own account" (policy.ts). These rules close the ways to take over an
 * account or gain a right nobody gave:
 * - user 1, the first administrator, is changed by nobody but itself and deleted by nobody
 *   (farmOS's farm_role_account_admin: nobody but user 1 can access user 1);
 * - nobody changes another account that holds a right they lack: setting its password would let
 *   them sign in as it and use that right (so an account admin cannot edit an administrator, nor
 *   a worker, whose right to create records account admins do not have);
 * - nobody grants a role whose rights they lack;
 * - only account administrators change roles and admin-only fields (`status`).
 * "Rights" are the token's effective permissions (its scopes and its user's roles), compared
 * permission by permission, so two roles that add up to another's rights count as holding it.
 */
import { forbidden } from '../errors.ts';
import type { Principal } from './principal.ts';
import { isAccountAdmin } from './policy.ts';
import { holds, permissionsOfRoles, ROLES, type Role } from './roles.ts';

/** Drupal's user 1: the account created first. */
export const FIRST_USER_ID = 1;

export interface AccountChange {
  /** The new set of roles, when it differs from the account's current one. */
  roles?: readonly Role[];
  /** Admin-only fields (visibility `admin`) whose values the change alters. */
  adminFields: readonly string[];
}

/** The roles among `roles` that carry a permission the principal lacks. */
function rolesBeyond(principal: Principal, roles: readonly Role[]): Role[] {
  // In the shape the principal acts through: a role's rights differ between them (roles.ts).
  return roles.filter((role) =>
    [...permissionsOfRoles([role], principal.shape)].some((p) => !holds(principal.permissions, p)),
  );
}

/**
 * Whether the principal may change the account `target` at all: what assertMayChangeAccount
 * checks before any particular change (user 1, and an account holding rights the principal
 * lacks), with the right to administer accounts. Pages ask it to offer an account's actions;
 * the save still goes through assertMayChangeAccount.
 */
export function mayChangeAccount(principal: Principal, target: { id: number; roles: readonly Role[] }): boolean {
  if (!isAccountAdmin(principal)) return false;
  const self = principal.userId === target.id;
  if (target.id === FIRST_USER_ID && !self) return false;
  return self || rolesBeyond(principal, target.roles).length === 0;
}

/** The roles the principal may grant: those with no right it lacks (nobody grants rights they do not have). */
export function grantableRoles(principal: Principal): Role[] {
  return isAccountAdmin(principal) ? ROLES.filter((role) => rolesBeyond(principal, [role]).length === 0) : [];
}

/**
 * Throws 403 unless the principal may change (or delete) the account `target` (null when creating
 * one) as described by `change`. Callers have already checked the plain right to update users.
 */
export function assertMayChangeAccount(
  principal: Principal,
  target: { id: number; roles: readonly Role[] } | null,
  op: 'create' | 'update' | 'delete',
  change?: AccountChange,
): void {
  const self = target !== null && principal.userId === target.id;
  if (target?.id === FIRST_USER_ID && (op === 'delete' || !self)) {
    throw forbidden(
      op === 'delete'
        ? 'User 1, the first administrator, cannot be deleted.'
        : 'Only user 1, the first administrator, may change user 1.',
      { record: 'whole' },
    );
  }
  if (target && !self) {
    const beyond = rolesBeyond(principal, target.roles);
    if (beyond.length) {
      throw forbidden(
        `This account holds the role ${beyond.join(', ')}, with rights the current token does not have: only someone who has them may change it.`,
        { record: 'whole' },
      );
    }
  }
  if (!change) return;
  if (!isAccountAdmin(principal)) {
    const [field] = change.adminFields;
    if (field)
      throw forbidden(`${field}: only account administrators may change ${field}.`, {
        field: { kind: 'attribute', name: field },
      });
    if (change.roles)
      throw forbidden('roles: only account administrators may change roles.', {
        field: { kind: 'relationship', name: 'roles' },
      });
  }
  if (change.roles) {
    const added = change.roles.filter((r) => !target?.roles.includes(r));
    const beyond = rolesBeyond(principal, added);
    if (beyond.length) {
      throw forbidden(
        `roles: the current token may not grant ${beyond.join(', ')}: nobody may grant rights they do not have themselves.`,
        { field: { kind: 'relationship', name: 'roles' } },
      );
    }
  }
}
