/**
 * Signing in to the web interface, and who each page is for. The sign-in is the OAuth pages' own
 * (oauth/session.ts): the same session row and cookie (HttpOnly, SameSite=Lax, Secure on https, a
 * new id at every sign-in), the same password guard (its limits and lockout) and the same
 * per-address rate limit; so a person signed in on either is signed in on both, and a sign-out,
 * a password change or a block (accounts/credentials.ts deletes the sessions; a blocked account's
 * session is not attached) ends it at once. Every POST but the sign-in form carries the
 * session's CSRF token; one without it is a 403 and changes nothing.
 */
import express, { type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import type { AppContext } from '../context.ts';
import type { LoginSession, LoginSessions } from '../oauth/session.ts';
import type { Limiters } from '../oauth/rate-limit.ts';
import { clientAddress } from '../access/client-address.ts';
import { effectivePermissions, USER_ACCESS_SCOPE } from '../access/roles.ts';
import { setPrincipal, type Principal } from '../access/principal.ts';
import { recordLogin } from '../accounts/users.ts';
import { isAccountAdmin } from '../access/policy.ts';
import { html } from './html.ts';
import { M } from './messages.ts';
import { page, sendPage, type Chrome } from './layout.ts';

/** Where People is (people.ts's PEOPLE_PATH; written here too, as people.ts imports this module). */
const PEOPLE_NAV = '/farm/people';

/** Largest form body the pages accept. */
const FORM_LIMIT_BYTES = 256 * 1024;

/** A form as sent: every value of every name, in order. */
export type Form = Map<string, string[]>;

export interface WebState {
  session: LoginSession;
  principal: Principal;
  csrfToken: string;
}

const states = new WeakMap<Response, WebState>();

export function webState(res: Response): WebState {
  const state = states.get(res);
  if (!state) throw new Error('A page was served before the sign-in was checked.');
  return state;
}

/** The signed-in person as the policy sees them: their roles, all of them (no token narrows a browser's sign-in). */
function principalOf(session: LoginSession): Principal {
  const { user } = session;
  return Object.freeze({
    userId: user.id,
    userUuid: user.uuid,
    userName: user.name,
    roles: Object.freeze([...user.roles].sort()),
    scopes: Object.freeze([USER_ACCESS_SCOPE]),
    clientId: null,
    tokenChainId: null,
    permissions: effectivePermissions(user.roles, [USER_ACCESS_SCOPE]),
  });
}

/** A path under /farm to go back to after signing in; anything else is the dashboard. */
export function safeReturn(value: string | undefined): string {
  return value && /^\/farm(\/|$|\?)/.test(value) && !/[\r\n\\]/.test(value) && !value.startsWith('//')
    ? value
    : '/farm';
}

export function formValue(form: Form, name: string): string | undefined {
  return form.get(name)?.[0];
}

export class WebSessions {
  /** Reads an application/x-www-form-urlencoded body (within the body limits) into a Form. */
  readonly formBody: RequestHandler;

  constructor(
    private readonly ctx: AppContext,
    private readonly sessions: LoginSessions,
    private readonly limiters: Limiters,
  ) {
    const read = ctx.bodies.read(express.text({ type: 'application/x-www-form-urlencoded', limit: FORM_LIMIT_BYTES }), {
      limitBytes: FORM_LIMIT_BYTES,
    });
    this.formBody = (req: Request, res: Response, next: NextFunction) => {
      read(req, res, (error?: unknown) => {
        if (error) return next(error);
        const form: Form = new Map();
        // A browser sends a textarea's line breaks as CR LF (HTML's form encoding): kept as the LF typed.
        for (const [name, value] of new URLSearchParams(typeof req.body === 'string' ? req.body : ''))
          form.set(name, [...(form.get(name) ?? []), value.replace(/\r\n?/g, '\n')]);
        req.body = form;
        next();
      });
    };
  }

  /** Pages for signed-in people: attaches the session and principal, or sends the browser to sign in (a POST too: nothing is done). */
  readonly signedIn: RequestHandler = async (req, res, next) => {
    const session = await this.sessions.attach(req);
    if (!session)
      return res.redirect(
        303,
        `/farm/sign-in?return_to=${encodeURIComponent(req.method === 'GET' ? req.originalUrl : '/farm')}`,
      );
    const principal = principalOf(session);
    setPrincipal(res, principal);
    states.set(res, { session, principal, csrfToken: this.sessions.sessionCsrfToken(session) });
    next();
  };

  /**
   * The signed-in person's principal, or null: for answers that are not pages (the map's features,
   * map.ts), which say 401 instead of sending the browser to sign in.
   */
  async principal(req: Request): Promise<Principal | null> {
    const session = await this.sessions.attach(req);
    return session ? principalOf(session) : null;
  }

  /** After signedIn and formBody on a POST: 403 and nothing done unless the form carries the session's CSRF token. */
  readonly checkCsrf: RequestHandler = (req, res, next) => {
    const state = webState(res);
    if (!this.sessions.checkSessionCsrfToken(state.session, formValue(req.body as Form, 'csrf_token'))) {
      return sendPage(
        res,
        403,
        page(M.errors.forbidden, this.chrome(null), html`<p class="error" role="alert">${M.errors.csrf}</p>`),
      );
    }
    next();
  };

  /** The page frame for this request's person (or nobody); People (people.ts) for account administrators only. */
  chrome(state: WebState | null, nav: Chrome['nav'] = []): Chrome {
    return {
      farmName: this.ctx.config.farmName,
      user: state ? { name: state.session.user.name } : null,
      csrfToken: state?.csrfToken ?? null,
      nav: state && isAccountAdmin(state.principal) ? [...nav, { href: PEOPLE_NAV, label: M.nav.people }] : nav,
    };
  }

  private signInPage(
    req: Request,
    res: Response,
    status: number,
    returnTo: string,
    error?: string,
    username = '',
    notice?: string,
  ): void {
    const token = this.sessions.loginCsrfToken(req, res);
    const body = html`${notice ? html`<p class="notice" role="status">${notice}</p>` : ''}${error ? html`<p class="error" role="alert">${error}</p>` : ''}
<form class="record card" method="post" action="/farm/sign-in">
<input type="hidden" name="csrf_token" value="${token}">
<input type="hidden" name="return_to" value="${returnTo}">
<label for="username">${M.signIn.username}</label>
<input type="text" id="username" name="username" autocomplete="username" autocapitalize="none" required value="${username}">
<label for="password">${M.signIn.password}</label>
<input type="password" id="password" name="password" autocomplete="current-password" required>
<div class="actions"><button class="primary" type="submit">${M.signIn.submit}</button></div>
</form>`;
    sendPage(res, status, page(M.signIn.heading(this.ctx.config.farmName), this.chrome(null), body));
  }

  /** GET and POST /farm/sign-in, POST /farm/sign-out. */
  routes(): express.Router {
    const router = express.Router();
    router.get('/farm/sign-in', async (req, res) => {
      const returnTo = safeReturn(new URL(req.originalUrl, 'http://x').searchParams.get('return_to') ?? undefined);
      if (await this.sessions.attach(req)) return res.redirect(303, returnTo);
      const params = new URL(req.originalUrl, 'http://x').searchParams;
      this.signInPage(
        req,
        res,
        200,
        returnTo,
        undefined,
        '',
        params.has('signed_out') ? M.signIn.signedOut : params.has('password_changed') ? M.account.changed : undefined,
      );
    });
    router.post('/farm/sign-in', this.formBody, async (req, res) => {
      const form = req.body as Form;
      const returnTo = safeReturn(formValue(form, 'return_to'));
      const address = clientAddress(req, this.limiters.trustProxy);
      const addressWait = await this.limiters.addresses.hit(address);
      if (addressWait) {
        res.set('Retry-After', String(addressWait));
        return this.signInPage(req, res, 429, returnTo, M.signIn.tooMany(addressWait));
      }
      if (!this.sessions.checkLoginCsrfToken(req, formValue(form, 'csrf_token')))
        return this.signInPage(req, res, 403, returnTo, M.signIn.expired);
      const username = formValue(form, 'username') ?? '';
      const password = formValue(form, 'password') ?? '';
      const db = this.ctx.db.knex;
      const check =
        username && password
          ? await this.ctx.passwords.login(db, username, password, address)
          : { outcome: 'wrong' as const, userId: null };
      if (check.outcome === 'wait') {
        res.set('Retry-After', String(check.seconds));
        return this.signInPage(req, res, 429, returnTo, M.signIn.tooMany(check.seconds), username);
      }
      if (check.outcome === 'wrong') {
        (res.locals.log ?? this.ctx.logger).warn({ userId: check.userId }, 'failed sign-in on the web interface');
        return this.signInPage(req, res, 200, returnTo, M.signIn.wrong, username);
      }
      if (check.outcome === 'blocked') return this.signInPage(req, res, 200, returnTo, M.signIn.blocked, username);
      if (check.outcome === 'busy') {
        res.set('Retry-After', String(check.seconds));
        return this.signInPage(req, res, 503, returnTo, M.signIn.busy, username);
      }
      await recordLogin(db, check.account.id);
      await this.sessions.start(req, res, check.account.id);
      res.redirect(303, returnTo);
    });
    router.post('/farm/sign-out', this.signedIn, this.formBody, this.checkCsrf, async (req, res) => {
      await this.sessions.end(req, res);
      res.redirect(303, '/farm/sign-in?signed_out=1');
    });
    return router;
  }
}
