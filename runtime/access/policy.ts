/**
 * Who may do what to which record. One place decides, for entity routes, relationship paths in
 * filters, sorts and includes, and subrequests alike: a caller learns nothing about a record it
 * may not read.
 */
import type { Knex } from 'knex';
import type { EntityTypeDescriptor, FieldDescriptor } from '../model/descriptor.ts';
import type { Principal } from './principal.ts';
import type { Permission } from './roles.ts';
import { forbidden, unauthorized } from '../errors.ts';

export type Operation = 'view' | 'create' | 'update' | 'delete';

export const WWW_AUTHENTICATE = 'Bearer realm="tilth"';

export function isAuthenticated(principal: Principal): boolean {
  return principal.userId !== null || principal.clientId !== null;
}

export function isAccountAdmin(principal: Principal): boolean {
  return principal.permissions.has('user:administer');
}

function permissionFor(et: EntityTypeDescriptor, op: Operation): Permission {
  switch (et.access) {
    case 'taxonomy':
      return `taxonomy:${op}` as Permission;
    case 'user':
      return op === 'view' ? 'user:view' : 'user:administer';
    case 'content':
    case 'file':
      return `content:${op}` as Permission;
  }
}

/** Throws 401 for anonymous callers. Every route but the entry point and schemas calls it. */
export function requireAuthenticated(principal: Principal): void {
  if (!isAuthenticated(principal)) {
    throw unauthorized(
      'This resource needs an OAuth 2.0 bearer access token (Authorization: Bearer <token>).',
      WWW_AUTHENTICATE,
    );
  }
}

/** May the principal do `op` on records of this entity type at all? (Per-record rules: see mayOnRecord.) */
export function mayOnType(principal: Principal, et: EntityTypeDescriptor, op: Operation): boolean {
  if (et.access === 'user' && op === 'update')
    return isAuthenticated(principal) && (principal.userId !== null || isAccountAdmin(principal));
  if (deletesOwnOnly(principal, et, op)) return true;
  return principal.permissions.has(permissionFor(et, op));
}

/**
 * Whether the principal may delete records of this type only where it is their author: farmOS
 * 4.0's worker (PR #1033), through the farmOS 4.x shape (roles.ts). The record decides.
 */
function deletesOwnOnly(principal: Principal, et: EntityTypeDescriptor, op: Operation): boolean {
  return (
    op === 'delete' &&
    (et.access === 'content' || et.access === 'file') &&
    !principal.permissions.has('content:delete') &&
    principal.permissions.has('content:delete_own')
  );
}

/**
 * The user who authored a record: its `uid` (the field the definitions fill with the author,
 * `auto: author`), or null for a record that has none (a data stream) or none known. farmOS
 * judges "own" by the author, not by the `owner` field (farmos-behaviour.md §6.5).
 */
export function authorOf(record: { rt?: unknown; values?: Map<string, unknown> }): number | null {
  const rt = record.rt as { bundle?: { fields: readonly FieldDescriptor[] } } | undefined;
  const field = rt?.bundle?.fields.find((f) => f.auto === 'author');
  const value = field ? record.values?.get(field.name) : undefined;
  if (value && typeof value === 'object' && 'targetId' in value)
    return Number((value as { targetId: unknown }).targetId);
  return null;
}

/**
 * May the principal do `op` on this particular record? Users may view and edit their own account.
 * Anyone who may view users views a blocked one too, but by its name only (labelOnly).
 */
export function mayOnRecord(
  principal: Principal,
  et: EntityTypeDescriptor,
  op: Operation,
  record: { id: number; values?: Map<string, unknown>; rt?: unknown },
): boolean {
  if (et.access === 'user') {
    const own = principal.userId !== null && principal.userId === record.id;
    if (op === 'view') return own || isAccountAdmin(principal) || principal.permissions.has('user:view');
    if (op === 'update') return own || isAccountAdmin(principal);
    return isAccountAdmin(principal);
  }
  // An unpublished term is seen by those who may see unpublished terms only, as in farmOS.
  if (
    et.access === 'taxonomy' &&
    op === 'view' &&
    record.values?.get('status') === false &&
    !principal.permissions.has('taxonomy:view_unpublished')
  )
    return false;
  if (deletesOwnOnly(principal, et, op)) return principal.userId !== null && authorOf(record) === principal.userId;
  return principal.permissions.has(permissionFor(et, op));
}

const VERB: Record<Operation, string> = { view: 'GET', create: 'POST', update: 'PATCH', delete: 'DELETE' };

