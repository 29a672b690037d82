/**
 * The farm being moved in, read over its API as any client reads it: a farmOS 2.x, 3.x or 4.x
 * server, or another Tilth. Signs in (a token, client credentials, or the password grant), reads
 * `/api` (its `meta.farm.version` chooses the shape its records are read in, shapes.ts), pages
 * collections by a stable key (the records' own `drupal_internal__*` number, sorted, each page
 * asking for numbers above the last one seen) so that records written at the source meanwhile are
 * neither lost nor read twice, and downloads file bytes. Network errors, 5xx, 429 and answers that
 * are not JSON are retried with backoff; what still fails is a SourceError naming the URL.
 *
 * It trusts nothing the source sends (people point it at servers they do not control): each JSON
 * document is read up to a cap, each request up to a timeout; a redirect is followed only on the
 * source's own origin and never from the token endpoint (the credentials would go along); a
 * revision history's `links.next` that comes back, or never ends, is an error naming the record.
 */
import { Readable } from 'node:stream';
import { READABLE_VERSIONS, readResource, shapeOf, type SourceShape } from './shapes.ts';

/** What the source would not give, named for the operator; `status` is the source's HTTP answer, when it gave one. */
export class SourceError extends Error {
  constructor(
    message: string,
    readonly status?: number,
  ) {
    super(message);
  }
}

/** An answer larger than the cap: not retried (it would be as large again). */
class DocumentTooLarge extends SourceError {}

/** How to sign in to the source. */
export type SourceAuth =
  | { kind: 'token'; token: string }
  | { kind: 'client'; clientId: string; clientSecret: string; scope?: string }
  | { kind: 'password'; username: string; password: string; clientId: string; scope?: string };

/** A JSON:API resource object as the source serves it. */
export interface SourceResource {
  type: string;
  id: string;
  attributes?: Record<string, unknown>;
  relationships?: Record<string, { data?: unknown }>;
}

export interface SourceOptions {
  /** Attempts per request before giving up (the first included). */
  attempts?: number;
  /** The first wait between attempts, doubled each time. */
  backoffMs?: number;
  /** Records per page; farmOS serves at most 50. */
  pageSize?: number;
  /** How long one request may take, its answer read whole (the CLI's --timeout). */
  timeoutMs?: number;
  /** The largest JSON document read (TILTH_IMPORT_MAX_DOCUMENT_MB); a larger one is a SourceError. */
  maxDocumentBytes?: number;
  /** The most past revisions one record may have (`--revisions`). */
  maxRevisions?: number;
}

/** Redirects followed for one request (each on the source's own origin). */
const MAX_REDIRECTS = 5;
const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);

/** What the password grant's refusal means on farmOS 3.x, and what to do instead. */
export const PASSWORD_GRANT_HELP =
  'The source refused the password grant. farmOS 3.x ships it as an optional module: enable simple_oauth_password_grant ' +
  '(and farm_api_default_consumer for the "farm" client) at the source, or sign in another way: --client-id and --client-secret ' +
  '(a client with the client_credentials grant), or --token with an access token.';

/**
 * What a farmOS 4.x needs before it can be read (its 4.0 release post, "Default module changes"):
 * the API module is no longer installed by default, the OAuth2 server is a module of its own, and
 * its keys are not generated on install.
 */
export const FARMOS4_API_HELP =
  'farmOS 4.x does not install its API by default: at the source, run drush en farm_api farm_api_oauth farm_api_default_consumer ' +
  '(farm_api_default_consumer gives the "farm" client; add simple_oauth_password_grant for --username), ' +
  'then drush simple-oauth:generate-keys ../keys (farmOS 4.x does not generate the OAuth2 keys; the key paths are set under ' +
  'Administration > Configuration > Web services > Consumers > Settings).';

/** simple_oauth's server_error when its key files are not there (Oauth2GrantManager checkKeyPaths). */
const MISSING_KEYS = /You need to set the OAuth2/i;

const RETRIED_STATUSES = new Set([408, 425, 429, 500, 502, 503, 504]);

export interface PageOptions {
  /** Only records whose `changed` is at or after this (seconds, the source's clock). */
  changedSince?: number;
  /** Only each record's type, UUID and own number. */
  idsOnly?: boolean;
  /** Only records whose own number is above this one. */
  after?: number;
  /** Only records whose own number is at most this one. */
  upTo?: number;
}

