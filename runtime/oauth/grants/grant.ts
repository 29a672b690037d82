/**
 * What a grant module exports (one per file under grants/): its type, the parameters it reads,
 * and its handler: an exchange at /oauth/token, or a response type at /oauth/authorize. The
 * registry (grants/index.ts) lists the modules; everything else (the token endpoint's check, the
 * client's allowed grants, the form parser's known parameters, the metadata document) is derived
 * from it.
 */
import type { OAuthDeps } from '../deps.ts';

export interface GrantDefinition<Type extends string = string> {
  type: Type;
  /** Parameters of the request this grant reads, beyond the common ones (grant_type, client_id, client_secret, scope). */
  parameters: readonly string[];
  /** The token endpoint's exchange (an oauth2orize exchange middleware), for grants issued there. */
  exchange?: (deps: OAuthDeps) => unknown;
  /** The authorization endpoint's response type and its oauth2orize grant module, for grants issued there. */
  authorize?: { responseType: 'code' | 'token'; grant: (deps: OAuthDeps) => unknown };
}

/** Whether a client (anything with a list of grant types) may use a grant. */
export function allowsGrant(client: { grantTypes: readonly string[] }, grant: string): boolean {
  return client.grantTypes.includes(grant);
}
