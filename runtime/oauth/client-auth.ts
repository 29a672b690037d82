/**
 * Client authentication at the token and revocation endpoints (RFC 6749 §2.3): HTTP Basic or
 * client_id/client_secret in the body for confidential clients; public clients only name
 * themselves with client_id. farmOS.py sends the public `farm` client as Basic `farm:` (an empty
 * secret), which is a public client naming itself.
 *
 * An `Authorization: Bearer …` header is not client authentication and is ignored: the spec's
 * refresh flow sends one to the token endpoint.
 */
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import type { Knex } from 'knex';
import { OAuthError } from '../errors.ts';
import { findClient, type Client } from './clients.ts';
import { secretMatches } from './secrets.ts';

const BASIC_CHALLENGE = { 'WWW-Authenticate': 'Basic realm="tilth"' };

interface Credentials {
  clientId: string;
  secret: string | null;
  viaBasic: boolean;
}

/** RFC 6749 §2.3.1: the id and secret are form-urlencoded before Basic encoding. */
function formDecode(value: string): string {
  try {
    return decodeURIComponent(value.replace(/\+/g, ' '));
  } catch {
    throw new OAuthError(
      'invalid_client',
      'The client credentials in the Authorization header are not correctly encoded.',
      { headers: BASIC_CHALLENGE },
    );
  }
}

function readCredentials(req: Request): Credentials | null {
  const body = (req.body ?? {}) as Record<string, string | undefined>;
  const header = req.headers.authorization;
  const basic = header && /^Basic\s+(.+)$/i.exec(header.trim());
  if (basic) {
    const decoded = Buffer.from(basic[1]!, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (colon < 1)
      throw new OAuthError('invalid_client', 'The Authorization header does not hold client_id:client_secret.', {
        headers: BASIC_CHALLENGE,
      });
    const clientId = formDecode(decoded.slice(0, colon));
    const secret = formDecode(decoded.slice(colon + 1));
    if (body.client_secret !== undefined)
      throw new OAuthError(
        'invalid_request',
        'The client authenticated with both HTTP Basic and client_secret; use one method.',
      );
    if (body.client_id !== undefined && body.client_id !== clientId)
      throw new OAuthError(
        'invalid_request',
        'The client_id in the body differs from the one in the Authorization header.',
      );
    return { clientId, secret: secret || null, viaBasic: true };
  }
  if (!body.client_id) return null;
  return { clientId: body.client_id, secret: body.client_secret || null, viaBasic: false };
}

/**
 * Authenticate the client of a request. Throws invalid_client (401; with a Basic challenge when
 * the client tried Basic) for a missing, unknown or wrongly authenticated client.
 */
export async function authenticateClient(db: Knex, req: Request): Promise<Client> {
  const credentials = readCredentials(req);
  if (!credentials)
    throw new OAuthError(
      'invalid_client',
      'The request names no client: send client_id (and client_secret for a confidential client), or use HTTP Basic.',
    );
  const fail = (description: string) =>
    new OAuthError('invalid_client', description, credentials.viaBasic ? { headers: BASIC_CHALLENGE } : {});
  const client = await findClient(db, credentials.clientId);
  // Client ids are not secrets (public clients publish theirs), so saying "unknown" gives nothing away.
  if (!client) throw fail('Client authentication failed: unknown client.');
  if (client.confidential) {
    if (!credentials.secret || !client.secretHash || !secretMatches(credentials.secret, client.secretHash)) {
      throw fail('Client authentication failed: a confidential client must send its correct secret.');
    }
  }
  // A public client has no secret; whatever it sends as one (farmOS.py: an empty one) is ignored.
  return client;
}

/** Middleware form: the authenticated client becomes req.user, where oauth2orize's exchanges read it. */
export function clientAuthentication(db: Knex): RequestHandler {
  return async (req: Request, res: Response, next: NextFunction) => {
    const client = await authenticateClient(db, req);
    (req as Request & { user?: unknown }).user = client;
    res.locals.client = client;
    next();
  };
}
