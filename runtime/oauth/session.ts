/**
 * The browser side of the authorization flow: who is signed in, and the CSRF tokens of its forms.
 *
 * - The sign-in is a database row (oauth_sessions) found through a cookie holding a random
 *   session id and its HMAC signature; only the id's hash is stored. The cookie is HttpOnly,
 *   SameSite=Lax and Secure on https, for the whole site: the web interface (runtime/web/) signs
 *   in with the same session, so a person signed in on the OAuth pages is signed in there too. A successful login always starts a new
 *   session id (no session fixation).
 * - The login form's CSRF token is bound to a second random cookie (`tilth_browser`), since there
 *   is no session before signing in; the consent form's is bound to the session. Both tokens are
 *   HMACs under the server's cookie key, so they are never stored and cannot be forged.
 * - The cookie key lives in the database (tilth_state), so every server process shares it.
 */
import type { Request, Response } from 'express';
import type { Knex } from 'knex';
import { findUser, type UserAccount } from '../accounts/users.ts';
import { constantTimeEqual, hashSecret, newSecret, sign } from './secrets.ts';
import { write } from '../storage/transactions.ts';

const SESSION_COOKIE = 'tilth_session';
const BROWSER_COOKIE = 'tilth_browser';
const COOKIE_PATH = '/';
/** Where the session cookie was kept before the web interface shared it: an old one a browser still sends is cleared at sign-in and sign-out. */
const FORMER_COOKIE_PATH = '/oauth';
const KEY_STATE = 'oauth_cookie_key';

export interface LoginSession {
  /** The raw id (from the cookie): the key of its CSRF token. */
  id: string;
  hash: string;
  user: UserAccount;
}

const sessions = new WeakMap<Request, LoginSession>();

/** The session attached to a request by LoginSessions.attach. */
export function sessionOf(req: Request): LoginSession | undefined {
  return sessions.get(req);
}

/** Every value of one cookie the request sent (the same name under two paths: the more specific first), in order. */
function readCookies(req: Request, name: string): string[] {
  const header = req.headers.cookie;
  if (!header) return [];
  const out: string[] = [];
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq !== -1 && part.slice(0, eq).trim() === name) out.push(part.slice(eq + 1).trim());
  }
  return out;
}

/** The value of one cookie of the request, or undefined. */
function readCookie(req: Request, name: string): string | undefined {
  return readCookies(req, name)[0];
}

/** Load the cookie key shared by every server process, creating it on first start. */
export async function loadCookieKey(db: Knex): Promise<Buffer> {
  await db('tilth_state').insert({ name: KEY_STATE, value: newSecret() }).onConflict('name').ignore();
  const row = await db('tilth_state').where('name', KEY_STATE).first('value');
  return Buffer.from(row.value as string, 'base64url');
}

export class LoginSessions {
  constructor(
    private readonly db: Knex,
    private readonly key: () => Buffer,
    private readonly options: { lifetime: number; secure: boolean },
  ) {}

  private signed(value: string, purpose: string): string {
    return `${value}.${sign(this.key(), `${purpose}:${value}`)}`;
  }

  private unsigned(cookie: string | undefined, purpose: string): string | null {
    if (!cookie) return null;
    const dot = cookie.lastIndexOf('.');
    if (dot < 1) return null;
    const value = cookie.slice(0, dot);
    return constantTimeEqual(cookie.slice(dot + 1), sign(this.key(), `${purpose}:${value}`)) ? value : null;
  }

  private setCookie(res: Response, name: string, value: string, maxAgeSeconds: number): void {
    res.cookie(name, value, {
      path: COOKIE_PATH,
      httpOnly: true,
      sameSite: 'lax',
      secure: this.options.secure,
      maxAge: maxAgeSeconds * 1000,
      encode: String,
    });
  }

  /** Find the signed-in, still active user of this browser, and remember the session for the request. */
  async attach(req: Request): Promise<LoginSession | null> {
    // Usually one cookie; two when a browser still holds one from before the cookie's path was
    // the whole site (FORMER_COOKIE_PATH): the live one counts.
    for (const cookie of readCookies(req, SESSION_COOKIE)) {
      const id = this.unsigned(cookie, 'session');
      if (!id) continue;
      const hash = hashSecret(id);
      const row = await this.db('oauth_sessions')
        .where('session_hash', hash)
        .where('expires', '>', Math.floor(Date.now() / 1000))
        .first('user_id');
      if (!row) continue;
      const user = await findUser(this.db, { id: row.user_id });
      if (!user || !user.status) return null;
      const session = { id, hash, user };
      sessions.set(req, session);
      return session;
    }
    return null;
  }

  /** Sign a user in: a new session row and cookie, replacing any earlier session of this browser. */
  async start(req: Request, res: Response, userId: number): Promise<void> {
    const previous = this.unsigned(readCookie(req, SESSION_COOKIE), 'session');
    const id = newSecret();
    const t = Math.floor(Date.now() / 1000);
    await write(this.db, async (trx) => {
      if (previous) await trx('oauth_sessions').where('session_hash', hashSecret(previous)).delete();
      await trx('oauth_sessions').insert({
        session_hash: hashSecret(id),
        user_id: userId,
        created: t,
        expires: t + this.options.lifetime,
      });
    });
    if (readCookies(req, SESSION_COOKIE).length > 1) res.clearCookie(SESSION_COOKIE, { path: FORMER_COOKIE_PATH });
    this.setCookie(res, SESSION_COOKIE, this.signed(id, 'session'), this.options.lifetime);
  }

  /** Sign out: the session row and its cookie go. */
  async end(req: Request, res: Response): Promise<void> {
    const ids = readCookies(req, SESSION_COOKIE)
      .map((cookie) => this.unsigned(cookie, 'session'))
      .filter((id): id is string => id !== null);
    if (ids.length) await this.db('oauth_sessions').whereIn('session_hash', ids.map(hashSecret)).delete();
    if (readCookies(req, SESSION_COOKIE).length > 1) res.clearCookie(SESSION_COOKIE, { path: FORMER_COOKIE_PATH });
    res.clearCookie(SESSION_COOKIE, {
      path: COOKIE_PATH,
      httpOnly: true,
      sameSite: 'lax',
      secure: this.options.secure,
    });
  }

  /** The CSRF token of the consent (and sign-out) form of a session. */
  sessionCsrfToken(session: LoginSession): string {
    return sign(this.key(), `csrf-session:${session.id}`);
  }

  checkSessionCsrfToken(session: LoginSession, token: unknown): boolean {
    return typeof token === 'string' && constantTimeEqual(token, this.sessionCsrfToken(session));
  }

  /** The CSRF token of the login form, setting the browser cookie it is bound to when missing. */
  loginCsrfToken(req: Request, res: Response): string {
    let browser = this.unsigned(readCookie(req, BROWSER_COOKIE), 'browser');
    if (!browser) {
      browser = newSecret();
      this.setCookie(res, BROWSER_COOKIE, this.signed(browser, 'browser'), this.options.lifetime);
    }
    return sign(this.key(), `csrf-login:${browser}`);
  }

  checkLoginCsrfToken(req: Request, token: unknown): boolean {
    const browser = this.unsigned(readCookie(req, BROWSER_COOKIE), 'browser');
    return (
      browser !== null &&
      typeof token === 'string' &&
      constantTimeEqual(token, sign(this.key(), `csrf-login:${browser}`))
    );
  }
}
