/**
 * The client credentials grant (RFC 6749 §4.4) for confidential clients. Its tokens act as the
 * user the client was registered with: the token's scopes intersected with that user's roles
 * (simple_oauth's rule, farmos-behaviour.md §6.3). No refresh token is issued (§4.4.3): the client
 * can always ask again.
 */
import oauth2orize, { type ExchangeDoneFunction } from 'oauth2orize';
import { OAuthError } from '../../errors.ts';
import { findUser } from '../../accounts/users.ts';
import type { Client } from '../clients.ts';
import { parseScope, resolveScopes } from '../scopes.ts';
import { newChainId, tokenStore } from '../tokens.ts';
import { issueTokens, respondWith } from '../issue.ts';
import type { OAuthDeps } from '../deps.ts';
import type { GrantDefinition } from './grant.ts';
import { write } from '../../storage/transactions.ts';

/** oauth2orize exchange for grant_type=client_credentials. */
export function clientCredentialsExchange({ ctx }: OAuthDeps) {
  const knex = ctx.db.knex;
  return oauth2orize.exchange.clientCredentials(
    {},
    (client: Client, _scope: string[], body: Record<string, string>, done: ExchangeDoneFunction) =>
      respondWith(done, async () => {
        if (!client.confidential)
          throw new OAuthError('unauthorized_client', 'The client_credentials grant is only for confidential clients.');
        const scopes = resolveScopes(parseScope(body.scope), client);
        return write(knex, async (trx) => {
          const user = client.userId === null ? null : await findUser(trx, { id: client.userId });
          if (!user)
            throw new OAuthError('invalid_grant', 'The client has no user to act as; register it again with --user.');
          if (!user.status) throw new OAuthError('invalid_grant', `The user the client acts as is blocked.`);
          return issueTokens(
            tokenStore(trx),
            ctx,
            { chainId: newChainId(), clientRowId: client.id, userId: user.id, scopes },
            { clientId: client.clientId, withRefresh: false },
          );
        });
      }),
  );
}

export const clientCredentialsGrant = {
  type: 'client_credentials',
  parameters: [],
  exchange: clientCredentialsExchange,
} as const satisfies GrantDefinition;
