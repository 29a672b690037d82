/**
 * The OAuth 2.0 authorization server (spec: Authentication; farmos-behaviour.md §6): its routes
 * under /oauth and /.well-known, bearer authentication of the API, CORS, and the start-up work.
 *
 *   POST /oauth/token        token-endpoint.ts (grants/*.ts)
 *   GET  /oauth/authorize    authorize.ts (login and consent pages, code and implicit grants)
 *   POST /oauth/revoke       revoke.ts (RFC 7009)
 *   GET  /.well-known/oauth-authorization-server   metadata.ts (RFC 8414)
 *
 * All state is in the database (tokens.ts, clients.ts, session.ts, transactions.ts), so several
 * server processes can share one PostgreSQL; only the rate-limit counters are per process.
 */
import express, { type ErrorRequestHandler, type RequestHandler, type Router } from 'express';
import type { AppContext } from '../context.ts';
import { bearerAuthentication } from './bearer.ts';
import { corsMiddleware } from './cors.ts';
import { ensureDefaultClient, ensureFieldKitClient } from './clients.ts';
import { createAuthorizationServer } from './authorization-server.ts';
import { tokenEndpoint } from './token-endpoint.ts';
import { revocationEndpoint } from './revoke.ts';
import { metadataHandler } from './metadata.ts';
import { authorizeRoutes } from './authorize.ts';
import { LoginSessions, loadCookieKey } from './session.ts';
import { createLimiters, type Limiters } from './rate-limit.ts';
import { accessTokenKeys } from './access-token-jwt.ts';
import type { OAuthDeps } from './deps.ts';

/** Where the OAuth router answers: every path of its routes starts with one of these (app.ts scopes it to them). */
export const OAUTH_PATHS = ['/oauth/', '/.well-known/'];

export interface OAuthComponents {
  /** Routes under /oauth and /.well-known (OAUTH_PATHS). */
  router: Router;
  /**
   * Sets the request's principal from its bearer token (passport, passport-http-bearer); 401 for a
   * bad token. A middleware and the error handler that answers its failures, for `app.use`.
   */
  authenticate: [RequestHandler, ErrorRequestHandler];
  /** CORS headers for the origins clients registered. */
  cors: RequestHandler;
  /** Who is signed in with a browser, shared with the web interface (runtime/web/). */
  sessions: LoginSessions;
  /** The sign-in rate limits, shared with the web interface's sign-in form. */
  limiters: Limiters;
  /**
   * Runs at start after migrations: creates the default `farm` client and loads the cookie key and
   * the access tokens' signing key (each made on the farm's first start).
   */
  bootstrap(): Promise<void>;
}

/** Build the authorization server of a running application; call bootstrap() before serving. */
export function createOAuth(ctx: AppContext): OAuthComponents {
  const db = ctx.db.knex;
  const deps: OAuthDeps = { ctx, limiters: createLimiters(ctx.db, ctx.config) };

  let cookieKey: Buffer | null = null;
  const sessions = new LoginSessions(
    db,
    () => {
      if (!cookieKey) throw new Error('The OAuth server was used before bootstrap() loaded its cookie key.');
      return cookieKey;
    },
    { lifetime: ctx.config.loginSessionLifetime, secure: ctx.config.baseUrl.startsWith('https:') },
  );

  const server = createAuthorizationServer(deps);
  const router = express.Router();
  router.post('/oauth/token', ...tokenEndpoint(deps, server));
  router.post('/oauth/revoke', ...revocationEndpoint(deps));
  router.get('/.well-known/oauth-authorization-server', metadataHandler(ctx.config.baseUrl));
  router.use(authorizeRoutes(deps, server, sessions));
  // Who this browser is signed in as, for the front door's script.
  router.get('/oauth/session', async (req, res) => {
    const session = await sessions.attach(req);
    res
      .set('Cache-Control', 'no-store')
      .json(session ? { signed_in: true, name: session.user.name } : { signed_in: false });
  });

  return {
    router,
    sessions,
    limiters: deps.limiters,
    authenticate: bearerAuthentication(db),
    cors: corsMiddleware(db),
    async bootstrap() {
      await ensureDefaultClient(db, ctx.config.baseUrl);
      await ensureFieldKitClient(db, ctx.config.fieldKitClient);
      cookieKey = await loadCookieKey(db);
      await accessTokenKeys(db);
    },
  };
}
