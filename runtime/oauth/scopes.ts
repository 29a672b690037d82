/**
 * Scope parameters: parsing, defaults and validation. Scopes are role names plus `user_access`
 * (runtime/access/roles.ts); what a token may finally do is decided per request by
 * effectivePermissions, so a scope beyond the user's roles is accepted but grants nothing extra.
 */
import { OAuthError } from '../errors.ts';
import { isScope, SCOPES } from '../access/roles.ts';

/**
 * The scope tokens of a `scope` parameter (RFC 6749 §3.3: space-delimited), without duplicates,
 * in the order given; null when the parameter is absent or empty.
 */
export function parseScope(raw: string | undefined): string[] | null {
  if (raw === undefined) return null;
  const tokens = raw.split(' ').filter(Boolean);
  return tokens.length ? [...new Set(tokens)] : null;
}

/** The scopes a request gets: those it names, or else the client's defaults. Unknown scopes are invalid_scope. */
export function resolveScopes(requested: string[] | null, defaults: readonly string[]): string[] {
  const scopes = requested ?? [...defaults];
  if (!scopes.length) throw new OAuthError('invalid_scope', `No scope was requested and the client has no default scope. Scopes are: ${SCOPES.join(', ')}.`);
  const unknown = scopes.filter((s) => !isScope(s));
  if (unknown.length) throw new OAuthError('invalid_scope', `Unknown scope${unknown.length > 1 ? 's' : ''} ${unknown.map((s) => `"${s}"`).join(', ')}. Scopes are: ${SCOPES.join(', ')}.`);
  return scopes;
}

/** A refresh may keep or narrow the original scopes, never widen them (RFC 6749 §6). */
export function narrowScopes(requested: string[] | null, granted: readonly string[]): string[] {
  if (!requested) return [...granted];
  const wider = requested.filter((s) => !granted.includes(s));
  if (wider.length) throw new OAuthError('invalid_scope', `The refresh token was not granted the scope ${wider.map((s) => `"${s}"`).join(', ')}; a refresh may only keep or narrow the scope.`);
  return requested;
}

/** The `scope` member of a token response, and the stored form: space-delimited. */
export function formatScope(scopes: readonly string[]): string {
  return scopes.join(' ');
}
