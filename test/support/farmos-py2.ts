/**
 * farmOS.py 2.0.0's client (farmOS/farmOS.py at 37fe65f "Release 2.0.0", 2026-07-08), redone over
 * fetch so that its functional tests can be ported to TypeScript: farmOS.py cannot be installed
 * here (its dependencies, httpx, httpx_auth and pydantic, need a Python package index). Only what
 * its tests call is here, and each piece sends what the Python sends: the same methods, paths,
 * query strings, headers and bodies, and above all the same URL joining.
 *
 * URL joining. `FarmClient(hostname)` is an `httpx.Client(base_url=hostname)`. httpx keeps the
 * base URL with a trailing slash (`_enforce_trailing_slash`) and merges every relative URL onto it
 * (httpx/_client.py, `BaseClient._merge_url`):
 *
 *     merge_url = URL(url)
 *     if merge_url.is_relative_url:
 *         # To merge URLs we always append to the base URL. To get this
 *         # behaviour correct we always ensure the base URL ends in a '/'
 *         # separator, and strip any leading '/' from the merge URL.
 *         merge_raw_path = self.base_url.raw_path + merge_url.raw_path.lstrip(b"/")
 *         return self.base_url.copy_with(raw_path=merge_raw_path)
 *     return merge_url
 *
 * farmOS.py's paths are relative ("api/asset/equipment", "api", "subrequests"), and its `iterate`
 * (farmOS/_sync/resource.py) keeps only the path and query of `links.next` and requests that, so
 * the hostname's path is joined onto it a second time:
 *
 *     next_url = response["links"]["next"]["href"]
 *     parsed_url = urlparse(next_url)
 *     next_path = parsed_url._replace(scheme="", netloc="").geturl()
 *     response = self.client.request(method="GET", url=next_path)
 *
 * With `hostname="https://farm.example.org/v4"` and a next link under `/v4/api/…` it asks for
 * `/v4/v4/api/…` (issue 39).
 *
 * Auth. The tests authenticate with httpx_auth's `OAuth2ResourceOwnerPasswordCredentials(
 * token_url=f"{hostname}/oauth/token", username, password, client_id="farm", client_secret=None,
 * scope="farm_manager")`: a form POST of `grant_type=password&username&password&scope` followed by
 * its extra keyword arguments as body parameters (`self.data.update(kwargs)`), httpx encoding None
 * as an empty value, and no client authentication header (`client_auth` is None). Any error status
 * raises `InvalidGrantRequest` (httpx_auth/_oauth2/common.py `request_new_grant_with_post`:
 * `if response.is_error: raise InvalidGrantRequest(response)`); the token is cached and sent as
 * `Authorization: Bearer <token>`.
 */

/** The headers an `httpx.Client` sends with every request (httpx 0.28's defaults). */
const HTTPX_HEADERS = {
  Accept: '*/*',
  'Accept-Encoding': 'gzip, deflate',
  'User-Agent': 'python-httpx/0.28.1',
};

/** httpx_auth's error for any error status from the token endpoint, with its RFC 6749 §5.2 body. */
export class InvalidGrantRequest extends Error {
  constructor(
    readonly status: number,
    readonly body: Record<string, unknown> | undefined,
  ) {
    super(`token endpoint answered ${status}: ${JSON.stringify(body)}`);
  }
}

/** Every fetch the client made, as method and URL path with query: what the server was asked for. */
export interface SentRequest {
  method: string;
  path: string;
  status: number;
}

/** The httpx base URL: the hostname with a trailing slash on its path. */
function baseUrl(hostname: string): URL {
  const url = new URL(hostname);
  if (!url.pathname.endsWith('/')) url.pathname += '/';
  return url;
}

/** httpx's `_merge_url`: a relative URL's path (leading slashes stripped) appended to the base's path. */
export function mergeUrl(base: URL, url: string): URL {
  if (/^[a-z][a-z0-9+.-]*:/i.test(url) || url.startsWith('//')) return new URL(url);
  return new URL(`${base.origin}${base.pathname}${url.replace(/^\/+/, '')}`);
}

/** farmOS.py's `urlparse(next_url)._replace(scheme="", netloc="").geturl()`: path, query and fragment. */
export function pathOfNext(next: string): string {
  const url = new URL(next);
  return `${url.pathname}${url.search}${url.hash}`;
}

/** httpx_auth's OAuth2ResourceOwnerPasswordCredentials, as farmOS.py's conftest builds it. */
export class PasswordCredentials {
  private token: { access: string; expiresAt: number } | null = null;

  constructor(
    readonly options: {
      token_url: string;
      username: string;
      password: string;
      client_id: string;
      client_secret: string | null;
      scope: string;
    },
  ) {}

