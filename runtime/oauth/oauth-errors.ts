/**
 * oauth2orize reports protocol errors as its own TokenError and AuthorizationError, with
 * statuses of an older draft (invalid_grant 403, unsupported_grant_type 501). They become the
 * error catalogue's OAuthError here, which carries RFC 6749's statuses.
 */
import oauth2orize from 'oauth2orize';
import { OAuthError, type OAuthErrorCode } from '../errors.ts';

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

/** The OAuthError an error stands for, or null when it is not a protocol error (a bug, a database failure). */
export function asOAuthError(error: unknown): OAuthError | null {
  if (error instanceof OAuthError) return error;
  if (error instanceof oauth2orize.OAuth2Error) {
    const code = CODES.has(error.code) ? (error.code as OAuthErrorCode) : 'invalid_request';
    return new OAuthError(code, error.message);
  }
  return null;
}