export class FarmSource {
  readonly base: string;
  /** The source's clock (its last answer's Date header, in seconds), or null when it sends none. */
  sourceNow: number | null = null;
  private token: string | null = null;
  /** The source's `/api` document and the shape it says its records are in, once read (entryPoint). */
  private entry: { document: any; shape: SourceShape } | null = null;
  private readonly attempts: number;
  private readonly backoffMs: number;
  readonly pageSize: number;
  private readonly timeoutMs: number;
  private readonly maxDocumentBytes: number;
  private readonly maxRevisions: number;

  constructor(
    url: string,
    private readonly auth: SourceAuth,
    options: SourceOptions = {},
  ) {
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      throw new SourceError(`--url: "${url}" is not a URL; give the farm's address, e.g. https://farm.example.org.`);
    }
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')
      throw new SourceError(`--url: "${url}" must start with http:// or https://.`);
    // The API's address (what a server prints, `…/api`) names the same farm: its base is above it.
    parsed.pathname = parsed.pathname.replace(/\/api\/*$/, '');
    this.base = parsed.toString().replace(/\/+$/, '');
    this.attempts = options.attempts ?? 5;
    this.backoffMs = options.backoffMs ?? 500;
    this.pageSize = options.pageSize ?? 50;
    this.timeoutMs = options.timeoutMs ?? 120_000;
    this.maxDocumentBytes = options.maxDocumentBytes ?? 64 * 1024 * 1024;
    this.maxRevisions = options.maxRevisions ?? 10_000;
  }

  /** Sign in: get the access token every request carries. */
  async signIn(): Promise<void> {
    if (this.auth.kind === 'token') {
      this.token = this.auth.token;
      return;
    }
    const form = new URLSearchParams(
      this.auth.kind === 'client'
        ? { grant_type: 'client_credentials', client_id: this.auth.clientId, client_secret: this.auth.clientSecret }
        : {
            grant_type: 'password',
            client_id: this.auth.clientId,
            username: this.auth.username,
            password: this.auth.password,
          },
    );
    if (this.auth.scope) form.set('scope', this.auth.scope);
    const url = `${this.base}/oauth/token`;
    const res = await this.send(
      url,
      {
        method: 'POST',
        headers: { 'Content-Type': 'application/x-www-form-urlencoded', Accept: 'application/json' },
        body: form.toString(),
      },
      { authorized: false },
    );
    // An OAuth error is a JSON body with a 400 or 401: read it whatever the status.
    const text = await this.readText(res, url);
    let body: Record<string, unknown> = {};
    try {
      body = JSON.parse(text) ?? {};
    } catch {
      /* not JSON: named by its status below */
    }
    if (res.ok && typeof body.access_token === 'string') {
      this.token = body.access_token;
      return;
    }
    // A server error says nothing of the address; a 2xx or 4xx with no OAuth error says --url is not
    // the farm's own address (a page of it, another server).
    if (typeof body.error !== 'string' && res.status >= 500)
      throw new SourceError(`Signing in to ${this.base} failed (HTTP ${res.status}).`);
    if (typeof body.error !== 'string') {
      // farmOS 4.x without its OAuth2 server has no token endpoint at all: a 404, as for a wrong address.
      const farmos4 =
        res.status === 404 ? ` If it is, and it runs farmOS 4.x, its OAuth2 server is off. ${FARMOS4_API_HELP}` : '';
      throw new SourceError(
        `Signing in to ${this.base} failed: ${url} answered ${res.status}${res.ok ? ' without an access token' : ''}, which is not an OAuth answer: give --url the farm's own address, the one its web pages are at (e.g. https://farm.example.org).${farmos4}`,
      );
    }
    const error = body.error;
    const description = typeof body.error_description === 'string' ? body.error_description : '';
    if (error === 'server_error' && MISSING_KEYS.test(description))
      throw new SourceError(
        `Signing in to ${this.base} failed: its OAuth2 server has no keys (${description}). farmOS 4.x does not generate them on install: at the source, run drush simple-oauth:generate-keys ../keys and set the key paths under Administration > Configuration > Web services > Consumers > Settings.`,
      );
    if (
      this.auth.kind === 'password' &&
      (error === 'unsupported_grant_type' || (error === 'invalid_client' && this.auth.clientId === 'farm'))
    ) {
      throw new SourceError(`${PASSWORD_GRANT_HELP} (The source answered ${error}.)`);
    }
    const detail = description ? `: ${description}` : '';
    throw new SourceError(`Signing in to ${this.base} failed (${error}${detail}).`);
  }

  /**
   * The source's `/api` document, read once, and the shape its records are in (its
   * `meta.farm.version`). A 404 is a farmOS 4.x with its API off, or not a farm: the error says
   * what to enable; a version not in shapes.ts's table is an error naming it.
   */
  async entryPoint(): Promise<{ document: any; shape: SourceShape }> {
    if (this.entry) return this.entry;
    let document: any;
    try {
      document = await this.getJson('/api');
    } catch (error) {
      if (error instanceof SourceError && error.status === 404)
        throw new SourceError(
          `${this.base}/api answered 404: this is not a farm's address, or the farm runs farmOS 4.x with its API off. ${FARMOS4_API_HELP}`,
          404,
        );
      throw error;
    }
    const links = document?.links && typeof document.links === 'object' ? Object.keys(document.links) : [];
    if (!links.length)
      throw new SourceError(
        `${this.base}/api lists no resource types, so it is not a farm's API: give --url the farm's own address (e.g. https://farm.example.org), that of a ${READABLE_VERSIONS.replace(' and ', ' or ')} server or a Tilth.`,
      );
    const version: unknown = document?.meta?.farm?.version;
    const shape = shapeOf(version);
    if (!shape)
      throw new SourceError(
        typeof version === 'string'
          ? `${this.base}/api says it runs farmOS ${JSON.stringify(version)} (meta.farm.version), a version this Tilth cannot read: it reads ${READABLE_VERSIONS}.`
          : `${this.base}/api does not say which farmOS it runs (no meta.farm.version), so its records cannot be read in their shape: this Tilth reads ${READABLE_VERSIONS}.`,
      );
    this.entry = { document, shape };
    return this.entry;
  }

  /** Source documents in this farm's shape (shapes.ts): the entry point is read first, once. */
  private async read(resources: SourceResource[]): Promise<SourceResource[]> {
    const { shape } = await this.entryPoint();
    return resources.map((r) =>
      r && typeof r === 'object' && typeof r.type === 'string' ? readResource(shape, r) : r,
    );
  }

  /** GET a JSON document at a path of the source (or an absolute URL on it). */
  async getJson(pathOrUrl: string): Promise<any> {
    const url = this.absolute(pathOrUrl);
    for (let attempt = 1; ; attempt++) {
      const res = await this.send(url, { headers: { Accept: 'application/vnd.api+json' } });
      try {
        return readJson(res, url, await this.readText(res, url));
      } catch (error) {
        // A truncated or HTML answer: the source may be restarting; try again, then give up naming it.
        if (!res.ok || error instanceof DocumentTooLarge || attempt >= this.attempts) throw error;
        await sleep(this.backoffMs * 2 ** (attempt - 1));
      }
    }
  }

  /**
   * Every record of a resource type, a page at a time, in the order of their own numbers: each
   * page asks for numbers above the last one seen (keyset), never for an offset.
   */
  async *pages(type: string, internalId: string, options: PageOptions = {}): AsyncGenerator<SourceResource[]> {
    const [entityType, bundle] = type.split('--');
    let after: number | null = options.after ?? null;
    for (;;) {
      const q = new URLSearchParams({ sort: internalId, 'page[limit]': String(this.pageSize) });
      // Its own number only (sparse fieldsets): what --prune needs to know a record is still there.
      if (options.idsOnly) q.set(`fields[${type}]`, internalId);
      if (options.changedSince !== undefined) {
        // At or after (>=): records written in the same second as the mark are read again, and skipped by their digest.
        q.set('filter[since][condition][path]', 'changed');
        q.set('filter[since][condition][operator]', '>=');
        q.set('filter[since][condition][value]', String(options.changedSince));
      }
      if (options.upTo !== undefined) {
        q.set('filter[upto][condition][path]', internalId);
        q.set('filter[upto][condition][operator]', '<=');
        q.set('filter[upto][condition][value]', String(options.upTo));
      }
      if (after !== null) {
        q.set('filter[after][condition][path]', internalId);
        q.set('filter[after][condition][operator]', '>');
        q.set('filter[after][condition][value]', String(after));
      }
      const doc = await this.getJson(`/api/${entityType}/${bundle}?${q}`);
      if (!doc || !Array.isArray(doc.data))
        throw new SourceError(`${this.base}/api/${entityType}/${bundle}: the answer has no "data" list.`);
      const page = await this.read(doc.data as SourceResource[]);
      if (!page.length) return;
      yield page;
      const last = Number(page[page.length - 1]!.attributes?.[internalId]);
      if (!Number.isFinite(last))
        throw new SourceError(
          `${this.base}/api/${entityType}/${bundle}: the records have no ${internalId} to page by.`,
        );
      if (options.upTo !== undefined && last > options.upTo)
        throw new SourceError(
          `${this.base}/api/${entityType}/${bundle}: the source ignored the ${internalId} filter (<= ${options.upTo}).`,
        );
      if (after !== null && last <= after)
        throw new SourceError(
          `${this.base}/api/${entityType}/${bundle}: the source ignored the ${internalId} filter (the same page came back).`,
        );
      after = last;
      if (page.length < this.pageSize && !doc.links?.next) return;
    }
  }

  /**
   * The highest own number of a resource type's records (those changed since, with that option),
   * asked for as one record sorted the other way; null when there is none or the source will not say.
   */
  async highest(type: string, internalId: string, options: PageOptions = {}): Promise<number | null> {
    const [entityType, bundle] = type.split('--');
    const q = new URLSearchParams({ sort: `-${internalId}`, 'page[limit]': '1', [`fields[${type}]`]: internalId });
    if (options.changedSince !== undefined) {
      q.set('filter[since][condition][path]', 'changed');
      q.set('filter[since][condition][operator]', '>=');
      q.set('filter[since][condition][value]', String(options.changedSince));
    }
    const top = Number((await this.getJson(`/api/${entityType}/${bundle}?${q}`))?.data?.[0]?.attributes?.[internalId]);
    return Number.isFinite(top) ? top : null;
  }

  /**
   * Every record of a resource type as pages(), several pages in flight: after a first full page,
   * the numbers up to the highest (asked for once, sorted the other way) are cut into `lanes`
   * ranges, each paged by its own keyset, the last one open (records added meanwhile come in it).
   * Pages come as they arrive, not in number order; a lane's failure is the whole listing's.
   */
  async *pagesInLanes(
    type: string,
    internalId: string,
    options: PageOptions = {},
    lanes = 4,
  ): AsyncGenerator<SourceResource[]> {
    const first = this.pages(type, internalId, options);
    const head = await first.next();
    if (head.done) return;
    yield head.value;
    if (head.value.length < this.pageSize || lanes < 2) {
      yield* first;
      return;
    }
    await first.return(undefined);
    const from = Number(head.value[head.value.length - 1]!.attributes?.[internalId]);
    const top = await this.highest(type, internalId, options);
    // A source that would not sort the other way (or answered oddly): one lane, as pages() reads.
    if (top === null || top <= from) {
      yield* this.pages(type, internalId, { ...options, after: from });
      return;
    }
    const step = Math.ceil((top - from) / lanes);
    const readers = Array.from({ length: lanes }, (_, i) =>
      this.pages(type, internalId, {
        ...options,
        after: from + i * step,
        upTo: i === lanes - 1 ? undefined : from + (i + 1) * step,
      }),
    );
    const pending = new Map<number, Promise<{ lane: number; result: IteratorResult<SourceResource[]> }>>();
    const ask = (lane: number) =>
      pending.set(
        lane,
        readers[lane]!.next().then((result) => ({ lane, result })),
      );
    readers.forEach((_, lane) => ask(lane));
    try {
      while (pending.size) {
        const { lane, result } = await Promise.race(pending.values());
        if (result.done) {
          pending.delete(lane);
          continue;
        }
        ask(lane);
        yield result.value;
      }
    } finally {
      // Stopped early (a failure, or the caller gave up): the other lanes' requests are let go.
      for (const p of pending.values()) p.catch(() => undefined);
      await Promise.allSettled(readers.map((r) => r.return(undefined)));
    }
  }

  /**
   * A record's past revisions, oldest first, without the current one, from Tilth's
   * `/revision-history` (farmOS serves none: an empty list when the source answers 404).
   */
  async history(type: string, uuid: string, currentRevision: unknown): Promise<SourceResource[]> {
    const [entityType, bundle] = type.split('--');
    const out: SourceResource[] = [];
    const record = `The revision history of ${type} ${uuid}`;
    // Pages already read: a `links.next` back to one of them would be followed forever.
    const seen = new Set<string>();
    let next: string | null = `/api/${entityType}/${bundle}/${uuid}/revision-history?page[limit]=50`;
    while (next) {
      const url = new URL(this.absolute(next)).toString();
      if (seen.has(url))
        throw new SourceError(
          `${record}: its next page ${url} came back again (a page read before); not read further.`,
        );
      seen.add(url);
      let doc: any;
      try {
        doc = await this.getJson(url);
      } catch (error) {
        if (error instanceof SourceError && error.status === 404) return [];
        throw error;
      }
      const page = (doc?.data ?? []) as SourceResource[];
      if (!Array.isArray(page)) throw new SourceError(`${record}: ${url} has no "data" list.`);
      next = typeof doc?.links?.next?.href === 'string' ? doc.links.next.href : null;
      if (!page.length && next)
        throw new SourceError(`${record}: ${url} has no revisions, yet a next page (no progress); not read further.`);
      out.push(...(await this.read(page)));
      if (out.length > this.maxRevisions)
        throw new SourceError(
          `${record}: the source serves more than ${this.maxRevisions} revisions of it; not read further.`,
        );
    }
    return out.filter((r) => r.attributes?.drupal_internal__revision_id !== currentRevision).reverse();
  }

  /** A file's bytes, as a stream (the token is sent: private files need it). */
  async download(href: string): Promise<Readable> {
    const url = this.onSource(href);
    const res = await this.send(url, { headers: { Accept: '*/*' } });
    if (!res.ok || !res.body) throw new SourceError(`${url} answered ${res.status}.`);
    return Readable.fromWeb(res.body as import('node:stream/web').ReadableStream);
  }

  /** An API path of the source (`/api/…`, after its base, which may have a path of its own), or an absolute URL on it. */
  private absolute(pathOrUrl: string): string {
    if (!/^https?:\/\//i.test(pathOrUrl)) return `${this.base}${pathOrUrl}`;
    return this.onSource(pathOrUrl);
  }

  /** A URL a document gave (a file's, root-relative as farmOS writes them), refused when it is not on the source. */
  private onSource(href: string): string {
    const url = new URL(href, `${this.base}/`);
    // Only the source's own origin gets the token.
    if (url.origin !== new URL(this.base).origin)
      throw new SourceError(`${href} is not on ${this.base}; its bytes are not fetched with the source's token.`);
    return url.toString();
  }

  /**
   * One request, retried with backoff on network errors and the statuses that mean "try later".
   * A 401 with credentials that can sign in again (a token that expired mid-import) signs in once more.
   * `authorized: false` is the sign-in's own request: no bearer token, no signing in again, no redirect followed.
   */
  private async send(
    url: string,
    init: RequestInit,
    { authorized = true }: { authorized?: boolean } = {},
  ): Promise<Response> {
    let signedInAgain = false;
    let redirects = 0;
    for (let attempt = 1; ; attempt++) {
      const headers = new Headers(init.headers);
      if (authorized && this.token) headers.set('Authorization', `Bearer ${this.token}`);
      let res: Response;
      try {
        // Redirects by hand: fetch would follow them anywhere, with the body and the credentials.
        res = await fetch(url, { ...init, headers, redirect: 'manual', signal: AbortSignal.timeout(this.timeoutMs) });
      } catch (error) {
        if (attempt >= this.attempts)
          throw new SourceError(`${url}: ${this.describeFailure(error)} (after ${attempt} attempts).`);
        await sleep(this.backoffMs * 2 ** (attempt - 1));
        continue;
      }
      if (REDIRECT_STATUSES.has(res.status)) {
        await res.body?.cancel();
        url = this.redirectTarget(url, res, { authorized, hops: ++redirects });
        attempt--;
        continue;
      }
      const date = Date.parse(res.headers.get('date') ?? '');
      if (Number.isFinite(date)) this.sourceNow = Math.floor(date / 1000);
      if (res.status === 401 && authorized && this.auth.kind !== 'token' && !signedInAgain) {
        await res.body?.cancel();
        signedInAgain = true;
        await this.signIn();
        continue;
      }
      if (RETRIED_STATUSES.has(res.status) && attempt < this.attempts) {
        await res.body?.cancel();
        const retryAfter = Number(res.headers.get('retry-after'));
        await sleep(
          Number.isFinite(retryAfter) && retryAfter > 0
            ? Math.min(retryAfter * 1000, 30_000)
            : this.backoffMs * 2 ** (attempt - 1),
        );
        continue;
      }
      return res;
    }
  }

  /**
   * Where a redirect may be followed: on the source's own origin (the token goes only there), a
   * few hops at most (`hops`: this one's number). The token endpoint's (not `authorized`) is
   * refused whatever its target: the credentials sent there (a client secret, a password) would be
   * sent on.
   */
  private redirectTarget(
    url: string,
    res: Response,
    { authorized, hops }: { authorized: boolean; hops: number },
  ): string {
    const location = res.headers.get('location');
    if (!location) throw new SourceError(`${url} answered ${res.status} (a redirect) without saying where to.`);
    let target: URL;
    try {
      target = new URL(location, url);
    } catch {
      throw new SourceError(`${url} redirects to "${location}", which is not a URL.`);
    }
    if (!authorized)
      throw new SourceError(
        `${url} redirects to ${target}: credentials are not sent on to another address. If that is the farm's own address, give it to --url.`,
      );
    if (target.origin !== new URL(this.base).origin)
      throw new SourceError(
        `${url} redirects to ${target}, which is not on ${this.base}: not followed (the source's token and what it answers stay on the source).`,
      );
    if (hops > MAX_REDIRECTS)
      throw new SourceError(`${url} redirects more than ${MAX_REDIRECTS} times; not followed further.`);
    return target.toString();
  }

  /** A request that failed with no answer, said as a person reads it. */
  private describeFailure(error: unknown): string {
    // AbortSignal.timeout's DOMException: its `code` is a number, its name says what happened.
    if ((error as Error)?.name === 'TimeoutError')
      return `no complete answer within ${this.timeoutMs / 1000} s (--timeout)`;
    const cause = (error as { cause?: { message?: string } }).cause;
    return cause ? String(cause.message ?? cause) : String((error as Error)?.message ?? error);
  }

  /**
   * An answer's body as text, read as it arrives and given up past the cap: a document that
   * never ends costs the cap, not the machine's memory. A failure mid-body names the URL.
   */
  private async readText(res: Response, url: string): Promise<string> {
    const tooLarge = () =>
      new DocumentTooLarge(
        `${url} answered more than ${this.maxDocumentBytes / 1_048_576} MB (TILTH_IMPORT_MAX_DOCUMENT_MB); not read further.`,
      );
    if (Number(res.headers.get('content-length')) > this.maxDocumentBytes) {
      await res.body?.cancel();
      throw tooLarge();
    }
    if (!res.body) return '';
    const reader = res.body.getReader();
    const parts: Uint8Array[] = [];
    let size = 0;
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        size += value.byteLength;
        if (size > this.maxDocumentBytes) {
          await reader.cancel().catch(() => undefined);
          throw tooLarge();
        }
        parts.push(value);
      }
    } catch (error) {
      if (error instanceof SourceError) throw error;
      throw new SourceError(`${url}: ${this.describeFailure(error)}.`);
    }
    return Buffer.concat(parts).toString('utf8');
  }
}

function readJson(res: Response, url: string, text: string): any {
  if (!res.ok) {
    let detail = '';
    try {
      detail = JSON.parse(text).errors?.[0]?.detail ?? '';
    } catch {
      /* not JSON */
    }
    throw new SourceError(`${url} answered ${res.status}${detail ? `: ${detail}` : ''}.`, res.status);
  }
  try {
    return JSON.parse(text);
  } catch {
    const kind = /^\s*</.test(text) ? 'HTML, not JSON' : 'JSON that does not parse (truncated?)';
    throw new SourceError(`${url} answered ${kind}.`);
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
