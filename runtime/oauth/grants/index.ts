/**
 * The registry of grants: add a grant by writing its module and listing it here. The server
 * registers each with oauth2orize in a loop (authorization-server.ts); the lists of grant types
 * and of the parameters the OAuth endpoints read are derived from this one.
 */
import { authorizationCodeGrant } from './authorization-code.ts';
import { implicitGrant } from './implicit.ts';
import { passwordGrant } from './password.ts';
import { clientCredentialsGrant } from './client-credentials.ts';
import { refreshTokenGrant } from './refresh-token.ts';

export { allowsGrant, type GrantDefinition } from './grant.ts';

export const GRANTS = [
  authorizationCodeGrant,
  implicitGrant,
  passwordGrant,
  clientCredentialsGrant,
  refreshTokenGrant,
] as const;

/** Grant types a client may be allowed. */
export type GrantType = (typeof GRANTS)[number]['type'];
export const GRANT_TYPES: readonly GrantType[] = GRANTS.map((g) => g.type);

/** Grant types of the token endpoint (the implicit grant lives at /oauth/authorize). */
export const TOKEN_GRANT_TYPES: readonly GrantType[] = GRANTS.filter((g) => 'exchange' in g && g.exchange).map(
  (g) => g.type,
);

/** Parameters some grant reads. */
export const GRANT_PARAMETERS: ReadonlySet<string> = new Set(GRANTS.flatMap((g) => g.parameters));

export function isGrantType(value: string): value is GrantType {
  return (GRANT_TYPES as readonly string[]).includes(value);
}
