/**
 * Helpers of the OAuth tests: form posts to the token endpoint, users and clients made through
 * the runtime's own account and client modules, PKCE pairs, and a cookie-keeping agent that walks
 * the login and consent pages with plain HTTP (the browser test does the same with Chromium).
 */
import { createHash, randomBytes } from 'node:crypto';
import { createUser } from '../../runtime/accounts/users.ts';
import { createClient, type NewClient } from '../../runtime/oauth/clients.ts';
import type { TestServer } from '../support/server.ts';

export const FORM = 'application/x-www-form-urlencoded';

export interface FormResponse {
  status: number;
  headers: Headers;
  body: any;
  text: string;
}

/** A response's status, headers, text and body parsed as JSON (undefined when it is not JSON). */
async function readResponse(res: Response): Promise<FormResponse> {
  const text = await res.text();
  let parsed: any;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    parsed = undefined;
  }
  return { status: res.status, headers: res.headers, body: parsed, text };
}

/** POST a form (a string is sent exactly as given, like farmOS.js's unencoded bodies). */
export async function postForm(
  url: string,
  form: string | Record<string, string>,
  headers: Record<string, string> = {},
): Promise<FormResponse> {
  const body = typeof form === 'string' ? form : new URLSearchParams(form).toString();
  return readResponse(
    await fetch(url, { method: 'POST', headers: { 'Content-Type': FORM, ...headers }, body, redirect: 'manual' }),
  );
}

/** POST /oauth/token. */
export function token(
  server: TestServer,
  form: string | Record<string, string>,
  headers: Record<string, string> = {},
): Promise<FormResponse> {
  return postForm(`${server.url}/oauth/token`, form, headers);
}

/** A password grant with the farm client; returns the token response body (throws unless 200). */
export async function passwordGrant(
  server: TestServer,
  username: string,
  password: string,
  scope?: string,
): Promise<{ access_token: string; refresh_token: string; expires_in: number; scope: string; token_type: string }> {
  const form: Record<string, string> = { grant_type: 'password', username, password, client_id: 'farm' };
  if (scope) form.scope = scope;
  const res = await token(server, form);
  if (res.status !== 200) throw new Error(`password grant for ${username} failed: ${res.status} ${res.text}`);
  return res.body;
}

/** An HTTP Basic header value. */
export function basic(id: string, secret: string): string {
  return `Basic ${Buffer.from(`${id}:${secret}`).toString('base64')}`;
}

let userCount = 0;

/** A user made with the accounts module; the password is `<name>-password`. */
export async function addUser(
  server: TestServer,
  roles: string[],
  name = `user${++userCount}-${randomBytes(3).toString('hex')}`,
  mail?: string,
) {
  const password = `${name}-password`;
  const account = await createUser(server.ctx.db.knex, { name, password, roles, mail: mail ?? null });
  return { ...account, password };
}

/** A client registered with the clients module (what `tilth client create` calls). */
export async function addClient(server: TestServer, input: Partial<NewClient> & { grantTypes: string[] }) {
  return createClient(server.ctx.db.knex, {
    clientId: `client-${randomBytes(4).toString('hex')}`,
    confidential: false,
    ...input,
  });
}

/** A PKCE verifier and its S256 challenge (RFC 7636 Appendix B's method). */
export function pkce(): { verifier: string; challenge: string } {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}

/** GET with a bearer token; returns the status and the parsed body. */
export async function api(url: string, accessToken?: string, init: RequestInit = {}): Promise<FormResponse> {
  const headers = new Headers(init.headers);
  if (accessToken !== undefined) headers.set('Authorization', `Bearer ${accessToken}`);
  if (!headers.has('Accept')) headers.set('Accept', 'application/vnd.api+json');
  return readResponse(await fetch(url, { ...init, headers, redirect: 'manual' }));
}

const unescapeHtml = (s: string) =>
  s
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&#96;/g, '`')
    .replace(/&amp;/g, '&');

/** The value of a hidden input of a page. */
export function hiddenField(html: string, name: string): string {
  const m = new RegExp(`name="${name}" value="([^"]*)"`).exec(html);
  if (!m) throw new Error(`no hidden field ${name} in:\n${html}`);
  return unescapeHtml(m[1]!);
}

/** A cookie-keeping HTTP agent that does not follow redirects, for the login and consent pages. */
export class FormAgent {
  private readonly cookies = new Map<string, string>();

  constructor(private readonly base: string) {}

  private async send(
    path: string,
    init: RequestInit,
  ): Promise<{ status: number; location: string | null; text: string; headers: Headers }> {
    const headers = new Headers(init.headers);
    if (this.cookies.size) headers.set('Cookie', [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; '));
    const res = await fetch(path.startsWith('http') ? path : `${this.base}${path}`, {
      ...init,
      headers,
      redirect: 'manual',
    });
    for (const line of res.headers.getSetCookie()) {
      const [pair] = line.split(';');
      const eq = pair!.indexOf('=');
      const name = pair!.slice(0, eq);
      const value = pair!.slice(eq + 1);
      if (/Max-Age=0|Expires=Thu, 01 Jan 1970/i.test(line) || value === '') this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
    return { status: res.status, location: res.headers.get('location'), text: await res.text(), headers: res.headers };
  }

  /** The cookies this agent holds (the session, the login form's CSRF binding). */
  cookieValues(): string[] {
    return [...this.cookies.values()];
  }

  get(path: string) {
    return this.send(path, { method: 'GET' });
  }

  post(path: string, form: Record<string, string>) {
    return this.send(path, {
      method: 'POST',
      headers: { 'Content-Type': FORM },
      body: new URLSearchParams(form).toString(),
    });
  }

  /** Sign in on the login page the authorization request showed; returns the response to the login POST. */
  async login(loginPage: string, username: string, password: string) {
    return this.post('/oauth/login', {
      csrf_token: hiddenField(loginPage, 'csrf_token'),
      return_to: hiddenField(loginPage, 'return_to'),
      username,
      password,
    });
  }

  /**
   * Walk an authorization request to its end: sign in if asked, then allow or deny on the consent
   * page. Returns the URL the server redirects to.
   */
  async authorize(
    query: Record<string, string>,
    user: { name: string; password: string },
    decision: 'allow' | 'deny' = 'allow',
  ): Promise<URL> {
    let page = await this.get(`/oauth/authorize?${new URLSearchParams(query)}`);
    if (page.status === 302) return new URL(page.location!);
    if (page.text.includes('action="/oauth/login"')) {
      const login = await this.login(page.text, user.name, user.password);
      if (login.status !== 303) throw new Error(`login failed: ${login.status} ${login.text}`);
      page = await this.get(login.location!);
      if (page.status === 302) return new URL(page.location!);
    }
    if (page.status !== 200 || !page.text.includes('/oauth/authorize/decision'))
      throw new Error(`no consent page: ${page.status} ${page.text}`);
    const answer = await this.post('/oauth/authorize/decision', {
      transaction_id: hiddenField(page.text, 'transaction_id'),
      csrf_token: hiddenField(page.text, 'csrf_token'),
      decision,
    });
    if (answer.status !== 302) throw new Error(`decision not redirected: ${answer.status} ${answer.text}`);
    return new URL(answer.location!);
  }
}
