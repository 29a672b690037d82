/**
 * Bearer authentication of the API (RFC 6750) with passport and passport-http-bearer: the access
 * token of the Authorization header becomes the request's Principal. An access token is a signed
 * JWT (access-token-jwt.ts), or an opaque token issued before Tilth signed them, which works until
 * it expires; either is live only while its row (found by the token's SHA-256) says so. A request without an
 * Authorization header stays anonymous, and the API decides where that is enough (GET /api, the
 * schemas). Any Authorization header that does not carry a live token is refused with 401, a
 * JSON:API error document and a `WWW-Authenticate: Bearer` challenge: an unknown, expired or
 * revoked token, a token of a blocked user, and farmOS.js's `Bearer undefined` before it has a
 * token.
 */
import type { ErrorRequestHandler, NextFunction, Request, RequestHandler, Response } from 'express';
import passport from 'passport';
import { Strategy as BearerStrategy } from 'passport-http-bearer';
import type { Knex } from 'knex';
import { ApiError, unauthorized } from '../errors.ts';
import { effectivePermissions, isRole } from '../access/roles.ts';
import { hashSecret } from './secrets.ts';
import { selectRows } from '../storage/sql.ts';
import { dialectOf, type DialectName } from '../storage/dialect.ts';
import { ChangeCache } from '../storage/change-cache.ts';
import { setPrincipal, type Principal } from '../access/principal.ts';
import { accessTokenKeys, looksLikeJwt, type JwtRefusal } from './access-token-jwt.ts';

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
const tokenSql = (aggregate: string) =>
  `SELECT t.chain_id, c.client_id AS public_client_id, t.scopes, t.expires, t.revoked,
          u.id AS user_id, u.uuid AS user_uuid, u.name AS user_name, u.status AS user_status,
          (SELECT ${aggregate} FROM user_role r WHERE r.user_id = u.id) AS roles
     FROM oauth_access_tokens t
     JOIN oauth_clients c ON c.id = t.client_id
     LEFT JOIN users u ON u.id = t.user_id
    WHERE t.token_hash = ?`;
const TOKEN_SQL = new Map<DialectName, string>();

async function readToken(db: Knex, tokenHash: string): Promise<TokenRow | undefined> {
  const dialect = dialectOf(db);
  let sql = TOKEN_SQL.get(dialect.name);
  if (!sql) TOKEN_SQL.set(dialect.name, (sql = tokenSql(dialect.stringAggregate('r.role', ' '))));
  return (await selectRows<TokenRow>(db, sql, [tokenHash]))[0];
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
  if (row.user_id === null || !row.user_status || row.user_status === '0' || row.user_status === 'false')
    return 'blocked';
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
  /**
   * The JWTs whose signature this process verified, by their hash, with their expiry (seconds):
   * a token is verified once, not on every request (an RS256 check and jose's parsing cost more
   * than the rest of the bearer check). Only the signature is remembered: the token's row is
   * still read (or, on SQLite, kept only until the database changes), so a revocation, a blocked
   * user or a role taken away counts at once, as before.
   */
  private readonly verified = new Map<string, number>();

  constructor(private readonly db: Knex) {}

  /**
   * The principal an access token stands for, or why it is refused: at once when it is kept (a
   * request goes on without waiting for a promise), else once its row is read.
   */
  principal(token: string): Principal | Refusal | Promise<Principal | Refusal> {
    const tokenHash = hashSecret(token);
    const { version, kept } = this.cache.get(this.db, tokenHash);
    if (kept) return isExpired(kept.expires) ? 'expired' : kept.principal;
    // The row is read now, whatever the signature turns out to be: a read that came after a
    // later commit could otherwise be kept under the version seen before it (ChangeCache.set).
    const row = readToken(this.db, tokenHash);
    if (looksLikeJwt(token) && !this.wasVerified(tokenHash)) return this.verifyThenKeep(token, tokenHash, row, version);
    return this.keep(tokenHash, row, version);
  }

  private wasVerified(tokenHash: string): boolean {
    const expires = this.verified.get(tokenHash);
    if (expires === undefined) return false;
    if (!isExpired(expires)) return true;
    this.verified.delete(tokenHash);
    return false;
  }

  private async verifyThenKeep(
    token: string,
    tokenHash: string,
    row: Promise<TokenRow | undefined>,
    version: number | undefined,
  ): Promise<Principal | Refusal> {
    const [verified] = await Promise.all([verifyJwt(this.db, token), row]);
    if (typeof verified === 'string') return verified;
    if (this.verified.size >= MAX_CACHED) this.verified.delete(this.verified.keys().next().value!);
    this.verified.set(tokenHash, verified.expires);
    return this.keep(tokenHash, row, version);
  }

  private async keep(
    tokenHash: string,
    row: Promise<TokenRow | undefined>,
    version: number | undefined,
  ): Promise<Principal | Refusal> {
    const read = principalOfRow(await row);
    if (typeof read === 'string') return read;
    this.cache.set(tokenHash, read, version);
    return read.principal;
  }
}

/** A JWT's signature and expiry checked with the farm's key (access-token-jwt.ts). */
async function verifyJwt(db: Knex, token: string): Promise<{ expires: number } | JwtRefusal> {
  return (await accessTokenKeys(db)).verify(token);
}

/** The principal an access token stands for, or why it is refused (read from the database, never kept). */
export async function principalOfToken(db: Knex, token: string): Promise<Principal | Refusal> {
  if (looksLikeJwt(token)) {
    const verified = await verifyJwt(db, token);
    if (typeof verified === 'string') return verified;
  }
  const read = principalOfRow(await readToken(db, hashSecret(token)));
  return typeof read === 'string' ? read : read.principal;
}

