/**
 * What every grant ends with: the tokens of a chain, stored, and the members of the token
 * response besides access_token and refresh_token (RFC 6749 §5.1). `scope` is always the granted
 * scope, which is the requested one whenever a scope was requested: farmOS.py (oauthlib) fails
 * with "Scope has changed" otherwise.
 */
import type { ExchangeDoneFunction } from 'oauth2orize';
import type { Config } from '../config.ts';
import type { Grant, TokenStore } from './tokens.ts';
import { formatScope } from './scopes.ts';

export interface TokenResponseParams {
  expires_in: number;
  scope: string;
}

export interface IssuedTokens {
  accessToken: string;
  refreshToken: string | undefined;
  params: TokenResponseParams;
}

/** Store an access token (and a refresh token when `withRefresh`) for the grant. */
export async function issueTokens(
  store: TokenStore,
  config: Config,
  grant: Grant,
  { withRefresh }: { withRefresh: boolean },
): Promise<IssuedTokens> {
  const accessToken = await store.issueAccessToken(grant, config.accessTokenLifetime);
  const refreshToken = withRefresh ? await store.issueRefreshToken(grant, config.refreshTokenLifetime) : undefined;
  return {
    accessToken,
    refreshToken,
    params: { expires_in: config.accessTokenLifetime, scope: formatScope(grant.scopes) },
  };
}

/** Run an async grant step and report its outcome to oauth2orize's callback. */
export function respondWith(done: ExchangeDoneFunction, work: () => Promise<IssuedTokens>): void {
  work().then(
    (t) => done(null, t.accessToken, t.refreshToken, t.params),
    (error: Error) => done(error),
  );
}
