/**
 * POST /oauth/token as a short list of named steps, each of which may fail with an OAuthError:
 * no caching, rate limit, form body, grant type, client authentication, the client's right to the
 * grant, then the grant itself (grants/*.ts through oauth2orize's exchanges). The app's error
 * handler renders failures as `{error, error_description}` with RFC 6749's statuses.
 */
import type { ErrorRequestHandler, NextFunction, Request, RequestHandler, Response } from 'express';
import type { OAuth2Server } from 'oauth2orize';
import { OAuthError } from '../errors.ts';
import { allowsGrant, TOKEN_GRANT_TYPES } from './grants/index.ts';
import { clientAuthentication } from './client-auth.ts';
import { formBody } from './form.ts';
import { limitAddresses, type Limiters } from './rate-limit.ts';
import { clientAddress } from '../access/client-address.ts';
import { oauthErrors } from './oauth-errors.ts';
import { tokenStore } from './tokens.ts';
import type { OAuthDeps } from './deps.ts';

/** Responses carrying credentials or answering for them are never cached (RFC 6749 §5.1). */
export function noStore(_req: Request, res: Response, next: NextFunction): void {
  res.set({ 'Cache-Control': 'no-store', Pragma: 'no-cache' });
  next();
}

function checkGrantType(req: Request, _res: Response, next: NextFunction): void {
  const type = (req.body as Record<string, string>).grant_type;
  if (!type)
    return next(
      new OAuthError(
        'invalid_request',
        `The request has no grant_type. Grant types are: ${TOKEN_GRANT_TYPES.join(', ')}.`,
      ),
    );
  if (!(TOKEN_GRANT_TYPES as readonly string[]).includes(type)) {
    return next(
      new OAuthError(
        'unsupported_grant_type',
        `The grant type "${type}" is not supported. Grant types are: ${TOKEN_GRANT_TYPES.join(', ')}.`,
      ),
    );
  }
  next();
}

function checkClientMayUseGrant(req: Request, res: Response, next: NextFunction): void {
  const client = res.locals.client!;
  const type = (req.body as Record<string, string>).grant_type!;
  if (!allowsGrant(client, type))
    return next(new OAuthError('unauthorized_client', `The client ${client.clientId} may not use the ${type} grant.`));
  next();
}

/**
 * The client's address, where oauth2orize hands it to a grant (`req.authInfo`, its seventh
 * argument): the password grant gives an address the account signed in from its own allowance.
 */
function addressInfo(limiters: Limiters): RequestHandler {
  return (req, _res, next) => {
    (req as Request & { authInfo?: TokenRequestInfo }).authInfo = { address: clientAddress(req, limiters.trustProxy) };
    next();
  };
}

/** What a grant learns of the request besides its form (see addressInfo). */
export interface TokenRequestInfo {
  address: string;
}

/** Expired tokens, codes and sessions are deleted now and then, by whichever process is asked first. */
const SWEEP_EVERY_MS = 3_600_000;
/** Expired rows are kept a day: long enough to tell "expired" from "invalid" in a late request. */
const SWEEP_GRACE_SECONDS = 86_400;

/** The steps of POST /oauth/token, in order. */
export function tokenEndpoint(deps: OAuthDeps, server: OAuth2Server): Array<RequestHandler | ErrorRequestHandler> {
  const db = deps.ctx.db.knex;
  let lastSweep = 0;
  const sweep: RequestHandler = (_req, _res, next) => {
    if (Date.now() - lastSweep > SWEEP_EVERY_MS) {
      lastSweep = Date.now();
      tokenStore(db)
        .sweep(SWEEP_GRACE_SECONDS)
        .catch((err: unknown) => deps.ctx.logger.warn({ err }, 'sweeping expired OAuth tokens failed'));
    }
    next();
  };
  return [
    noStore,
    limitAddresses(deps.limiters),
    addressInfo(deps.limiters),
    formBody(deps.ctx.bodies),
    checkGrantType,
    clientAuthentication(db),
    checkClientMayUseGrant,
    sweep,
    server.token() as unknown as RequestHandler,
    oauthErrors(deps),
  ];
}
