/**
 * The authorization endpoint and its pages (RFC 6749 §3.1): GET /oauth/authorize checks the
 * request, asks the user to sign in when needed (POST /oauth/login), then shows the consent page
 * naming the client and the scopes; POST /oauth/authorize/decision answers it, redirecting to the
 * client's redirect URI with a code (or, for the implicit grant, a token) or error=access_denied,
 * and the request's state. POST /oauth/logout signs out to sign in as someone else.
 *
 * Each page carries a Content-Security-Policy without scripts whose form-action allows, besides
 * this server, the origin of the redirect URI the form's answer redirects to: Chromium applies
 * form-action to the redirects that follow a form submission too.
 */
import express, { type NextFunction, type Request, type RequestHandler, type Response, type Router } from 'express';
import helmet from 'helmet';
import type { OAuth2, OAuth2Server } from 'oauth2orize';
import { OAuthError } from '../errors.ts';
import { recordLogin, type UserAccount } from '../accounts/users.ts';
import { isRole, permissionsOfRoles, ROLE_LABELS, USER_ACCESS_SCOPE } from '../access/roles.ts';
import { findClient, type Client } from './clients.ts';
import { AuthorizeRequestError, validateAuthorizeRequest, type AuthorizeRequest } from './authorize-request.ts';
import { formBody, parseQuery } from './form.ts';
import { asOAuthError } from './oauth-errors.ts';
import { clientAddress } from '../access/client-address.ts';
import { limitAddresses } from './rate-limit.ts';
import { consentPage, errorPage, loginPage, STYLE_HASH, type ConsentScope } from './pages.ts';
import { sessionOf, type LoginSessions } from './session.ts';
import { noStore } from './token-endpoint.ts';
import type { OAuthDeps } from './deps.ts';

/** What a scope lets a client do, as the consent page says it. */
const SCOPE_DESCRIPTIONS: Record<string, string> = {
  farm_viewer: 'view the farm records (logs, assets, quantities, terms) and user names',
  farm_worker: 'view, create, change and delete farm records and taxonomy terms',
  farm_manager: 'everything a worker may do',
  farm_account_admin: 'manage user accounts',
  administrator: 'do everything you can do as administrator',
  [USER_ACCESS_SCOPE]: 'do everything your own roles allow',
};

/** Raised on the authorize request of a browser that has not signed in: the login page answers it. */
class LoginRequired extends Error {}

type OAuthRequest = Request & {
  oauth2?: Partial<OAuth2<Client, UserAccount>> & { req?: AuthorizeRequest };
  user?: unknown;
};

/** Where the forms of a page may send their answers: this server, and the redirect URI's origin. */
function formActionSources(redirectUri: string | undefined): string {
  if (!redirectUri) return "'self'";
  try {
    const url = new URL(redirectUri);
    // Private-use schemes of native apps (com.example.app:/cb) are allowed by their scheme.
    return `'self' ${url.protocol === 'http:' || url.protocol === 'https:' ? url.origin : url.protocol}`;
  } catch {
    return "'self'";
  }
}

const pageSecurity = helmet.contentSecurityPolicy({
  useDefaults: false,
  directives: {
    defaultSrc: ["'none'"],
    styleSrc: [STYLE_HASH],
    formAction: [(_req, res) => (res as unknown as Response).locals.formActionSources ?? "'self'"],
    frameAncestors: ["'none'"],
    baseUri: ["'none'"],
  },
});

/** Send a page with its Content-Security-Policy. */
function sendPage(req: Request, res: Response, status: number, html: string, redirectUri?: string): void {
  res.locals.formActionSources = formActionSources(redirectUri);
  pageSecurity(req, res, () => {
    res.status(status).type('html').send(html);
  });
}

/** The authorization response's error, in the redirect URI's query (code) or fragment (token). */
function redirectWithError(
  res: Response,
  redirectUri: string,
  responseType: string | undefined,
  error: OAuthError,
  state: string | undefined,
): void {
  const params: Record<string, string> = { error: error.error, error_description: error.message };
  if (state !== undefined) params.state = state;
  const url = new URL(redirectUri);
  if (responseType === 'token') url.hash = new URLSearchParams(params).toString();
  else for (const [name, value] of Object.entries(params)) url.searchParams.set(name, value);
  res.redirect(302, url.toString());
}

