/**
 * TEMPORARY minimal OAuth so the JSON:API layer can be exercised: a password grant that keeps
 * tokens in memory, and bearer authentication. The real authorization server replaces this file,
 * keeping the `createOAuth` interface.
 */
import { createHash, randomBytes } from 'node:crypto';
import express, { type NextFunction, type Request, type RequestHandler, type Response, type Router } from 'express';
import type { AppContext } from '../context.ts';
import { authenticate, findUser } from '../accounts/users.ts';
import { effectivePermissions } from '../access/roles.ts';
import { setPrincipal } from '../http/principal.ts';
import { OAuthError, unauthorized } from '../errors.ts';

export interface OAuthComponents {
  /** Routes under /oauth and /.well-known. */
  router: Router;
  /** Sets the request's principal from its bearer token; 401 for a bad token. */
  authenticate: RequestHandler;
  /** CORS headers for the origins clients registered. */
  cors: RequestHandler;
  /** Runs at start after migrations: creates the default `farm` client. */
  bootstrap(): Promise<void>;
}

export function createOAuth(ctx: AppContext): OAuthComponents {
  const tokens = new Map<string, { userId: number; scopes: string[]; expires: number }>();
  const hash = (t: string) => createHash('sha256').update(t).digest('hex');
  const router = express.Router();
  router.post('/oauth/token', express.urlencoded({ extended: false }), async (req: Request, res: Response) => {
    const body = req.body as Record<string, string>;
    try {
      if (body.grant_type !== 'password') throw new OAuthError('unsupported_grant_type', 'Only the password grant is available.');
      const user = await authenticate(ctx.db.knex, body.username ?? '', body.password ?? '');
      if (!user || user === 'blocked') throw new OAuthError('invalid_grant', 'The user credentials were incorrect.');
      const token = randomBytes(32).toString('base64url');
      tokens.set(hash(token), { userId: user.id, scopes: (body.scope || 'user_access').split(' '), expires: Date.now() + 3600_000 });
      res.json({ access_token: token, token_type: 'Bearer', expires_in: 3600 });
    } catch (error) {
      if (error instanceof OAuthError) res.status(error.status).json(error.toBody());
      else throw error;
    }
  });
  const authenticateRequest: RequestHandler = async (req: Request, res: Response, next: NextFunction) => {
    const header = req.headers.authorization;
    if (!header) return next();
    const match = /^Bearer\s+(\S+)$/i.exec(header);
    const entry = match ? tokens.get(hash(match[1]!)) : undefined;
    if (!entry || entry.expires < Date.now()) {
      return next(unauthorized('The access token is missing, invalid, expired or revoked.', 'Bearer realm="tilth", error="invalid_token"'));
    }
    const user = await findUser(ctx.db.knex, { id: entry.userId });
    if (!user || !user.status) return next(unauthorized('The access token is invalid.', 'Bearer realm="tilth", error="invalid_token"'));
    setPrincipal(res, {
      userId: user.id,
      userUuid: user.uuid,
      userName: user.name,
      roles: user.roles,
      scopes: entry.scopes,
      clientId: 'farm',
      permissions: effectivePermissions(user.roles, entry.scopes),
    });
    next();
  };
  return {
    router,
    authenticate: authenticateRequest,
    cors: (_req, _res, next) => next(),
    bootstrap: async () => {},
  };
}
