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
import type { UserAccount } from '../accounts/users.ts';
import { isRole } from '../access/roles.ts';
import { constantTimeEqual, hashSecret, newSecret, sign } from './secrets.ts';
import { write } from '../storage/transactions.ts';
import { selectRows } from '../storage/sql.ts';
import { dialectOf, type DialectName } from '../storage/dialect.ts';
import { ChangeCache } from '../storage/change-cache.ts';

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

interface SessionRow {
  expires: number | string;
  user_id: number;
  uuid: string;
  name: string;
  mail: string | null;
  status: unknown;
  roles: string | null;
}

/**
 * SQL by dialect: a live session, its user and the user's roles in one statement. Every page
 * asks it; as three statements (one built by Knex per request) it was the dearest part of
 * a small page.
 */
const sessionSql = (aggregate: string) =>
  `SELECT s.expires, u.id AS user_id, u.uuid, u.name, u.mail, u.status,
          (SELECT ${aggregate} FROM user_role r WHERE r.user_id = u.id) AS roles
     FROM oauth_sessions s
     JOIN users u ON u.id = s.user_id
    WHERE s.session_hash = ? AND s.expires > ?`;
const SESSION_SQL = new Map<DialectName, string>();

/** A signed-in session as kept between requests: the session and its expiry (seconds). */
interface KeptSession {
  session: LoginSession;
  expires: number;
}

/** Each session's CSRF token, made once per session object (a kept session is one object across requests). */
const csrfTokens = new WeakMap<LoginSession, string>();

/** Most sessions kept; the oldest go first. */
const MAX_KEPT_SESSIONS = 10_000;

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
  /*
   * The sessions of the cookies seen since the database last changed (storage/change-cache.ts,
   * SQLite only), keyed by the whole signed cookie: a kept cookie's signature was checked when it
   * was kept, so a page of a signed-in person costs no statement, hash or HMAC. A sign-out, a
   * block, a password change or a role taken away is a commit, which empties the cache; expiry
   * is checked on every use. Blocked users and unknown sessions are never kept.
   */
  private readonly kept = new ChangeCache<KeptSession>(MAX_KEPT_SESSIONS);

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
      const now = Math.floor(Date.now() / 1000);
      const { version, kept } = this.kept.get(this.db, cookie);
      if (kept && kept.expires > now) {
        sessions.set(req, kept.session);
        return kept.session;
      }
      const id = this.unsigned(cookie, 'session');
      if (!id) continue;
      const hash = hashSecret(id);
      const row = await this.readSession(hash, now);
      if (!row) continue;
      if (!row.status || row.status === '0' || row.status === 'false') return null;
      const user: UserAccount = Object.freeze({
        id: Number(row.user_id),
        uuid: row.uuid,
        name: row.name,
        mail: row.mail,
        status: true,
        roles: (row.roles ?? '').split(' ').filter(isRole).sort(),
      });
      const session: LoginSession = Object.freeze({ id, hash, user });
      this.kept.set(cookie, { session, expires: Number(row.expires) }, version);
      sessions.set(req, session);
      return session;
    }
    return null;
  }

  private async readSession(hash: string, now: number): Promise<SessionRow | undefined> {
    const dialect = dialectOf(this.db);
    let sql = SESSION_SQL.get(dialect.name);
    if (!sql) SESSION_SQL.set(dialect.name, (sql = sessionSql(dialect.stringAggregate('r.role', ' '))));
    return (await selectRows<SessionRow>(this.db, sql, [hash, now]))[0];
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
    let token = csrfTokens.get(session);
    if (token === undefined) csrfTokens.set(session, (token = sign(this.key(), `csrf-session:${session.id}`)));
    return token;
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