  /** `auth.request_new_token()`: (state, token, expires_in, refresh_token). */
  async request_new_token(): Promise<[string, string, number, string | undefined]> {
    const o = this.options;
    // self.data = {grant_type, username, password}; scope; then kwargs (client_id, client_secret).
    const form = new URLSearchParams();
    form.append('grant_type', 'password');
    form.append('username', o.username);
    form.append('password', o.password);
    if (o.scope) form.append('scope', o.scope);
    form.append('client_id', o.client_id);
    form.append('client_secret', o.client_secret ?? '');
    const res = await fetch(o.token_url, {
      method: 'POST',
      headers: { ...HTTPX_HEADERS, 'Content-Type': 'application/x-www-form-urlencoded' },
      body: form.toString(),
    });
    const text = await res.text();
    let body: Record<string, any> | undefined;
    try {
      body = JSON.parse(text);
    } catch {
      body = undefined;
    }
    if (res.status >= 400) throw new InvalidGrantRequest(res.status, body);
    const token = body?.access_token as string;
    const expiresIn = body?.expires_in as number;
    this.cache(token, expiresIn);
    return [`state-of-${o.username}`, token, expiresIn, body?.refresh_token as string | undefined];
  }

  /** `OAuth2.token_cache._add_access_token(state, token, expires_in)`. */
  cache(token: string, expiresIn: number): void {
    this.token = { access: token, expiresAt: Date.now() + expiresIn * 1000 };
  }

  /** The token sent with a request: the cached one until 30 s before it expires (early_expiry), else a new one. */
  async bearer(): Promise<string> {
    if (!this.token || this.token.expiresAt - 30_000 <= Date.now()) await this.request_new_token();
    return this.token!.access;
  }
}

export interface Response {
  status_code: number;
  headers: Headers;
  json(): any;
}

/** farmOS.py's `FarmClient` (an httpx.Client) with `info`, `resource`, `log`, `asset`, `term` and `subrequests`. */
export class FarmClient {
  readonly base: URL;
  readonly sent: SentRequest[] = [];
  readonly resource: ResourceBase;
  readonly log: ResourceHelper;
  readonly asset: ResourceHelper;
  readonly term: ResourceHelper;
  readonly subrequests: Subrequests;

  constructor(
    hostname: string,
    readonly auth: PasswordCredentials,
  ) {
    this.base = baseUrl(hostname);
    this.resource = new ResourceBase(this);
    this.log = new ResourceHelper(this.resource, 'log');
    this.asset = new ResourceHelper(this.resource, 'asset');
    this.term = new ResourceHelper(this.resource, 'taxonomy_term');
    this.subrequests = new Subrequests(this);
  }

  /** `client.request(method, url, params=…, json=…, content=…, headers=…)`. */
  async request(
    method: string,
    url: string,
    options: {
      params?: Record<string, string | number>;
      json?: unknown;
      content?: string;
      headers?: Record<string, string>;
    } = {},
  ): Promise<Response> {
    const target = mergeUrl(this.base, url);
    if (options.params && Object.keys(options.params).length) {
      for (const [key, value] of Object.entries(options.params)) target.searchParams.append(key, String(value));
    }
    const headers: Record<string, string> = {
      ...HTTPX_HEADERS,
      Authorization: `Bearer ${await this.auth.bearer()}`,
      ...(options.headers ?? {}),
    };
    let body: string | undefined = options.content;
    if (options.json !== undefined) {
      // httpx 0.28: json.dumps(json, ensure_ascii=False, separators=(",", ":"), allow_nan=False).
      body = JSON.stringify(options.json);
      if (!Object.keys(headers).some((h) => h.toLowerCase() === 'content-type'))
        headers['Content-Type'] = 'application/json';
    }
    const res = await fetch(target, { method, headers, body, redirect: 'manual' });
    const text = await res.text();
    this.sent.push({ method, path: `${target.pathname}${target.search}`, status: res.status });
    return {
      status_code: res.status,
      headers: res.headers,
      json: () => {
        try {
          return JSON.parse(text);
        } catch {
          throw new Error(
            `${method} ${target.pathname}${target.search}: ${res.status}, not JSON: ${text.slice(0, 300)}`,
          );
        }
      },
    };
  }

  /** `farm.info()`: GET api. */
  async info(): Promise<any> {
    return (await this.request('GET', 'api')).json();
  }
}

/** farmOS/_sync/resource.py `ResourceBase`. */
export class ResourceBase {
  constructor(private readonly client: FarmClient) {}

  static path(entityType: string, bundle?: string, recordId?: string): string {
    let path = `api/${entityType}/${bundle ?? entityType}`;
    if (recordId) path += `/${recordId}`;
    return path;
  }

  async get(entityType: string, bundle?: string, params?: Record<string, string | number>): Promise<any> {
    return (await this.client.request('GET', ResourceBase.path(entityType, bundle), { params: params ?? {} })).json();
  }

  async get_id(
    entityType: string,
    bundle: string | undefined,
    resourceId: string,
    params?: Record<string, string | number>,
  ): Promise<any> {
    return (
      await this.client.request('GET', ResourceBase.path(entityType, bundle, resourceId), { params: params ?? {} })
    ).json();
  }

