/**
 * Every failure of the token and revocation endpoints in RFC 6749's form (`{error,
 * error_description}`), whatever raised it: oauth2orize's own TokenError and AuthorizationError
 * (statuses of an older draft: invalid_grant 403, unsupported_grant_type 501), the database (busy,
 * full disk: storage/db-errors.ts) and bugs. A client library reads `error` on every answer of
 * these endpoints, so none of them may answer with a JSON:API document.
 */
import type { NextFunction, Request, Response } from 'express';
import oauth2orize from 'oauth2orize';
import { databaseFailureDetail, OAuthError, type DatabaseFailureKind, type OAuthErrorCode } from '../errors.ts';
import { classifyDatabaseError } from '../storage/db-errors.ts';
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
  const failure = classifyDatabaseError(error);
  if (failure) {
    const [code, status] = DATABASE_ANSWER[failure.kind];
    const headers: Record<string, string> = status === 503 ? { 'Retry-After': '1' } : {};
    return new OAuthError(code, databaseFailureDetail(failure), { status, headers });
  }
  return null;
}

/**
 * A database failure (storage/db-errors.ts) as this face answers it: the API's status (a taken
 * name 422, a race 409, busy 503, a full disk 507, a failed log sync 500), under the RFC 6749
 * code a client acts on.
 */
const DATABASE_ANSWER: Readonly<Record<DatabaseFailureKind, [OAuthErrorCode, number]>> = {
  taken: ['invalid_request', 422],
  duplicate: ['invalid_request', 409],
  'reference-gone': ['invalid_request', 409],
  collision: ['invalid_request', 409],
  busy: ['temporarily_unavailable', 503],
  'schema-changed': ['temporarily_unavailable', 503],
  'disk-full': ['server_error', 507],
  'wal-sync-failed': ['server_error', 500],
};

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
