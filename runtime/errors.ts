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
  408: 'Request Timeout',
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
  507: 'Insufficient Storage',
};

export function reasonPhrase(status: number): string {
  return REASON[status] ?? 'Error';
}

export interface ErrorSource {
  /** JSON Pointer into the request document, e.g. `/data/attributes/name`. */
  pointer?: string;
  /** The query parameter at fault, e.g. `filter` or `page[limit]`. */
  parameter?: string;
  /**
   * The field at fault, in the domain's words (entities/, accounts/, access/): each face places
   * it (the JSON:API face as `pointer`, jsonapi/errors.ts).
   */
  field?: FieldRef;
  /**
   * The record at fault as a whole (`'whole'`: a write refused to this caller) or its identifier
   * (`'id'`: a UUID already taken), in the domain's words: each face places it (the JSON:API face
   * as `pointer` `/data` or `/data/id`, jsonapi/errors.ts).
   */
  record?: 'whole' | 'id';
}

/**
 * The stable `code` of every JSON:API error object: what a program may branch on (the `detail`
 * sentence may be reworded). README.md's "Error codes" lists the same codes; a test keeps the two
 * equal. A status without a more specific code gets its default (`DEFAULT_CODE`).
 */
export const ERROR_CATALOGUE = {
  bad_request: { status: 400, meaning: 'The request is malformed: its body, a header or the URL.' },
  bad_parameter: { status: 400, meaning: 'A query parameter is invalid; `source.parameter` names it.' },
  unauthorized: { status: 401, meaning: 'No valid access token: sign in, or refresh the token.' },
  forbidden: { status: 403, meaning: "The token's scopes or the user's roles do not allow this." },
  referenced: {
    status: 403,
    meaning:
      'The record is not deleted: other records reference it (as in farmOS). The `detail` names them; delete them or change their references first.',
  },
  not_found: { status: 404, meaning: 'No such route, resource or revision (or one the caller may not know of).' },
  method_not_allowed: {
    status: 405,
    meaning: 'The route exists but not for this method; the `Allow` header lists those it takes.',
  },
  request_timeout: {
    status: 408,
    meaning: 'The request body stalled longer than `TILTH_BODY_TIMEOUT`; nothing was kept.',
  },
  conflict: {
    status: 409,
    meaning: 'The write collides with another: a UUID or unique value already taken, or a concurrent change.',
  },
  cursor_expired: {
    status: 410,
    meaning:
      'The change feed cursor is older than `TILTH_TOMBSTONE_DAYS` (deletions since may be forgotten), or ahead of the feed (a farm restored from a backup). Sync in full from `since=0`.',
  },
  precondition_failed: {
    status: 412,
    meaning:
      'The record changed since the `ETag` sent in `If-Match`: read it again, merge, and retry with its new `ETag`.',
  },
  payload_too_large: { status: 413, meaning: 'The request or the response would exceed a configured byte budget.' },
  unsupported_media_type: { status: 415, meaning: 'The body is not in a type or encoding this route takes.' },
  invalid_value: {
    status: 422,
    meaning: 'A value breaks a rule of the record type; `source.pointer` names the field (one error per violation).',
  },
  failed_dependency: { status: 424, meaning: 'A subrequest was not sent because one it waits for failed.' },
  rate_limited: { status: 429, meaning: 'Too many attempts; retry after the `Retry-After` header.' },
  internal_error: { status: 500, meaning: 'A fault in the server; it is logged with the request id.' },
  bad_gateway: { status: 502, meaning: 'A subrequest could not be sent.' },
  unavailable: {
    status: 503,
    meaning:
      'The database is busy, the server is starting, or it is reading as many request bodies, or running as many subrequests calls, as it holds at once; retry after `Retry-After`.',
  },
  gateway_timeout: { status: 504, meaning: 'A subrequest took too long.' },
  insufficient_storage: {
    status: 507,
    meaning: "The server's disk is full; nothing was saved. The farm's administrator must make room.",
  },
} as const satisfies Record<string, { status: number; meaning: string }>;

export type ErrorCode = keyof typeof ERROR_CATALOGUE;

/** The code of an error given only its status. */
const DEFAULT_CODE: Record<number, ErrorCode> = {
  400: 'bad_request',
  401: 'unauthorized',
  403: 'forbidden',
  404: 'not_found',
  405: 'method_not_allowed',
  408: 'request_timeout',
  409: 'conflict',
  412: 'precondition_failed',
  413: 'payload_too_large',
  415: 'unsupported_media_type',
  422: 'invalid_value',
  424: 'failed_dependency',
  429: 'rate_limited',
  500: 'internal_error',
  502: 'bad_gateway',
  503: 'unavailable',
  504: 'gateway_timeout',
  507: 'insufficient_storage',
};

