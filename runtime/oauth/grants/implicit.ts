/**
 * The implicit grant (RFC 6749 §4.2): response_type=token at /oauth/authorize returns an access
 * token in the redirect URI's fragment once the user allows. The spec keeps it for 2.x clients;
 * only clients registered with the `implicit` grant may use it, and it never issues a refresh
 * token (§4.2.2).
 */
import oauth2orize from 'oauth2orize';
import type { UserAccount } from '../../accounts/users.ts';
import type { Client } from '../clients.ts';
import { newChainId, tokenStore } from '../tokens.ts';
import { issueTokens } from '../issue.ts';
import { write } from '../../storage/transactions.ts';
import type { AuthorizeRequest } from '../authorize-request.ts';
import type { OAuthDeps } from '../deps.ts';
import type { GrantDefinition } from './grant.ts';

/** oauth2orize grant module issuing access tokens for response_type=token. */
function tokenResponse({ ctx }: OAuthDeps) {
  return oauth2orize.grant.token(
    (
      client: Client,
      user: UserAccount,
      _ares: unknown,
      areq: AuthorizeRequest,
      done: (err: Error | null, token?: string, params?: object) => void,
    ) => {
      write(ctx.db.knex, (trx) =>
        issueTokens(
          tokenStore(trx),
          ctx,
          { chainId: newChainId(), clientRowId: client.id, userId: user.id, scopes: areq.scopes },
          { clientId: client.clientId, withRefresh: false },
        ),
      ).then((t) => done(null, t.accessToken, t.params), done);
    },
  );
}

/** response_type=token at /oauth/authorize; nothing at the token endpoint. */
export const implicitGrant = {
  type: 'implicit',
  parameters: ['redirect_uri'],
  authorize: { responseType: 'token', grant: tokenResponse },
} as const satisfies GrantDefinition;
