/**
 * Scope parameters: parsing, defaults and validation. Scopes are role names plus `user_access`
 * (runtime/access/roles.ts). A client may ask only for the scopes it is registered for (as
 * simple_oauth refuses a consumer's unregistered scope); within those, what a token may finally do
 * is decided per request by effectivePermissions, so a scope beyond the user's roles grants
 * nothing extra.
 */
import { OAuthError } from '../errors.ts';
import { isScope, SCOPES } from '../access/roles.ts';
import { registeredScopes, type Client } from './clients.ts';

/**
 * The scope tokens of a `scope` parameter (RFC 6749 §3.3: space-delimited), without duplicates,
 * in the order given; null when the parameter is absent or empty.
 */
export function parseScope(raw: string | undefined): string[] | null {
  if (raw === undefined) return null;
  const tokens = raw.split(' ').filter(Boolean);
  return tokens.length ? [...new Set(tokens)] : null;
}

/**
 * The scopes a request gets: those it names, or else the client's defaults. Unknown scopes, and
 * scopes the client is not registered for, are invalid_scope.
 */
export function resolveScopes(requested: string[] | null, client: Client): string[] {
  const scopes = requested ?? [...client.defaultScopes];
  if (!scopes.length)
    throw new OAuthError(
      'invalid_scope',
      `No scope was requested and the client has no default scope. Scopes are: ${SCOPES.join(', ')}.`,
    );
  const unknown = scopes.filter((s) => !isScope(s));
  if (unknown.length)
    throw new OAuthError(
      'invalid_scope',
      `Unknown scope${unknown.length > 1 ? 's' : ''} ${unknown.map((s) => `"${s}"`).join(', ')}. Scopes are: ${SCOPES.join(', ')}.`,
    );
  const allowed = registeredScopes(client);
  const beyond = scopes.filter((s) => !allowed.includes(s));
  if (beyond.length) {
    throw new OAuthError(
      'invalid_scope',
      `The client ${client.clientId} is not registered for the scope ${beyond.map((s) => `"${s}"`).join(', ')}; it may ask for: ${allowed.join(', ')}.`,
    );
  }
  return scopes;
}

/** A refresh may keep or narrow the original scopes, never widen them (RFC 6749 §6). */
export function narrowScopes(requested: string[] | null, granted: readonly string[]): string[] {
  if (!requested) return [...granted];
  const wider = requested.filter((s) => !granted.includes(s));
  if (wider.length)
    throw new OAuthError(
      'invalid_scope',
      `The refresh token was not granted the scope ${wider.map((s) => `"${s}"`).join(', ')}; a refresh may only keep or narrow the scope.`,
    );
  return requested;
}

/** The `scope` member of a token response, and the stored form: space-delimited. */
export function formatScope(scopes: readonly string[]): string {
  return scopes.join(' ');
}
