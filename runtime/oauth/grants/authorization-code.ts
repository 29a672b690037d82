/**
 * The authorization code grant (RFC 6749 §4.1) with PKCE (RFC 7636, S256 only): the code issued
 * when the user allows a request on the consent page, and its exchange at the token endpoint.
 *
 * A code is single-use and lives config.authorizationCodeLifetime seconds. Presenting a used code
 * again revokes the tokens issued for it (RFC 6749 §4.1.2): someone else holds the code.
 */
import oauth2orize, { type ExchangeDoneFunction, type IssueGrantCodeDoneFunction, type OAuth2Req } from 'oauth2orize';
import { OAuthError } from '../../errors.ts';
import { findUser } from '../../accounts/users.ts';
import type { UserAccount } from '../../accounts/users.ts';
import type { Client } from '../clients.ts';
import { allowsGrant, type GrantDefinition } from './grant.ts';
import { newChainId, tokenStore } from '../tokens.ts';
import { issueTokens, respondWith, type IssuedTokens } from '../issue.ts';
import { constantTimeEqual, PKCE_VALUE, pkceS256 } from '../secrets.ts';
import type { AuthorizeRequest } from '../authorize-request.ts';
import type { OAuthDeps } from '../deps.ts';
import { write } from '../../storage/transactions.ts';

/** oauth2orize grant module issuing codes for response_type=code. */
export function codeGrant({ ctx }: OAuthDeps) {
  return oauth2orize.grant.code<Client, UserAccount>(
    (client, redirectUri, user, _ares, oauthReq: OAuth2Req, done: IssueGrantCodeDoneFunction) => {
      const areq = oauthReq as unknown as AuthorizeRequest;
      tokenStore(ctx.db.knex)
        .issueCode(
          {
            chainId: newChainId(),
            clientRowId: client.id,
            userId: user.id,
            scopes: areq.scopes,
            redirectUri,
            redirectUriGiven: areq.redirectUriGiven,
            codeChallenge: areq.codeChallenge ?? null,
            codeChallengeMethod: areq.codeChallenge ? 'S256' : null,
          },
          ctx.config.authorizationCodeLifetime,
        )
        .then((code) => done(null, code), done);
    },
  );
}

/** The token endpoint's exchange of a code for tokens. */
export function authorizationCodeExchange({ ctx }: OAuthDeps) {
  const knex = ctx.db.knex;
  return oauth2orize.exchange.authorizationCode(
    {},
    (
      client: Client,
      code: string,
      redirectUri: string | undefined,
      form: Record<string, unknown>,
      done: ExchangeDoneFunction,
    ) =>
      respondWith(done, async () => {
        // Revoking after a replay must be committed although the request fails, so the transaction
        // returns the failure and it is thrown after the commit.
        const outcome = await write(knex, async (trx): Promise<IssuedTokens | OAuthError> => {
          const store = tokenStore(trx);
          const record = await store.findCode(code);
          if (!record) return new OAuthError('invalid_grant', 'The authorization code is invalid.');
          if (record.clientRowId !== client.id)
            return new OAuthError('invalid_grant', 'The authorization code was issued to another client.');
          if (record.used !== null || !(await store.markCodeUsed(record.id))) {
            await store.revokeChain(record.chainId);
            return new OAuthError(
              'invalid_grant',
              'The authorization code was already used; the tokens issued for it are revoked.',
            );
          }
          if (record.expires <= Math.floor(Date.now() / 1000))
            return new OAuthError('invalid_grant', 'The authorization code expired.');
          if ((record.redirectUriGiven || redirectUri !== undefined) && redirectUri !== record.redirectUri) {
            return new OAuthError(
              'invalid_grant',
              'The redirect_uri differs from the one of the authorization request.',
            );
          }
          const pkce = checkPkce(record.codeChallenge, form.code_verifier as string | undefined);
          if (pkce) return pkce;
          const user = await findUser(trx, { id: record.userId });
          if (!user || !user.status) return new OAuthError('invalid_grant', 'The user account is blocked.');
          const grant = { chainId: record.chainId, clientRowId: client.id, userId: user.id, scopes: record.scopes };
          return issueTokens(store, ctx, grant, {
            clientId: client.clientId,
            withRefresh: allowsGrant(client, 'refresh_token'),
          });
        });
        if (outcome instanceof OAuthError) throw outcome;
        return outcome;
      }),
  );
}

/** RFC 7636 §4.6. A verifier without a challenge is refused too, so that PKCE cannot be stripped from a request. */
function checkPkce(challenge: string | null, verifier: string | undefined): OAuthError | null {
  if (!challenge) {
    return verifier === undefined
      ? null
      : new OAuthError(
          'invalid_grant',
          'A code_verifier was sent, but the authorization request had no code_challenge.',
        );
  }
  if (verifier === undefined)
    return new OAuthError('invalid_grant', 'The authorization request had a code_challenge: send its code_verifier.');
  if (!PKCE_VALUE.test(verifier) || !constantTimeEqual(pkceS256(verifier), challenge))
    return new OAuthError('invalid_grant', 'The code_verifier does not match the code_challenge.');
  return null;
}

/** response_type=code at /oauth/authorize, exchanged with grant_type=authorization_code at /oauth/token. */
export const authorizationCodeGrant = {
  type: 'authorization_code',
  parameters: ['code', 'redirect_uri', 'code_verifier'],
  exchange: authorizationCodeExchange,
  authorize: { responseType: 'code', grant: codeGrant },
} as const satisfies GrantDefinition;
