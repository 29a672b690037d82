/** GET /.well-known/oauth-authorization-server: authorization server metadata (RFC 8414). */
import type { Request, Response } from 'express';
import { SCOPES } from '../access/roles.ts';
import { GRANTS, TOKEN_GRANT_TYPES } from './grants/index.ts';

/** The metadata document of this server, built once. */
export function metadataHandler(baseUrl: string) {
  const metadata = {
    issuer: baseUrl,
    authorization_endpoint: `${baseUrl}/oauth/authorize`,
    token_endpoint: `${baseUrl}/oauth/token`,
    revocation_endpoint: `${baseUrl}/oauth/revoke`,
    scopes_supported: [...SCOPES],
    response_types_supported: GRANTS.flatMap((g) => ('authorize' in g ? [g.authorize.responseType] : [])),
    response_modes_supported: ['query', 'fragment'],
    grant_types_supported: [...TOKEN_GRANT_TYPES, ...GRANTS.filter((g) => !('exchange' in g)).map((g) => g.type)],
    token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post', 'none'],
    revocation_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post', 'none'],
    code_challenge_methods_supported: ['S256'],
  };
  const body = JSON.stringify(metadata);
  return (_req: Request, res: Response): void => {
    res.set('Cache-Control', 'public, max-age=3600').type('application/json').send(body);
  };
}
