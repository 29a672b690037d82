/**
 * Who is asking: the authenticated user (if any), the token's scopes, and the permissions they add
 * up to; and where a request keeps its principal between middleware and handlers.
 */
import type { Response } from 'express';
import type { Permission, PermissionShape } from './roles.ts';

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
  shape?: PermissionShape;
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
