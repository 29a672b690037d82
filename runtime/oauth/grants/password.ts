/**
 * The resource owner password credentials grant (RFC 6749 §4.3), for first-party clients such as
 * farmOS.js and farmOS.py with the `farm` client. The user name may also be the e-mail address
 * (farmOS's farm_login). Failed checks count against the account (accounts/password-guard.ts).
 */
import oauth2orize, { type ExchangeDoneFunction } from 'oauth2orize';
import { OAuthError } from '../../errors.ts';
import { recordLogin } from '../../accounts/users.ts';
import type { Client } from '../clients.ts';
import { allowsGrant, type GrantDefinition } from './grant.ts';
import { parseScope, resolveScopes } from '../scopes.ts';
import { newChainId, tokenStore } from '../tokens.ts';
import { issueTokens, respondWith } from '../issue.ts';
import type { OAuthDeps } from '../deps.ts';
import type { TokenRequestInfo } from '../token-endpoint.ts';
import { write } from '../../storage/transactions.ts';

/** oauth2orize exchange for grant_type=password. */
export function passwordExchange({ ctx }: OAuthDeps) {
  const knex = ctx.db.knex;
  // oauth2orize picks the callback form by its arity: seven arguments receive the form body, where
  // the scope is read again (it splits a double space into an empty scope), and req.authInfo, which
  // token-endpoint.ts fills with the client's address. The `{}` options
  // argument is what the typings of that form ask for.
  return oauth2orize.exchange.password(
    {},
    (
      client: Client,
      username: string,
      password: string,
      _scope: string[],
      body: Record<string, string>,
      info: TokenRequestInfo | undefined,
      done: ExchangeDoneFunction,
    ) =>
      respondWith(done, async () => {
        const scopes = resolveScopes(parseScope(body.scope), client);
        const check = await ctx.passwords.login(knex, username, password, info?.address);
        if (check.outcome === 'wait') {
          throw new OAuthError(
            'slow_down',
            `Too many failed logins for this account; try again in ${check.seconds} seconds.`,
            { headers: { 'Retry-After': String(check.seconds) } },
          );
        }
        if (check.outcome === 'wrong') {
          // Who tried is logged by account, never by what was typed: people type passwords into the name field.
          ctx.logger.warn({ client: client.clientId, userId: check.userId }, 'failed sign-in at the token endpoint');
          throw new OAuthError('invalid_grant', 'The user credentials were incorrect.');
        }
        if (check.outcome === 'blocked') throw new OAuthError('invalid_grant', 'The user account is blocked.');
        if (check.outcome === 'busy') {
          throw new OAuthError(
            'temporarily_unavailable',
            'The server is checking as many passwords as it can at once; try again in a moment.',
            { status: 503, headers: { 'Retry-After': String(check.seconds) } },
          );
        }
        const account = check.account;

        return write(knex, async (trx) => {
          await recordLogin(trx, account.id);
          const grant = { chainId: newChainId(), clientRowId: client.id, userId: account.id, scopes };
          return issueTokens(tokenStore(trx), ctx, grant, {
            clientId: client.clientId,
            withRefresh: allowsGrant(client, 'refresh_token'),
          });
        });
      }),
  );
}

export const passwordGrant = {
  type: 'password',
  parameters: ['username', 'password'],
  exchange: passwordExchange,
} as const satisfies GrantDefinition;