  /** A generator over every page: `links.next`'s path and query, joined onto the base again. */
  async *iterate(entityType: string, bundle?: string, params?: Record<string, string | number>): AsyncGenerator<any> {
    let response = await this.get(entityType, bundle, params);
    for (;;) {
      for (const resource of response.data) yield resource;
      const next = response.links?.next?.href;
      // Python's KeyError ends the loop when there is no links.next.
      if (next === undefined) return;
      response = (await this.client.request('GET', pathOfNext(next))).json();
    }
  }

  /** POST without an id, PATCH with one; `Content-Type: application/vnd.api+json`; returns the body. */
  async send(entityType: string, bundle: string | undefined, payload: Record<string, any> = {}): Promise<any> {
    payload.type = `${entityType}--${bundle ?? entityType}`;
    const jsonPayload: { data: Record<string, unknown> } = { data: { ...payload } };
    const id = payload.id;
    delete payload.id;
    const headers = { 'Content-Type': 'application/vnd.api+json' };
    if (id) {
      jsonPayload.data.id = id;
      return (
        await this.client.request('PATCH', ResourceBase.path(entityType, bundle, id), { json: jsonPayload, headers })
      ).json();
    }
    return (
      await this.client.request('POST', ResourceBase.path(entityType, bundle), { json: jsonPayload, headers })
    ).json();
  }

  async delete(entityType: string, bundle: string | undefined, id: string): Promise<Response> {
    return this.client.request('DELETE', ResourceBase.path(entityType, bundle, id));
  }
}

/** `ResourceHelperBase`: AssetAPI, LogAPI and TermAPI. */
export class ResourceHelper {
  constructor(
    private readonly api: ResourceBase,
    readonly entityType: string,
  ) {}
  get(bundle: string, params?: Record<string, string | number>) {
    return this.api.get(this.entityType, bundle, params);
  }
  get_id(bundle: string, resourceId: string, params?: Record<string, string | number>) {
    return this.api.get_id(this.entityType, bundle, resourceId, params);
  }
  iterate(bundle: string, params?: Record<string, string | number>) {
    return this.api.iterate(this.entityType, bundle, params);
  }
  send(bundle: string, payload?: Record<string, any>) {
    return this.api.send(this.entityType, bundle, payload);
  }
  delete(bundle: string, id: string) {
    return this.api.delete(this.entityType, bundle, id);
  }
}

/** farmOS/subrequests_model.py `Subrequest`, before farmOS.py serializes it. */
export interface Subrequest {
  action: 'view' | 'create' | 'update' | 'replace' | 'delete' | 'exists' | 'discover' | 'noop';
  requestId?: string;
  endpoint?: string;
  uri?: string;
  body?: unknown;
  headers?: Record<string, string>;
  waitFor?: string[];
}

/** farmOS/_sync/subrequests.py `SubrequestsBase`. */
export class Subrequests {
  constructor(private readonly client: FarmClient) {}

  /** `farm.subrequests.send(blueprint, format=Format.json)`: POST subrequests?_format=json. */
  async send(blueprint: Subrequest[]): Promise<any> {
    const serialized = blueprint.map((sub) => {
      const headers: Record<string, string> = { ...(sub.headers ?? {}) };
      if (!('Accept' in headers)) headers.Accept = 'application/vnd.api+json';
      if (sub.body !== undefined && !('Content-Type' in headers)) headers['Content-Type'] = 'application/vnd.api+json';
      // model_dump_json(exclude_none=True) in the model's field order, `endpoint` set to None
      // (so left out) once it became the uri; the body a JSON string (the `serialize_body` validator).
      const out: Record<string, unknown> = { action: sub.action };
      out.uri = sub.uri ?? sub.endpoint;
      if (sub.requestId !== undefined) out.requestId = sub.requestId;
      if (sub.body !== undefined) out.body = typeof sub.body === 'string' ? sub.body : pythonJsonDumps(sub.body);
      out.headers = headers;
      if (sub.waitFor !== undefined) out.waitFor = sub.waitFor;
      return out;
    });
    const res = await this.client.request('POST', 'subrequests', {
      params: { _format: 'json' },
      headers: { 'Content-Type': 'application/json' },
      content: JSON.stringify(serialized),
    });
    return res.json();
  }
}

/** Python's `json.dumps(value)` with its defaults: `", "` and `": "` between members, non-ASCII escaped. */
export function pythonJsonDumps(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(pythonJsonDumps).join(', ')}]`;
  if (value !== null && typeof value === 'object')
    return `{${Object.entries(value)
      .map(([k, v]) => `${pythonJsonDumps(k)}: ${pythonJsonDumps(v)}`)
      .join(', ')}}`;
  return JSON.stringify(value).replace(
    /[\u007f-\uffff]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}
