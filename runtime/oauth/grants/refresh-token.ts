/**
 * The refresh token grant (RFC 6749 §6) with rotation: a refresh returns a new access and refresh
 * token, and the previous pair stops working at once (the spec's refresh flow, step 3). A refresh
 * token presented after it was rotated is a replay: someone holds a copy, so the whole chain
 * (every token descended from the same grant) is revoked, unless it comes within a few seconds of
 * the rotation (TILTH_REFRESH_REUSE_GRACE), when it is the client racing itself.
 */
import oauth2orize, { type ExchangeDoneFunction } from 'oauth2orize';
import { OAuthError } from '../../errors.ts';
import { findUser } from '../../accounts/users.ts';
import type { Client } from '../clients.ts';
import { narrowScopes, parseScope } from '../scopes.ts';
import { tokenStore } from '../tokens.ts';
import { issueTokens, respondWith, type IssuedTokens } from '../issue.ts';
import type { OAuthDeps } from '../deps.ts';
import type { GrantDefinition } from './grant.ts';
import { write } from '../../storage/transactions.ts';

/** oauth2orize exchange for grant_type=refresh_token. The form body's scope is parsed by scopes.ts, as in password.ts. */
export function refreshTokenExchange({ ctx }: OAuthDeps) {
  const knex = ctx.db.knex;
  /**
   * A rotated refresh token presented again. Within the grace window it is most likely the client
   * racing itself, so it is only refused; later it is a replay, and the whole chain is revoked.
   */
  const reuse = async (
    store: ReturnType<typeof tokenStore>,
    chainId: string,
    rotatedAt: number,
  ): Promise<OAuthError> => {
    if (Math.floor(Date.now() / 1000) - rotatedAt < ctx.config.refreshReuseGraceSeconds) {
      return new OAuthError('invalid_grant', 'The refresh token was just used; use the tokens that refresh returned.');
    }
    await store.revokeChain(chainId);
    return new OAuthError(
      'invalid_grant',
      'The refresh token was already used; every token issued from the same grant is now revoked.',
    );
  };
  return oauth2orize.exchange.refreshToken(
    {},
    (
      client: Client,
      refreshToken: string,
      _scope: string[] | undefined,
      body: Record<string, string>,
      done: ExchangeDoneFunction,
    ) =>
      respondWith(done, async () => {
        // A replay's revocation must be committed although the request fails: the transaction
        // returns the failure, which is thrown after the commit.
        const outcome = await write(knex, async (trx): Promise<IssuedTokens | OAuthError> => {
          const store = tokenStore(trx);
          const record = await store.findRefreshToken(refreshToken);
          if (!record) return new OAuthError('invalid_grant', 'The refresh token is invalid.');
          if (record.clientRowId !== client.id)
            return new OAuthError('invalid_grant', 'The refresh token was issued to another client.');
          if (record.revoked !== null) return new OAuthError('invalid_grant', 'The refresh token was revoked.');
          if (record.rotated !== null) return reuse(store, record.chainId, record.rotated);
          if (record.expires <= Math.floor(Date.now() / 1000))
            return new OAuthError('invalid_grant', 'The refresh token expired.');
          const scopes = narrowScopes(parseScope(body.scope), record.scopes);
          const user = await findUser(trx, { id: record.userId });
          if (!user || !user.status) return new OAuthError('invalid_grant', 'The user account is blocked.');
          // Two refreshes racing with one token: the loser is treated as the replay it looks like.
          if (!(await store.markRotated(record.id))) return reuse(store, record.chainId, Math.floor(Date.now() / 1000));
          await store.revokeAccessTokensOfChain(record.chainId);
          return issueTokens(
            store,
            ctx,
            { chainId: record.chainId, clientRowId: client.id, userId: user.id, scopes },
            { clientId: client.clientId, withRefresh: true },
          );
        });
        if (outcome instanceof OAuthError) throw outcome;
        return outcome;
      }),
  );
}

export const refreshTokenGrant = {
  type: 'refresh_token',
  parameters: ['refresh_token'],
  exchange: refreshTokenExchange,
} as const satisfies GrantDefinition;
