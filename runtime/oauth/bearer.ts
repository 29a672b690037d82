/**
 * Bearer authentication of the API (RFC 6750): the access token of the
 * Authorization header becomes the request's Principal. A request without an Authorization
 * header stays anonymous, and the API decides where that is enough (GET /api, the schemas). Any
 * Authorization header that does not carry a live token is refused with 401, a JSON:API error
 * document and a `WWW-Authenticate: Bearer` challenge: an unknown, expired or revoked token, a
 * token of a blocked user, and farmOS.js's `Bearer undefined` before it has a token.
 */
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import type { Knex } from 'knex';
import { ApiError, unauthorized } from '../errors.ts';
import { effectivePermissions, isRole } from '../access/roles.ts';
import { hashSecret } from './secrets.ts';
import { isPostgres, selectRows } from '../storage/sql.ts';
import { ChangeCache } from '../storage/change-cache.ts';
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

async function readToken(db: Knex, tokenHash: string): Promise<TokenRow | undefined> {
  return (await selectRows<TokenRow>(db, isPostgres(db) ? POSTGRES_TOKEN_SQL : SQLITE_TOKEN_SQL, [tokenHash]))[0];
}

/** A live token's principal and when the token expires (seconds). */
interface LiveToken {
  principal: Principal;
  expires: number;
}

/** Most principals kept; the oldest go first. */
const MAX_CACHED = 10_000;

/*
 * The principals of the live tokens used since the database last changed (storage/change-cache.ts).
 * A token's statement was the dearest part of a small request (a sixth of `GET /api`'s time).
 * A revoked token, a blocked user or a role taken away empties the cache through the commit that
 * made the change. Expiry is checked on every use. Refused tokens are never kept.
 */
/** Whether a token that expires at `expires` (seconds) has expired. */
function isExpired(expires: number): boolean {
  return expires <= Math.floor(Date.now() / 1000);
}

/** The principal of a token's row, or why it is refused. */
function principalOfRow(row: TokenRow | undefined): LiveToken | keyof typeof REFUSED {
  if (!row) return 'unknown';
  if (row.revoked !== null) return 'revoked';
  const expires = Number(row.expires);
  if (isExpired(expires)) return 'expired';
  // The user is read with the token: blocking a user or changing their roles takes effect at once.
  if (row.user_id === null || !row.user_status || row.user_status === '0' || row.user_status === 'false') return 'blocked';
  const roles = (row.roles ?? '').split(' ').filter(isRole).sort();
  const scopes = row.scopes.split(' ').filter(Boolean);
  const principal: Principal = Object.freeze({
    userId: Number(row.user_id),
    userUuid: row.user_uuid!,
    userName: row.user_name!,
    roles: Object.freeze(roles),
    scopes: Object.freeze(scopes),
    clientId: row.public_client_id,
    tokenChainId: row.chain_id,
    permissions: effectivePermissions(roles, scopes),
  });
  return { principal, expires };
}

/** Reads tokens' principals, through a cache where the database can say it has not changed. */
export class TokenReader {
  private readonly cache = new ChangeCache<LiveToken>(MAX_CACHED);

  constructor(private readonly db: Knex) {}

  /**
   * The principal an access token stands for, or why it is refused: at once when it is kept (a
   * request goes on without waiting for a promise), else once its row is read.
   */
  principal(token: string): Principal | keyof typeof REFUSED | Promise<Principal | keyof typeof REFUSED> {
    const tokenHash = hashSecret(token);
    const { version, kept } = this.cache.get(this.db, tokenHash);
    if (kept) return isExpired(kept.expires) ? 'expired' : kept.principal;
    return readToken(this.db, tokenHash).then((row) => {
      const read = principalOfRow(row);
      if (typeof read === 'string') return read;
      this.cache.set(tokenHash, read, version);
      return read.principal;
    });
  }
}

/** The principal an access token stands for, or why it is refused (read from the database, never kept). */
export async function principalOfToken(db: Knex, token: string): Promise<Principal | keyof typeof REFUSED> {
  const read = principalOfRow(await readToken(db, hashSecret(token)));
  return typeof read === 'string' ? read : read.principal;
}

/**
 * The bearer token of an Authorization header (RFC 6750 §2.1): the token, or why there is none.
 * As passport-http-bearer reads it: exactly two space-separated parts, the scheme in any case.
 */
function bearerToken(header: string): { token: string } | 'malformed' | 'other-scheme' {
  const parts = header.split(' ');
  if (parts.length !== 2) return 'malformed';
  return /^Bearer$/i.test(parts[0]!) && parts[1] ? { token: parts[1] } : 'other-scheme';
}

/** Middleware setting the request's principal from its bearer token, or failing with 401 (400 for a malformed header). */
export function bearerAuthentication(db: Knex): RequestHandler {
  const tokens = new TokenReader(db);
  return (req: Request, res: Response, next: NextFunction) => {
    const header = req.headers.authorization;
    if (header === undefined) return next();
    const read = bearerToken(header);
    if (read === 'malformed') {
      return next(new ApiError(400, 'The Authorization header is malformed: send "Authorization: Bearer <access token>".', { headers: { 'WWW-Authenticate': challenge('invalid_request') } }));
    }
    // Another scheme (e.g. Basic): this API knows bearer tokens only.
    if (read === 'other-scheme') return next(unauthorized('This API accepts OAuth 2.0 bearer tokens only: send "Authorization: Bearer <access token>".', `Bearer realm="${REALM}"`));
    let result;
    try {
      result = tokens.principal(read.token);
    } catch (error) {
      return next(error);
    }
    if (result instanceof Promise) result.then((outcome) => settle(res, next, outcome), next);
    else settle(res, next, result);
  };
}

/**
 * The request goes on as the token's principal, or fails with the refusal. Not a named closure
 * made per request: under tsx every named function made at run time is also given its name
 * (Object.defineProperty), which cost more than the rest of this function.
 */
function settle(res: Response, next: NextFunction, result: Principal | keyof typeof REFUSED): void {
  if (typeof result !== 'string') {
    setPrincipal(res, result);
    return next();
  }
  res.locals.log?.warn({ reason: result }, 'refused access token');
  next(unauthorized(REFUSED[result], challenge('invalid_token', REFUSED[result])));
}