/** 401 for anonymous callers, 403 naming what was refused otherwise. */
export function assertMayOnType(principal: Principal, et: EntityTypeDescriptor, op: Operation, what: string): void {
  requireAuthenticated(principal);
  if (!mayOnType(principal, et, op)) {
    throw forbidden(
      `The current user is not allowed to ${VERB[op]} ${what}: it needs the "${permissionFor(et, op)}" permission, which the token's scopes and the user's roles do not both grant.`,
      { record: 'whole' },
    );
  }
}

/**
 * Whether the principal sees this record by its label only: a blocked user, to anyone but its
 * account administrators (and itself). farmOS grants "view label" on a blocked user and renders it
 * with `display_name` alone, so a client can still show "owner: Sam" (farmos-behaviour.md §4.10).
 */
export function labelOnly(
  principal: Principal,
  record: { id: number; rt: { entityType: EntityTypeDescriptor }; values: Map<string, unknown> },
): boolean {
  if (record.rt.entityType.access !== 'user' || isAccountAdmin(principal)) return false;
  if (principal.userId !== null && principal.userId === record.id) return false;
  return record.values.get('status') === false;
}

/**
 * The rows of a collection the principal is shown: blocked users too (by label only), to anyone
 * who may view users; otherwise those of viewCondition. Null when every row is shown.
 */
export function listCondition(
  principal: Principal,
  et: EntityTypeDescriptor,
  alias: string,
): ((qb: Knex.QueryBuilder) => void) | null {
  if (et.access === 'user' && principal.permissions.has('user:view')) return null;
  return viewCondition(principal, et, alias);
}

/**
 * A condition limiting a query on the entity type's table to rows the principal may view in full,
 * or null when it may view every row. Applied inside relationship paths of filters and sorts, so
 * that a blocked user's fields, which the principal sees only the label of, find nothing.
 */
export function viewCondition(
  principal: Principal,
  et: EntityTypeDescriptor,
  alias: string,
): ((qb: Knex.QueryBuilder) => void) | null {
  if (et.access === 'taxonomy')
    return principal.permissions.has('taxonomy:view_unpublished')
      ? null
      : (qb) => void qb.where(`${alias}.status`, true);
  if (et.access !== 'user' || isAccountAdmin(principal)) return null;
  return (qb) => {
    qb.where((w) => {
      w.where(`${alias}.status`, true);
      if (principal.userId !== null) w.orWhere(`${alias}.id`, principal.userId);
    });
  };
}

/** Whether a field of a record may be shown to the principal (users' e-mail and settings are private). */
export function fieldVisible(
  field: FieldDescriptor,
  record: { id: number; rt: { entityType: EntityTypeDescriptor } },
  principal: Principal,
): boolean {
  if (field.internal) return false;
  if (field.visibility === 'all') return true;
  if (isAccountAdmin(principal)) return true;
  if (field.visibility === 'self') return record.rt.entityType.access === 'user' && principal.userId === record.id;
  if (field.visibility === 'editors') return mayOnRecord(principal, record.rt.entityType, 'update', record);
  return false;
}

/** Whether the principal may filter or sort by a field at all (private fields are not filterable by others). */
export function fieldFilterable(field: FieldDescriptor, principal: Principal, et: EntityTypeDescriptor): boolean {
  if (field.internal) return false;
  // A filter on a key would let a reader guess it a character at a time.
  if (field.visibility === 'editors') return mayOnType(principal, et, 'update');
  return field.visibility === 'all' || isAccountAdmin(principal);
}

/**
 * 403 when a principal who deletes only its own records (farmOS 4.x's worker) would change who
 * authored `record`: making another's record its own would let it delete that record after all.
 * Anyone else sets `uid` as farmOS lets an editor set it (an import keeps who wrote what).
 */
export function assertMayChangeAuthor(
  principal: Principal,
  record: {
    id: number;
    rt: { entityType: EntityTypeDescriptor; bundle: { fields: readonly FieldDescriptor[] } };
    values: Map<string, unknown>;
  },
  values: ReadonlyMap<string, unknown>,
): void {
  if (!deletesOwnOnly(principal, record.rt.entityType, 'delete')) return;
  const field = record.rt.bundle.fields.find((f) => f.auto === 'author');
  if (!field || !values.has(field.name)) return;
  const sent = authorOf({ rt: record.rt, values: new Map([[field.name, values.get(field.name)]]) });
  if (sent === authorOf(record)) return;
  throw forbidden(
    `The current user may not change ${field.name}, who authored this record: through the farmOS 4.x API a worker deletes only the records they authored, and ${field.name} decides which those are.`,
    { field: { kind: field.kind === 'relationship' ? 'relationship' : 'attribute', name: field.name } },
  );
}
