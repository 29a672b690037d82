/**
 * Bearer authentication of the API (RFC 6750) with passport-http-bearer: the access token of the
 * Authorization header becomes the request's Principal. A request without an Authorization
 * header stays anonymous, and the API decides where that is enough (GET /api, the schemas). Any
 * Authorization header that does not carry a live token is refused with 401, a JSON:API error
 * document and a `WWW-Authenticate: Bearer` challenge: an unknown, expired or revoked token, a
 * token of a blocked user, and farmOS.js's `Bearer undefined` before it has a token.
 */
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import passport from 'passport';
import { Strategy as BearerStrategy } from 'passport-http-bearer';
import type { Knex } from 'knex';
import { ApiError, unauthorized } from '../errors.ts';
import { effectivePermissions, isRole } from '../access/roles.ts';
import { hashSecret } from './secrets.ts';
import { isPostgres, selectRows } from '../storage/sql.ts';
import { setPrincipal, type Principal } from '../access/principal.ts';

const REALM = 'tilth';

/** Why a token was refused: the error_description of the challenge. No quotes or backslashes (RFC 6750 §3). */
const REFUSED = {
  unknown: 'The access token is invalid.',
  expired: 'The access token expired.',
  revoked: 'The access token was revoked.',
  blocked: 'The user of the access token is blocked.',
} as const;

function challenge(error: string, description?: string): string {
  return `Bearer realm="${REALM}", error="${error}"${description ? `, error_description="${description}"` : ''}`;
}

interface TokenRow {
  chain_id: string;
  public_client_id: string;
  scopes: string;
  expires: number | string;
  revoked: number | string | null;
  user_id: number | null;
  user_uuid: string | null;
  user_name: string | null;
  user_status: unknown;
  roles: string | null;
}

/** SQL by dialect: the token, its client, its user and the user's roles in one statement (it runs on every request). */
const TOKEN_SQL = (aggregate: string) =>
  `SELECT t.chain_id, c.client_id AS public_client_id, t.scopes, t.expires, t.revoked,
          u.id AS user_id, u.uuid AS user_uuid, u.name AS user_name, u.status AS user_status,
          (SELECT ${aggregate} FROM user_role r WHERE r.user_id = u.id) AS roles
     FROM oauth_access_tokens t
     JOIN oauth_clients c ON c.id = t.client_id
     LEFT JOIN users u ON u.id = t.user_id
    WHERE t.token_hash = ?`;
const SQLITE_TOKEN_SQL = TOKEN_SQL("group_concat(r.role, ' ')");
const POSTGRES_TOKEN_SQL = TOKEN_SQL("string_agg(r.role, ' ')");

async function readToken(db: Knex, token: string): Promise<TokenRow | undefined> {
  return (await selectRows<TokenRow>(db, isPostgres(db) ? POSTGRES_TOKEN_SQL : SQLITE_TOKEN_SQL, [hashSecret(token)]))[0];
}

/** The principal an access token stands for, or why it is refused. */
export async function principalOfToken(db: Knex, token: string): Promise<Principal | keyof typeof REFUSED> {
  const row = await readToken(db, token);
  if (!row) return 'unknown';
  if (row.revoked !== null) return 'revoked';
  if (Number(row.expires) <= Math.floor(Date.now() / 1000)) return 'expired';
  // The user is read on every request: blocking a user or changing their roles takes effect at once.
  if (row.user_id === null || !row.user_status || row.user_status === '0' || row.user_status === 'false') return 'blocked';
  const roles = (row.roles ?? '').split(' ').filter(isRole).sort();
  const scopes = row.scopes.split(' ').filter(Boolean);
  return {
    userId: Number(row.user_id),
    userUuid: row.user_uuid!,
    userName: row.user_name!,
    roles,
    scopes,
    clientId: row.public_client_id,
    tokenChainId: row.chain_id,
    permissions: effectivePermissions(roles, scopes),
  };
}

/** Middleware setting the request's principal from its bearer token, or failing with 401 (400 for a malformed header). */
export function bearerAuthentication(db: Knex): RequestHandler {
  // Why the strategy refused a request's token, for the callback to explain.
  const refusals = new WeakMap<Request, keyof typeof REFUSED>();
  // A private Passport instance: nothing global, no sessions.
  const authenticator = new passport.Passport();
  authenticator.use(
    new BearerStrategy({ realm: REALM, passReqToCallback: true }, (req: Request, token: string, done: (error: unknown, user?: Principal | false) => void) => {
      principalOfToken(db, token).then((result) => {
        if (typeof result !== 'string') return done(null, result);
        refusals.set(req, result);
        done(null, false);
      }, done);
    }),
  );

  return (req: Request, res: Response, next: NextFunction) => {
    if (req.headers.authorization === undefined) return next();
    authenticator.authenticate('bearer', { session: false }, (error: unknown, principal: Principal | false, _challenge: unknown, status: unknown) => {
      if (error) return next(error);
      if (principal) {
        setPrincipal(res, principal);
        return next();
      }
      const refusal = refusals.get(req);
      if (refusal) res.locals.log?.warn({ reason: refusal }, 'refused access token');
      if (refusal) return next(unauthorized(REFUSED[refusal], challenge('invalid_token', REFUSED[refusal])));
      // passport-http-bearer fails with status 400 for a header that is not "<scheme> <credentials>".
      if (status === 400) {
        return next(new ApiError(400, 'The Authorization header is malformed: send "Authorization: Bearer <access token>".', { headers: { 'WWW-Authenticate': challenge('invalid_request') } }));
      }
      // Another scheme (e.g. Basic): this API knows bearer tokens only.
      return next(unauthorized('This API accepts OAuth 2.0 bearer tokens only: send "Authorization: Bearer <access token>".', `Bearer realm="${REALM}"`));
    })(req, res, next);
  };
}
