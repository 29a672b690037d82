/**
 * The oauth2orize server: which response types /oauth/authorize answers and which grants
 * /oauth/token exchanges: every grant of the registry (grants/index.ts), registered in a loop. Authorization requests are parsed
 * by one parser for every response type (authorize-request.ts), so that an unsupported type is
 * still reported to a valid client's redirect URI.
 */
import oauth2orize, { type OAuth2Server } from 'oauth2orize';
import type { Client } from './clients.ts';
import type { UserAccount } from '../accounts/users.ts';
import { parseAuthorizeRequest } from './authorize-request.ts';
import { DatabaseTransactionStore } from './transactions.ts';
import { GRANTS } from './grants/index.ts';
import type { OAuthDeps } from './deps.ts';

/** What oauth2orize's grant factories really return (its typings call it a middleware). */
interface GrantModule {
  name: string;
  response: (...args: unknown[]) => void;
}

/** An oauth2orize server with every response type and grant of Tilth registered. */
export function createAuthorizationServer(deps: OAuthDeps): OAuth2Server<Client, UserAccount> {
  const server = oauth2orize.createServer<Client, UserAccount>({
    store: new DatabaseTransactionStore(deps.ctx.db.knex),
  });

  server.grant('*', parseAuthorizeRequest as never);
  for (const definition of GRANTS) {
    if ('authorize' in definition) {
      // Only the response phase: requests are parsed above, errors answered by authorize.ts.
      const grant = definition.authorize.grant(deps) as unknown as GrantModule;
      server.grant(grant.name, { response: grant.response } as never);
    }
    if ('exchange' in definition) server.exchange(definition.type, definition.exchange(deps) as never);
  }
  return server;
}
