/**
 * Every failure of the token and revocation endpoints in RFC 6749's form (`{error,
 * error_description}`), whatever raised it: oauth2orize's own TokenError and AuthorizationError
 * (statuses of an older draft: invalid_grant 403, unsupported_grant_type 501), the database (busy,
 * full disk: storage/db-errors.ts) and bugs. A client library reads `error` on every answer of
 * these endpoints, so none of them may answer with a JSON:API document.
 */
import type { NextFunction, Request, Response } from 'express';
import oauth2orize from 'oauth2orize';
import { OAuthError, type OAuthErrorCode } from '../errors.ts';
import { fromDatabaseError } from '../storage/db-errors.ts';
import type { OAuthDeps } from './deps.ts';

const CODES = new Set<string>([
  'invalid_request',
  'invalid_client',
  'invalid_grant',
  'unauthorized_client',
  'unsupported_grant_type',
  'invalid_scope',
  'access_denied',
  'unsupported_response_type',
  'unsupported_token_type',
  'server_error',
  'temporarily_unavailable',
]);

/**
 * The OAuthError an error stands for, or null when it is a bug. A database that is busy is
 * `temporarily_unavailable` (503, Retry-After); a full disk is `server_error` with its 507; a
 * write that collided with another keeps its 409 as an `invalid_request` to retry.
 */
export function asOAuthError(error: unknown): OAuthError | null {
  if (error instanceof OAuthError) return error;
  if (error instanceof oauth2orize.OAuth2Error) {
    const code = CODES.has(error.code) ? (error.code as OAuthErrorCode) : 'invalid_request';
    return new OAuthError(code, error.message);
  }
  const db = fromDatabaseError(error);
  if (db) {
    const code: OAuthErrorCode =
      db.status === 503 ? 'temporarily_unavailable' : db.status >= 500 ? 'server_error' : 'invalid_request';
    return new OAuthError(code, db.message, { status: db.status, headers: db.headers });
  }
  return null;
}

/** The last step of an OAuth endpoint: any failure as an OAuthError for the app's error handler; bugs are logged. */
export function oauthErrors(deps: OAuthDeps) {
  return (error: unknown, _req: Request, res: Response, next: NextFunction): void => {
    const oauth = asOAuthError(error);
    // Bugs, and a busy database or a full disk, are the operator's to hear of, as on the API's
    // routes (http/app.ts): often a client's failed refresh is the first sign of a full disk.
    if (!oauth || oauth.status >= 500)
      (res.locals.log ?? deps.ctx.logger).error({ err: error }, 'OAuth request failed');
    next(
      oauth ?? new OAuthError('server_error', 'The server could not complete the request. The error has been logged.'),
    );
  };
}
