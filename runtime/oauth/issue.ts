/**
 * What every grant ends with: the tokens of a chain, stored, and the members of the token
 * response besides access_token and refresh_token (RFC 6749 §5.1). `scope` is always the granted
 * scope, which is the requested one whenever a scope was requested: farmOS.py (oauthlib) fails
 * with "Scope has changed" otherwise.
 *
 * The access token is a signed JWT (access-token-jwt.ts), stored as its SHA-256 like every
 * credential; the refresh token stays an opaque random value, as simple_oauth's are opaque to
 * clients (an encrypted payload nobody but the server reads).
 */
import type { ExchangeDoneFunction } from 'oauth2orize';
import type { AppContext } from '../context.ts';
import type { Grant, TokenStore } from './tokens.ts';
import { formatScope } from './scopes.ts';
import { accessTokenKeys } from './access-token-jwt.ts';

export interface TokenResponseParams {
  expires_in: number;
  scope: string;
}

export interface IssuedTokens {
  accessToken: string;
  refreshToken: string | undefined;
  params: TokenResponseParams;
}

/**
 * Sign and store an access token (and store a refresh token when `withRefresh`) for the grant
 * of `clientId` (the client's public id, the token's `aud` and `client_id`).
 */
export async function issueTokens(
  store: TokenStore,
  { config, db }: Pick<AppContext, 'config' | 'db'>,
  grant: Grant,
  { clientId, withRefresh }: { clientId: string; withRefresh: boolean },
): Promise<IssuedTokens> {
  const issuedAt = Math.floor(Date.now() / 1000);
  const expires = issuedAt + config.accessTokenLifetime;
  const keys = await accessTokenKeys(db.knex);
  const accessToken = await keys.sign({
    issuer: config.baseUrl,
    userId: grant.userId,
    clientId,
    scopes: grant.scopes,
    issuedAt,
    expires,
  });
  await store.storeAccessToken(accessToken, grant, issuedAt, expires);
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