/**
 * passport's options. No session (every request carries its token), no authInfo (nothing reads
 * it, and passport would run its info transformers per request), and failures handed to next() as
 * an AuthenticationError, which `refused` below answers as a JSON:API error: without it passport
 * would end the response itself, with a plain-text body.
 */
const AUTHENTICATE_OPTIONS = { session: false, authInfo: false, failWithError: true } as const;

/** The 400 for an Authorization header that is not "<scheme> <credentials>". */
function malformed(): ApiError {
  return new ApiError(400, 'The Authorization header is malformed: send "Authorization: Bearer <access token>".', {
    headers: { 'WWW-Authenticate': challenge('invalid_request') },
  });
}

/**
 * Bearer authentication of the API, through passport with passport-http-bearer's strategy: the
 * request's principal is set from its bearer token, or the request fails with 401 (400 for a
 * malformed header). Two middlewares, for `app.use`: passport's, behind the check that keeps a
 * request without an Authorization header anonymous, and the error handler that answers
 * passport's failures.
 *
 * Everything here is made once, when the application is built: one Passport (private, nothing
 * global), one strategy, one authenticate middleware, and no function of Tilth's made per
 * request (tsx names every named function it makes at run time, which costs more than the rest of
 * the check). passport.initialize() is not used: since passport 0.5.1 authenticate() adds to the
 * request what it needs (its CHANGELOG); initialize() would add the same per request, and
 * `req._passport` for strategies written for passport 0.4, which passport-http-bearer 1.0.1 never
 * reads.
 *
 * passport-http-bearer also takes a token from `access_token` in the body or the query string
 * (RFC 6750 §2.2, §2.3); Tilth takes it from the header only. It runs before any body parser
 * (`req.body` is still undefined) and the app's query parser gives `{}` (http/app.ts: queries are
 * parsed where they are used), so the strategy sees the header alone.
 */
export function bearerAuthentication(db: Knex): [RequestHandler, ErrorRequestHandler] {
  const tokens = new TokenReader(db);
  // Why the verify callback refused a request's token, for `refused` to say.
  const refusals = new WeakMap<Request, Refusal>();

  /**
   * The strategy's verify callback: the token's principal, at once when it is kept (SQLite, the
   * database unchanged since it was read), else once its row is read.
   */
  function verify(req: Request, token: string, done: Done): void {
    let result;
    try {
      result = tokens.principal(token);
    } catch (error) {
      return done(error);
    }
    if (result instanceof Promise) void settleLater(req, result, done, refusals);
    else settle(req, result, done, refusals);
  }

  const authenticator = new passport.Passport();
  authenticator.use(new BearerStrategy({ realm: REALM, passReqToCallback: true }, verify));
  // By name: passport then gives each request an object of its own made from the strategy
  // (Object.create) to hang its callbacks on. Given the strategy object itself, it would hang every
  // request's callbacks on that one object, and a check still in flight would answer through the
  // next request's.
  const authenticate = authenticator.authenticate('bearer', AUTHENTICATE_OPTIONS) as RequestHandler;

  function bearer(req: Request, res: Response, next: NextFunction): void {
    const header = req.headers.authorization;
    if (header === undefined) return next();
    // passport-http-bearer reads an empty header as none (and would answer 401): it is malformed.
    if (header === '') return next(malformed());
    authenticate(req, res, next);
  }

  function refused(error: unknown, req: Request, res: Response, next: NextFunction): void {
    if (!isAuthenticationError(error)) return next(error);
    // passport-http-bearer fails with status 400 for a header that is not "<scheme> <credentials>".
    if (error.status === 400) return next(malformed());
    const refusal = refusals.get(req);
    if (refusal === undefined) {
      // Another scheme (e.g. Basic), or "Bearer" without a token: this API knows bearer tokens only.
      return next(
        unauthorized(
          'This API accepts OAuth 2.0 bearer tokens only: send "Authorization: Bearer <access token>".',
          `Bearer realm="${REALM}"`,
        ),
      );
    }
    res.locals.log?.warn({ reason: refusal }, 'refused access token');
    next(unauthorized(REFUSED[refusal], challenge('invalid_token', REFUSED[refusal])));
  }

  return [bearer, refused];
}

type Refusal = keyof typeof REFUSED;
type Done = (error: unknown, user?: Principal | false, info?: string) => void;

/** passport's AuthenticationError (failWithError), which passport does not export. */
function isAuthenticationError(error: unknown): error is Error & { status: number } {
  return (
    error instanceof Error &&
    error.name === 'AuthenticationError' &&
    typeof (error as { status?: unknown }).status === 'number'
  );
}

/**
 * The verify callback's answer: the request goes on as the token's principal, or the strategy
 * fails it (the refusal kept for `refused`). Not a named closure made per request: under tsx every
 * named function made at run time is also given its name (Object.defineProperty), which cost more
 * than the rest of this function.
 */
function settle(req: Request, result: Principal | Refusal, done: Done, refusals: WeakMap<Request, Refusal>): void {
  if (typeof result !== 'string') {
    setPrincipal(req.res!, result);
    return done(null, result);
  }
  refusals.set(req, result);
  done(null, false, REFUSED[result]);
}

/** settle() once the token's row is read: an async function, not a closure made per request. */
async function settleLater(
  req: Request,
  pending: Promise<Principal | Refusal>,
  done: Done,
  refusals: WeakMap<Request, Refusal>,
): Promise<void> {
  let result;
  try {
    result = await pending;
  } catch (error) {
    return done(error);
  }
  settle(req, result, done, refusals);
}