/** A path to return to after signing in: only an authorization request of this server. */
function safeReturnTo(value: unknown): string | null {
  return typeof value === 'string' && value.startsWith('/oauth/authorize?') && !/[\r\n\\]/.test(value) ? value : null;
}

/** The routes of the authorization endpoint, its sign-in and sign-out, and the consent decision. */
export function authorizeRoutes(deps: OAuthDeps, server: OAuth2Server, sessions: LoginSessions): Router {
  const db = deps.ctx.db.knex;
  const { limiters } = deps;
  const router = express.Router();

  async function renderLogin(
    req: Request,
    res: Response,
    returnTo: string,
    status = 200,
    error?: string,
    username?: string,
  ): Promise<void> {
    const clientId = new URLSearchParams(returnTo.slice(returnTo.indexOf('?') + 1)).get('client_id');
    const client = clientId ? await findClient(db, clientId) : null;
    const html = loginPage({
      clientLabel: client?.label ?? null,
      returnTo,
      csrfToken: sessions.loginCsrfToken(req, res),
      error,
      username,
    });
    sendPage(req, res, status, html);
  }

  function tooMany(req: Request, res: Response, wait: number): void {
    res.set('Retry-After', String(wait));
    sendPage(req, res, 429, errorPage('Too many attempts', `Too many sign-in attempts. Try again in ${wait} seconds.`));
  }

  /** The query, parsed once and strictly (no repeated parameters), where oauth2orize reads it. */
  const readQuery: RequestHandler = (req, _res, next) => {
    Object.defineProperty(req, 'query', {
      value: parseQuery(req),
      writable: true,
      configurable: true,
      enumerable: true,
    });
    next();
  };

  const attachSession: RequestHandler = async (req, _res, next) => {
    const session = await sessions.attach(req);
    if (session) (req as OAuthRequest).user = session.user;
    next();
  };

  const requireSession: RequestHandler = (req, _res, next) => {
    if (!sessionOf(req))
      return next(new OAuthError('access_denied', 'Your sign-in expired. Start again from the application.'));
    next();
  };

  const checkSessionCsrf: RequestHandler = (req, _res, next) => {
    if (!sessions.checkSessionCsrfToken(sessionOf(req)!, (req.body as Record<string, string>).csrf_token)) {
      return next(
        new OAuthError('access_denied', 'The form was not sent from this server’s own page (its CSRF token is wrong).'),
      );
    }
    next();
  };

  const authorization = server.authorization(
    (areq: unknown, done: (err: Error | null, client?: Client | false, redirectUri?: string) => void) => {
      validateAuthorizeRequest(db, areq as AuthorizeRequest, {
        farmClientRequiresPkce: deps.ctx.config.farmClientRequiresPkce,
      }).then(
        ({ client, redirectUri }) => done(null, client, redirectUri),
        (error: unknown) =>
          error instanceof AuthorizeRequestError
            ? done(error.error, error.client, error.redirectUri)
            : done(error as Error),
      );
    },
    // Every request is shown to the user: nothing is allowed without the consent page.
    (
      _client: Client,
      user: UserAccount | undefined,
      _scope: string[],
      _type: string,
      _areq: unknown,
      done: (err: Error | null, allow: boolean, info: unknown, locals: unknown) => void,
    ) => {
      if (!user) return done(new LoginRequired(), false, undefined, undefined);
      done(null, false, undefined, undefined);
    },
  ) as unknown as RequestHandler;

  const showConsent: RequestHandler = (req, res) => {
    const txn = (req as OAuthRequest).oauth2!;
    const session = sessionOf(req)!;
    const client = txn.client!;
    const areq = txn.req!;
    const userPermissions = permissionsOfRoles(session.user.roles);
    const scopes: ConsentScope[] = areq.scopes.map((name) => ({
      name: isRole(name) ? `${name} (${ROLE_LABELS[name]})` : name,
      description: SCOPE_DESCRIPTIONS[name] ?? name,
      beyondUserRoles: isRole(name) && [...permissionsOfRoles([name])].some((p) => !userPermissions.has(p)),
    }));
    const html = consentPage({
      clientLabel: client.label,
      clientId: client.clientId,
      userName: session.user.name,
      scopes,
      redirectUri: txn.redirectURI!,
      transactionId: txn.transactionID!,
      csrfToken: sessions.sessionCsrfToken(session),
      returnTo: req.originalUrl,
    });
    sendPage(req, res, 200, html, txn.redirectURI);
  };

  /** Errors of the flow: the login page, a redirect to the client, or an error page. */
  const authorizeErrors = async (error: unknown, req: Request, res: Response, next: NextFunction) => {
    if (res.headersSent) return next(error);
    if (error instanceof LoginRequired) return renderLogin(req, res, req.originalUrl);
    const oauth = asOAuthError(error);
    if (!oauth) (res.locals.log ?? deps.ctx.logger).error({ err: error }, 'authorization request failed');
    const failure = oauth ?? new OAuthError('server_error', 'The server could not complete the authorization.');
    const txn = (req as OAuthRequest).oauth2;
    if (txn?.client && txn.redirectURI)
      return redirectWithError(res, txn.redirectURI, txn.req?.type, failure, txn.req?.state);
    res.set(failure.headers);
    sendPage(
      req,
      res,
      failure.status === 401 ? 400 : failure.status,
      errorPage('This authorization request cannot be completed', failure.message),
    );
  };

  // Each signed-in request stores one waiting for its decision: counted per address like sign-ins.
  router.get(
    '/oauth/authorize',
    noStore,
    limitAddresses(limiters),
    readQuery,
    attachSession,
    authorization,
    showConsent,
    authorizeErrors,
  );

  router.post(
    '/oauth/login',
    noStore,
    formBody(deps.ctx.bodies),
    async (req: Request, res: Response) => {
      const body = req.body as Record<string, string | undefined>;
      const returnTo = safeReturnTo(body.return_to);
      if (!returnTo)
        return sendPage(
          req,
          res,
          400,
          errorPage('Sign-in failed', 'The sign-in form does not say which authorization request it belongs to.'),
        );
      const address = clientAddress(req, limiters.trustProxy);
      const addressWait = await limiters.addresses.hit(address);
      if (addressWait) return tooMany(req, res, addressWait);
      if (!sessions.checkLoginCsrfToken(req, body.csrf_token)) {
        return renderLogin(
          req,
          res,
          returnTo,
          403,
          'The sign-in form expired or was not sent from this server’s own page. Please sign in again.',
        );
      }
      const username = body.username ?? '';
      const check =
        username && body.password
          ? await deps.ctx.passwords.login(db, username, body.password, address)
          : { outcome: 'wrong' as const, userId: null };
      if (check.outcome === 'wait') return tooMany(req, res, check.seconds);
      if (check.outcome === 'wrong') {
        (res.locals.log ?? deps.ctx.logger).warn({ userId: check.userId }, 'failed sign-in on the login form');
        return renderLogin(req, res, returnTo, 200, 'The user name or password is wrong.', username);
      }
      if (check.outcome === 'blocked')
        return renderLogin(req, res, returnTo, 200, 'This account is blocked.', username);
      if (check.outcome === 'busy') {
        res.set('Retry-After', String(check.seconds));
        return renderLogin(
          req,
          res,
          returnTo,
          503,
          'The server is busy checking other sign-ins. Please try again in a moment.',
          username,
        );
      }
      await recordLogin(db, check.account.id);
      await sessions.start(req, res, check.account.id);
      res.redirect(303, returnTo);
    },
    authorizeErrors,
  );

  router.post(
    '/oauth/logout',
    noStore,
    formBody(deps.ctx.bodies),
    attachSession,
    requireSession,
    checkSessionCsrf,
    async (req: Request, res: Response) => {
      const returnTo = safeReturnTo((req.body as Record<string, string>).return_to) ?? null;
      await sessions.end(req, res);
      if (returnTo) return res.redirect(303, returnTo);
      sendPage(req, res, 200, errorPage('Signed out', 'You are signed out.'));
    },
    authorizeErrors,
  );

  router.post(
    '/oauth/authorize/decision',
    noStore,
    formBody(deps.ctx.bodies),
    attachSession,
    requireSession,
    checkSessionCsrf,
    ...(server.decision((req: Request, done: (err: Error | null, params?: { allow: boolean }) => void) => {
      done(null, { allow: (req.body as Record<string, string>).decision === 'allow' });
    }) as unknown as RequestHandler[]),
    authorizeErrors,
  );

  return router;
}