/** One JSON:API error object. */
export interface ErrorObject {
  status: string;
  title: string;
  detail: string;
  code?: string;
  source?: ErrorSource;
  meta?: Record<string, unknown>;
  /** `via`: the request that failed, as Drupal's error objects name it. */
  links?: { via: { href: string } };
}

/** A failure that maps to one HTTP status and one or more JSON:API error objects. */
export class ApiError extends Error {
  readonly status: number;
  readonly source?: ErrorSource;
  readonly code: ErrorCode;
  /** Extra response headers (Allow on 405, WWW-Authenticate on 401, Retry-After on 429). */
  readonly headers: Record<string, string>;

  constructor(
    status: number,
    detail: string,
    options: { source?: ErrorSource; code?: ErrorCode; headers?: Record<string, string> } = {},
  ) {
    super(detail);
    this.name = 'ApiError';
    this.status = status;
    this.source = options.source;
    this.code = options.code ?? DEFAULT_CODE[status] ?? (status >= 500 ? 'internal_error' : 'bad_request');
    this.headers = options.headers ?? {};
  }

  get detail(): string {
    return this.message;
  }

  toObjects(): ErrorObject[] {
    const object: ErrorObject = {
      status: String(this.status),
      title: reasonPhrase(this.status),
      code: this.code,
      detail: this.message,
    };
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
  return new ApiError(400, detail, { source: { parameter }, code: 'bad_parameter' });
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

/**
 * A relationship item naming a record that is not here: the 404 Drupal answers, carrying the
 * identifier it names, so a caller that waits for the record (the importer, for a parent later in
 * its phase) tells it apart by its fields, not by its text.
 */
export class MissingReferenceError extends ApiError {
  constructor(
    readonly targetType: string,
    readonly targetId: string,
    source?: ErrorSource,
  ) {
    super(
      404,
      `The resource identified by ${targetType}:${targetId} (given as a relationship item) could not be found.`,
      { source },
    );
  }
}

export function methodNotAllowed(method: string, allowed: string[]): ApiError {
  return new ApiError(
    405,
    `The ${method} method is not supported for this route. Supported methods: ${allowed.join(', ')}.`,
    {
      headers: { Allow: allowed.join(', ') },
    },
  );
}

export function conflict(detail: string, source?: ErrorSource): ApiError {
  return new ApiError(409, detail, { source });
}

/** 507: the disk (or the database's size limit) is full. Not the client's fault: the operator must make room. */
export function insufficientStorage(): ApiError {
  return new ApiError(507, DISK_FULL_DETAIL);
}

/** The words for a full disk, the same whatever filled it (the database, an upload): the operator's to fix. */
export const DISK_FULL_DETAIL =
  "The server's disk is full, so nothing was saved. Tell the farm's administrator; retry once there is room.";

/** accounts/names.ts's words for a taken name, for the save that lost a race to the unique index. */
const TAKEN =
  'it is already taken: another account has it as its name or e-mail address (compared without regard to case).';

/**
 * What went wrong in the database (storage/db-errors.ts `classifyDatabaseError`), in the domain's
 * words, for a face to answer:
 * - `taken`: an account's name or e-mail address (`field`) another account has, a save that lost a
 *   race to the unique index (storage's core migration 0007);
 * - `duplicate`: another write created a row with the same UUID or key at the same time;
 * - `reference-gone`: a row this write references was deleted meanwhile (a foreign key);
 * - `collision`: the write collided with another one (serialization failure, deadlock);
 * - `busy`: the database is locked, or the write waited too long for the others;
 * - `schema-changed`: a statement prepared for a schema that changed under the server (its retry
 *   runs unprepared);
 * - `disk-full`: the disk (or the database's size limit) is full; the statement was undone;
 * - `wal-sync-failed`: the disk did not take the log (storage/wal-sync.ts); writes are refused.
 */
export type DatabaseFailure =
  | { kind: 'taken'; field: 'name' | 'mail' }
  | {
      kind: 'duplicate' | 'reference-gone' | 'collision' | 'busy' | 'schema-changed' | 'disk-full' | 'wal-sync-failed';
    };

export type DatabaseFailureKind = DatabaseFailure['kind'];

/**
 * The words for a failure of the database (`DatabaseFailure`), the same on
 * every face; each face chooses its status and document (jsonapi/errors.ts, oauth/oauth-errors.ts).
 */
export function databaseFailureDetail(failure: DatabaseFailure): string {
  switch (failure.kind) {
    case 'taken':
      return `${failure.field}: ${TAKEN}`;
    case 'duplicate':
      return 'Conflict: another request created the same resource at the same time. Fetch it, or retry with another id.';
    case 'reference-gone':
      return 'Conflict: a related resource was deleted while this request was being handled. Retry the request.';
    case 'collision':
      return 'Conflict: this write collided with another one. Retry the request.';
    case 'busy':
      return 'The database is busy. Retry in a moment.';
    case 'schema-changed':
      return "The database's schema changed while this request ran. Retry it.";
    case 'disk-full':
      return DISK_FULL_DETAIL;
    case 'wal-sync-failed':
      return 'The server could not make this write safe on its disk, so it may not be kept; writes are refused until the operator checks the disk and restarts Tilth.';
  }
}

export function unsupportedMediaType(detail: string): ApiError {
  return new ApiError(415, detail);
}

export function tooManyRequests(detail: string, retryAfterSeconds: number): ApiError {
  return new ApiError(429, detail, { headers: { 'Retry-After': String(Math.max(1, Math.ceil(retryAfterSeconds))) } });
}

/** A field of a record as a rule names it: its name, and whether it holds values or references (the model's kind). */
export interface FieldRef {
  kind: 'attribute' | 'relationship';
  name: string;
}

/**
 * One violated rule of one field, collected into a 422: in the domain's words, a field and the
 * item of it at fault. Each face places it on its own wire (the JSON:API face's `source.pointer`,
 * jsonapi/errors.ts; a form's message by the field).
 */
export interface Violation {
  /** The field at fault; null for the record as a whole. */
  field: FieldRef | null;
  /** The item of a multi-valued field at fault, counted from 0. */
  item?: number;
  /** Plain sentence naming the field and what is wrong. */
  detail: string;
}

/** A violation a face found in its own wire, where it is no field (JSON:API: `/data/id`, a relationship's `/data`): placed by that face. */
export interface WireViolation {
  /** JSON Pointer into the request document, e.g. `/data/id`. */
  pointer: string;
  detail: string;
}

/**
 * 422: the input is well formed but breaks the record type's rules; one error object per
 * violation, which the face renders (jsonapi/errors.ts makes each one's pointer).
 */
export class ValidationError extends ApiError {
  readonly violations: ReadonlyArray<Violation | WireViolation>;

  constructor(violations: ReadonlyArray<Violation | WireViolation>) {
    super(422, violations.map((v) => v.detail).join(' '));
    this.name = 'ValidationError';
    this.violations = violations;
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

/** The OAuth error codes and their statuses (RFC 6749 §5.2; invalid_client is 401 as in §5.2's Basic case). */
export const OAUTH_STATUS: Readonly<Record<OAuthErrorCode, number>> = {
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

  constructor(
    error: OAuthErrorCode,
    description: string,
    options: { status?: number; headers?: Record<string, string> } = {},
  ) {
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

export const JSONAPI_VERSION = {
  version: '1.0',
  meta: { links: { self: { href: 'http://jsonapi.org/format/1.0/' } } },
};

/**
 * Render any thrown value as a JSON:API error document and its status. Unknown errors become a
 * bare 500. `objects`: a face's error objects of an ApiError (the JSON:API face places a 422's
 * violations: jsonapi/errors.ts). `via` is the absolute URI of the request that failed: every error object names it in
 * `links.via`, as farmOS's do (farmos-behaviour.md §4.3), so a client logging one error knows
 * which call of a batch it came from.
 */
export function toJsonApiErrorDocument(
  error: unknown,
  via: string,
  objects: (error: ApiError) => ErrorObject[] = (e) => e.toObjects(),
): {
  status: number;
  headers: Record<string, string>;
  body: { jsonapi: typeof JSONAPI_VERSION; errors: ErrorObject[] };
} {
  const links = { via: { href: via } };
  if (error instanceof ApiError) {
    return {
      status: error.status,
      headers: error.headers,
      body: { jsonapi: JSONAPI_VERSION, errors: objects(error).map((e) => ({ ...e, links })) },
    };
  }
  return {
    status: 500,
    headers: {},
    body: {
      jsonapi: JSONAPI_VERSION,
      errors: [
        {
          status: '500',
          title: reasonPhrase(500),
          code: 'internal_error',
          detail: 'The server could not complete the request. The error has been logged.',
          links,
        },
      ],
    },
  };
}
