/**
 * The one error catalogue. Every failure the server reports is one of these classes, and the
 * HTTP layer renders them: JSON:API error documents for /api, RFC 6749 bodies for /oauth.
 * Throw them from anywhere; never build error bodies by hand.
 */

const REASON: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  406: 'Not Acceptable',
  409: 'Conflict',
  413: 'Content Too Large',
  415: 'Unsupported Media Type',
  422: 'Unprocessable Content',
  424: 'Failed Dependency',
  429: 'Too Many Requests',
  500: 'Internal Server Error',
  502: 'Bad Gateway',
  503: 'Service Unavailable',
  504: 'Gateway Timeout',
};

export function reasonPhrase(status: number): string {
  return REASON[status] ?? 'Error';
}

export interface ErrorSource {
  /** JSON Pointer into the request document, e.g. `/data/attributes/name`. */
  pointer?: string;
  /** The query parameter at fault, e.g. `filter` or `page[limit]`. */
  parameter?: string;
}

/** One JSON:API error object. */
export interface ErrorObject {
  status: string;
  title: string;
  detail: string;
  code?: string;
  source?: ErrorSource;
  meta?: Record<string, unknown>;
}

/** A failure that maps to one HTTP status and one or more JSON:API error objects. */
export class ApiError extends Error {
  readonly status: number;
  readonly source?: ErrorSource;
  readonly code?: string;
  /** Extra response headers (Allow on 405, WWW-Authenticate on 401, Retry-After on 429). */
  readonly headers: Record<string, string>;

  constructor(status: number, detail: string, options: { source?: ErrorSource; code?: string; headers?: Record<string, string> } = {}) {
    super(detail);
    this.name = 'ApiError';
    this.status = status;
    this.source = options.source;
    this.code = options.code;
    this.headers = options.headers ?? {};
  }

  get detail(): string {
    return this.message;
  }

  toObjects(): ErrorObject[] {
    const object: ErrorObject = { status: String(this.status), title: reasonPhrase(this.status), detail: this.message };
    if (this.code) object.code = this.code;
    if (this.source) object.source = this.source;
    return [object];
  }
}

/** 400: a malformed document or query. Name the parameter or pointer at fault. */
export function badRequest(detail: string, source?: ErrorSource): ApiError {
  return new ApiError(400, detail, { source });
}

/** 400 for a query parameter. */
export function badParameter(parameter: string, detail: string): ApiError {
  return new ApiError(400, detail, { source: { parameter } });
}

export function unauthorized(detail: string, wwwAuthenticate: string): ApiError {
  return new ApiError(401, detail, { headers: { 'WWW-Authenticate': wwwAuthenticate } });
}

export function forbidden(detail: string, source?: ErrorSource): ApiError {
  return new ApiError(403, detail, { source });
}

export function notFound(detail: string, source?: ErrorSource): ApiError {
  return new ApiError(404, detail, { source });
}

export function methodNotAllowed(method: string, allowed: string[]): ApiError {
  return new ApiError(405, `The ${method} method is not supported for this route. Supported methods: ${allowed.join(', ')}.`, {
    headers: { Allow: allowed.join(', ') },
  });
}

export function conflict(detail: string, source?: ErrorSource): ApiError {
  return new ApiError(409, detail, { source });
}

export function unsupportedMediaType(detail: string): ApiError {
  return new ApiError(415, detail);
}

export function tooManyRequests(detail: string, retryAfterSeconds: number): ApiError {
  return new ApiError(429, detail, { headers: { 'Retry-After': String(Math.max(1, Math.ceil(retryAfterSeconds))) } });
}

/** One violated rule of one field, collected into a 422. */
export interface Violation {
  /** JSON Pointer, e.g. `/data/attributes/name` or `/data/relationships/asset/data/0`. */
  pointer: string;
  /** Plain sentence naming the field and what is wrong. */
  detail: string;
}

/** 422: the document is well formed but breaks the schema; one error object per violation. */
export class ValidationError extends ApiError {
  readonly violations: Violation[];

  constructor(violations: Violation[]) {
    super(422, violations.map((v) => v.detail).join(' '));
    this.name = 'ValidationError';
    this.violations = violations;
  }

  override toObjects(): ErrorObject[] {
    return this.violations.map((v) => ({ status: '422', title: reasonPhrase(422), detail: v.detail, source: { pointer: v.pointer } }));
  }
}

/** RFC 6749 §5.2 error codes, plus RFC 7009's unsupported_token_type. */
export type OAuthErrorCode =
  | 'invalid_request'
  | 'invalid_client'
  | 'invalid_grant'
  | 'unauthorized_client'
  | 'unsupported_grant_type'
  | 'invalid_scope'
  | 'access_denied'
  | 'unsupported_response_type'
  | 'unsupported_token_type'
  | 'server_error'
  | 'temporarily_unavailable'
  | 'slow_down';

const OAUTH_STATUS: Record<OAuthErrorCode, number> = {
  invalid_request: 400,
  invalid_client: 401,
  invalid_grant: 400,
  unauthorized_client: 400,
  unsupported_grant_type: 400,
  invalid_scope: 400,
  access_denied: 403,
  unsupported_response_type: 400,
  unsupported_token_type: 400,
  server_error: 500,
  temporarily_unavailable: 503,
  slow_down: 429,
};

/** An error of the OAuth endpoints, rendered as `{error, error_description}`. */
export class OAuthError extends Error {
  readonly error: OAuthErrorCode;
  readonly status: number;
  readonly headers: Record<string, string>;

  constructor(error: OAuthErrorCode, description: string, options: { status?: number; headers?: Record<string, string> } = {}) {
    super(description);
    this.name = 'OAuthError';
    this.error = error;
    this.status = options.status ?? OAUTH_STATUS[error];
    this.headers = options.headers ?? {};
  }

  toBody(): { error: OAuthErrorCode; error_description: string } {
    return { error: this.error, error_description: this.message };
  }
}

export const JSONAPI_VERSION = { version: '1.0', meta: { links: { self: { href: 'http://jsonapi.org/format/1.0/' } } } };

/** Render any thrown value as a JSON:API error document and its status. Unknown errors become a bare 500. */
export function toJsonApiErrorDocument(error: unknown): { status: number; headers: Record<string, string>; body: { jsonapi: typeof JSONAPI_VERSION; errors: ErrorObject[] } } {
  if (error instanceof ApiError) {
    return { status: error.status, headers: error.headers, body: { jsonapi: JSONAPI_VERSION, errors: error.toObjects() } };
  }
  return {
    status: 500,
    headers: {},
    body: { jsonapi: JSONAPI_VERSION, errors: [{ status: '500', title: reasonPhrase(500), detail: 'The server could not complete the request. The error has been logged.' }] },
  };
}
