/**
 * POST /oauth/revoke (RFC 7009). The client authenticates as at the token endpoint and may
 * revoke only its own tokens. Revoking a refresh token revokes its whole chain, the access tokens
 * included (§2.1); revoking an access token revokes that token. The answer is 200 whether or not
 * the token was known (§2.2), so the endpoint tells nothing about other tokens.
 */
import type { ErrorRequestHandler, NextFunction, Request, RequestHandler, Response } from 'express';
import { OAuthError } from '../errors.ts';
import { clientAuthentication } from './client-auth.ts';
import { formBody } from './form.ts';
import { limitAddresses } from './rate-limit.ts';
import { tokenStore } from './tokens.ts';
import { noStore } from './token-endpoint.ts';
import { oauthErrors } from './oauth-errors.ts';
import type { OAuthDeps } from './deps.ts';
import { write } from '../storage/transactions.ts';

/** The steps of POST /oauth/revoke. */
export function revocationEndpoint(deps: OAuthDeps): Array<RequestHandler | ErrorRequestHandler> {
  const db = deps.ctx.db.knex;
  const revoke = async (req: Request, res: Response, _next: NextFunction) => {
    const client = res.locals.client!;
    const { token, token_type_hint: hint } = req.body as Record<string, string | undefined>;
    if (!token) throw new OAuthError('invalid_request', 'The request has no token to revoke.');
    await write(db, async (trx) => {
      const store = tokenStore(trx);
      // The hint only orders the lookups (§2.1); an unknown hint is ignored.
      const refreshFirst = hint === 'refresh_token';
      const lookups = [
        async () => {
          const r = await store.findRefreshToken(token);
          if (r && r.clientRowId === client.id) await store.revokeChain(r.chainId);
          return Boolean(r);
        },
        async () => {
          const a = await store.findAccessToken(token);
          if (a && a.clientRowId === client.id) await store.revokeAccessToken(a.id);
          return Boolean(a);
        },
      ];
      for (const lookup of refreshFirst ? lookups : lookups.reverse()) if (await lookup()) break;
    });
    res.status(200).end();
  };
  return [
    noStore,
    limitAddresses(deps.limiters),
    formBody(deps.ctx.bodies),
    clientAuthentication(db),
    revoke,
    oauthErrors(deps),
  ];
}
