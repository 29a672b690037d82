/**
 * Who is asking: the authenticated user (if any), the token's scopes, and the permissions they add
 * up to; and where a request keeps its principal between middleware and handlers.
 */
import type { Response } from 'express';
import type { ShapeName } from '../model/descriptor.ts';
import { effectivePermissions, type Permission } from './roles.ts';

export interface Principal {
  /** Internal user id, or null for anonymous requests and client-credentials tokens without a user. */
  userId: number | null;
  userUuid: string | null;
  userName: string | null;
  roles: readonly string[];
  scopes: readonly string[];
  clientId: string | null;
  /** The sign-in (token chain) the request's access token belongs to, or null without a token. */
  tokenChainId: string | null;
  permissions: ReadonlySet<Permission>;
  /**
   * The API shape whose rules made `permissions` (roles.ts): farmOS 4.x's worker deletes only its
   * own records. Absent: the farmOS 2.x shape's, as the pages and commands act.
   */
  shape?: ShapeName;
}

export const ANONYMOUS: Principal = Object.freeze({
  userId: null,
  userUuid: null,
  userName: null,
  roles: [],
  scopes: [],
  clientId: null,
  tokenChainId: null,
  permissions: new Set<Permission>(),
});

export function can(principal: Principal, permission: Permission): boolean {
  return principal.permissions.has(permission);
}

export function principalOf(res: Response): Principal {
  return res.locals.principal ?? ANONYMOUS;
}

export function setPrincipal(res: Response, principal: Principal): void {
  res.locals.principal = principal;
}

/** The principal as a shape's rules see it, kept per principal (principals are kept per token). */
const IN_SHAPE = new WeakMap<Principal, Principal>();

/**
 * The principal with the permissions its roles and scopes give in `shape` (roles.ts): through the
 * farmOS 4.x shape a worker deletes only its own records. The 2.x shape's principal is the one
 * the token gave (bearer authentication computes that shape's permissions).
 */
export function inShape(principal: Principal, shape: ShapeName): Principal {
  if (shape === (principal.shape ?? 'farmos2')) return principal;
  let shaped = IN_SHAPE.get(principal);
  if (!shaped) {
    shaped = Object.freeze({
      ...principal,
      permissions: effectivePermissions(principal.roles, principal.scopes, shape),
      shape,
    });
    IN_SHAPE.set(principal, shaped);
  }
  return shaped;
}
