/**
 * Reading and checking a request to /oauth/authorize (RFC 6749 §4.1.1 and §4.2.1, RFC 7636 §4.3).
 *
 * What is wrong with the client or the redirect URI is shown to the user and never redirected
 * (§4.1.2.1: the redirect target cannot be trusted). Everything else is reported to the client by
 * redirecting to its redirect URI with `error` and `state`.
 */
import type { Request } from 'express';
import type { Knex } from 'knex';
import { OAuthError } from '../errors.ts';
import { allowsGrant, DEFAULT_CLIENT_ID, findClient, matchRedirectUri, type Client } from './clients.ts';
import { parseScope, resolveScopes } from './scopes.ts';

/** oauth2orize's parsed authorization request (`areq`), with what validation adds. */
export interface AuthorizeRequest {
  /** response_type, set by oauth2orize. */
  type: string;
  clientID: string;
  /** The redirect URI the response goes to: the one given, or the client's only one. */
  redirectURI?: string;
  /** Whether the request named redirect_uri (the code exchange must then repeat it). */
  redirectUriGiven: boolean;
  scope?: string;
  state?: string;
  codeChallenge?: string;
  codeChallengeMethod?: string;
  /** The scopes granted if the user allows: those requested or the client's defaults. */
  scopes: string[];
}

/** A failure of validation, with the client and redirect URI when the failure may be redirected. */
export class AuthorizeRequestError extends Error {
  constructor(
    readonly error: OAuthError,
    readonly client?: Client,
    readonly redirectUri?: string,
  ) {
    super(error.message);
    this.name = 'AuthorizeRequestError';
  }
}

/**
 * The longest value each parameter may have, in characters. Real ones are far shorter; the limits
 * keep a request waiting on the consent page (transactions.ts) to a few kilobytes. client_id and
 * redirect_uri are checked before anything is redirected, so theirs are shown to the user; the
 * others are invalid_request sent to the client.
 */
export const PARAMETER_LIMITS = {
  client_id: 255,
  redirect_uri: 2048,
  state: 2048,
  scope: 1024,
  code_challenge: 128,
  code_challenge_method: 32,
} as const;

const tooLong = (name: keyof typeof PARAMETER_LIMITS) =>
  `The ${name} parameter is longer than ${PARAMETER_LIMITS[name]} characters.`;

/** An S256 code challenge: a base64url SHA-256 digest, 43 characters. */
const S256_CHALLENGE = /^[A-Za-z0-9_-]{43}$/;

/** oauth2orize request parser for every response type (its query was parsed by authorize.ts). */
export function parseAuthorizeRequest(req: Request): Partial<AuthorizeRequest> {
  const q = req.query as Record<string, string | undefined>;
  if (!q.client_id) throw new OAuthError('invalid_request', 'The request has no client_id.');
  return {
    clientID: q.client_id,
    redirectURI: q.redirect_uri,
    redirectUriGiven: q.redirect_uri !== undefined,
    scope: q.scope,
    state: q.state,
    codeChallenge: q.code_challenge,
    codeChallengeMethod: q.code_challenge_method,
  };
}

/** Check a parsed request; returns the client and the redirect URI, or throws AuthorizeRequestError. */
export async function validateAuthorizeRequest(
  db: Knex,
  areq: AuthorizeRequest,
  options: { farmClientRequiresPkce: boolean },
): Promise<{ client: Client; redirectUri: string }> {
  if (areq.clientID.length > PARAMETER_LIMITS.client_id)
    throw new AuthorizeRequestError(new OAuthError('invalid_request', tooLong('client_id')));
  const client = await findClient(db, areq.clientID);
  if (!client)
    throw new AuthorizeRequestError(new OAuthError('invalid_request', `There is no client "${areq.clientID}".`));

  let redirectUri: string | null;
  if (areq.redirectURI !== undefined && areq.redirectURI.length > PARAMETER_LIMITS.redirect_uri) {
    throw new AuthorizeRequestError(new OAuthError('invalid_request', tooLong('redirect_uri')));
  } else if (areq.redirectURI !== undefined) {
    redirectUri = matchRedirectUri(client, areq.redirectURI);
    if (!redirectUri)
      throw new AuthorizeRequestError(
        new OAuthError(
          'invalid_request',
          `The redirect_uri "${areq.redirectURI}" is not registered for the client ${client.label}.`,
        ),
      );
  } else if (client.redirectUris.length === 1) {
    redirectUri = client.redirectUris[0]!;
  } else {
    throw new AuthorizeRequestError(
      new OAuthError(
        'invalid_request',
        `The client ${client.label} has several redirect URIs: the request must name one with redirect_uri.`,
      ),
    );
  }
  areq.redirectURI = redirectUri;
  const fail = (code: ConstructorParameters<typeof OAuthError>[0], description: string) =>
    new AuthorizeRequestError(new OAuthError(code, description), client, redirectUri);

  if (areq.state !== undefined && areq.state.length > PARAMETER_LIMITS.state) {
    // Not sent back: the error would carry it to the client, as long as it came.
    delete areq.state;
    throw fail('invalid_request', tooLong('state'));
  }
  for (const [name, value] of [
    ['scope', areq.scope],
    ['code_challenge', areq.codeChallenge],
    ['code_challenge_method', areq.codeChallengeMethod],
  ] as const) {
    if (value !== undefined && value.length > PARAMETER_LIMITS[name]) throw fail('invalid_request', tooLong(name));
  }

  if (areq.type !== 'code' && areq.type !== 'token')
    throw fail(
      'unsupported_response_type',
      `The response_type "${areq.type}" is not supported: use code (or token for the implicit grant).`,
    );
  const grant = areq.type === 'code' ? 'authorization_code' : 'implicit';
  if (!allowsGrant(client, grant))
    throw fail('unauthorized_client', `The client ${client.label} may not use the ${grant} grant.`);

  try {
    areq.scopes = resolveScopes(parseScope(areq.scope), client);
  } catch (error) {
    if (error instanceof OAuthError) throw new AuthorizeRequestError(error, client, redirectUri);
    throw error;
  }

  if (areq.type === 'code') {
    if (areq.codeChallenge !== undefined) {
      if (areq.codeChallengeMethod !== 'S256')
        throw fail(
          'invalid_request',
          'Only the S256 code_challenge_method is supported; send code_challenge_method=S256.',
        );
      if (!S256_CHALLENGE.test(areq.codeChallenge))
        throw fail('invalid_request', 'The code_challenge is not a base64url SHA-256 digest (43 characters).');
    } else if (areq.codeChallengeMethod !== undefined) {
      throw fail('invalid_request', 'A code_challenge_method was sent without a code_challenge.');
    } else if (!client.confidential && (client.clientId !== DEFAULT_CLIENT_ID || options.farmClientRequiresPkce)) {
      // The default client is exempt unless TILTH_FARM_CLIENT_REQUIRE_PKCE says otherwise: farmOS's
      // is, and scripts written for it send no code_challenge.
      throw fail(
        'invalid_request',
        `The public client ${client.label} must use PKCE: send code_challenge and code_challenge_method=S256.`,
      );
    }
  } else {
    // PKCE protects the code exchange; the implicit grant has none.
    delete areq.codeChallenge;
    delete areq.codeChallengeMethod;
  }
  return { client, redirectUri };
}
