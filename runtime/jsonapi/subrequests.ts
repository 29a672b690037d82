/**
 * `POST /subrequests?_format=json`: several JSON:API requests in one call, in the blueprint
 * format of Drupal's subrequests 3.x module that farmOS.js and farmOS.py send (clients.md §1.7,
 * §2.1, §3; farmos-behaviour.md §8.4). Reading and checking the blueprint: subrequests/blueprint.ts;
 * the JSONPath of replacement tokens: subrequests/jsonpath.ts.
 *
 * Each sub-request is checked exactly as if it were sent alone, because it is: it goes over
 * loopback HTTP to this same server (`ctx.internalUrl`) with the caller's own Authorization
 * header, so authentication, permissions, validation and the one-transaction-per-request rule
 * apply unchanged. Only paths under /api are sent, and only ever to this server: the host of an
 * absolute `uri` (farmOS.py sends `http://host/api/…`) is ignored. Each sub-request commits or
 * fails on its own, as in Drupal: a failure does not undo the sub-requests that ran before it.
 *
 * The answer is a 200 JSON object keyed by Content-Id, in the order the sub-requests ran:
 * `{ "<id>": { "headers": { "status": [201], "content-id": ["<<id>>"], "content-type": […], … },
 * "body": "<the response document as a string>" } }`. Every header is an array, status included,
 * as Drupal's subrequests module renders them (clients.md §3): farmOS.py's own tests read
 * `headers.status[0]`; farmOS.js only JSON.parses `body`.
 */
import type { Request, Response } from 'express';
import type { AppContext } from '../context.ts';
import { ApiError, badParameter, type ErrorSource } from '../errors.ts';
import { jsonApiErrorDocument } from './errors.ts';
import { requireAuthenticated } from '../access/policy.ts';
import { principalOf } from '../access/principal.ts';
import { shapeOf } from './shape.ts';
import { isLoopbackHeader, loopbackHostHeaders } from './loopback.ts';
import { JSONAPI_MEDIA_TYPE } from './document.ts';
import { exportParameter, NO_EXPORTS, readBlueprint, type Subrequest, type Token } from './subrequests/blueprint.ts';
import { evaluateJsonPath } from './subrequests/jsonpath.ts';

/** Largest body one sub-request may carry once its tokens are replaced (the JSON:API limit). */
export const MAX_SUBREQUEST_BODY_BYTES = 4 * 1024 * 1024;
/** How long one sub-request may take. */
const SUBREQUEST_TIMEOUT_MS = 60_000;

/** Response headers worth reporting for a sub-response; the rest are transport or browser policy. */
const REPORTED_HEADERS = ['content-type', 'location', 'allow', 'www-authenticate', 'retry-after', 'x-request-id'];

/** The call went over its byte budget: it ends as a whole, with a 413. */
class BudgetExceeded extends ApiError {}

/** One sub-response's headers as the answer carries them: every value an array. */
interface SubresponseHeaders {
  status: [number];
  'content-id': [string];
  [name: string]: [string] | [number];
}

interface Subresponse {
  contentId: string;
  status: number;
  headers: SubresponseHeaders;
  /** The response body as sent (empty for 204 and HEAD). */
  text: string;
  /** Parsed `text`, filled in when a token first reads it. */
  parsed?: { value: unknown } | null;
}

interface Outcome {
  failed: boolean;
  responses: Subresponse[];
}

export function createSubrequestHandler(ctx: AppContext) {
  /**
   * Calls running now, in this process. Each may hold up to TILTH_SUBREQUEST_MAX_BYTES, so at most
   * TILTH_SUBREQUEST_MAX_CALLS run at once and the next is a 503 at once: what all of them hold
   * together is bounded, however many a client sends in parallel.
   */
  let running = 0;
  return async (req: Request, res: Response) => {
    requireAuthenticated(principalOf(res));
    const format = new URL(req.originalUrl, 'http://tilth.invalid').searchParams.getAll('_format');
    if (format.length && format[format.length - 1] !== 'json') {
      throw badParameter(
        '_format',
        `Subrequests are answered in the json format only; _format=${format[format.length - 1]} is not supported.`,
      );
    }
    const blueprint = readBlueprint(req.body);
    if (!ctx.internalUrl) throw new ApiError(503, 'The server is not listening yet; try again in a moment.');
    const { maxCalls } = ctx.config.subrequests;
    if (running >= maxCalls) {
      throw new ApiError(
        503,
        `The server is running as many subrequests calls as it runs at once (${maxCalls}, TILTH_SUBREQUEST_MAX_CALLS); try again in a moment.`,
        {
          headers: { 'Retry-After': '1' },
        },
      );
    }

    running += 1;
    try {
      let clientGone = false;
      res.on('close', () => {
        if (!res.writableFinished) clientGone = true;
      });

      const run = new Runner(ctx, req, res, ctx.config.subrequests);
      for (const sub of blueprint) {
        // Nobody will read the answer: stop sending further writes on the caller's behalf.
        if (clientGone) return;
        await run.execute(sub);
      }
      if (clientGone) return;
      await run.write();
    } finally {
      running -= 1;
    }
  };
}

class Runner {
  private readonly outcomes = new Map<string, Outcome>();
  private readonly order: Subresponse[] = [];
  private sent = 0;
  /** Bytes of the responses held and the bodies sent so far (TILTH_SUBREQUEST_MAX_BYTES). */
  private bytes = 0;
  private readonly authorization: string | undefined;
  private readonly parentRequestId: string | undefined;
  /**
   * Where the sub-requests go: this server over loopback, on the port of the call's API shape, so
   * that each is answered, and its access decided, in that shape (a 4.x worker's DELETE too).
   */
  private readonly loopback: string;
  /**
   * The host a call named when its shape was chosen by host name (TILTH_API4_HOSTS), carried to
   * its sub-requests (loopback.ts): the main port then answers them in the same shape.
   */
  private readonly callHost: Array<[string, string]>;

  constructor(
    private readonly ctx: AppContext,
    req: Request,
    private readonly res: Response,
    /**
     * The call's budget. Copies made by multi-valued tokens count as sub-requests (a `[*]` token
     * over a page of 50 records makes 50), and every response held counts against the bytes, so
     * that fan-out over large records ends with a clear 413 instead of filling the memory.
     */
    private readonly limits: { maxBytes: number; maxRequests: number },
  ) {
    this.authorization = req.headers.authorization;
    const shape = shapeOf(res, ctx.config.baseUrl);
    this.loopback = shape.name === 'farmos4' && !shape.host && ctx.internalUrl4 ? ctx.internalUrl4 : ctx.internalUrl;
    this.callHost = loopbackHostHeaders(shape.host);
    this.parentRequestId = res.locals.requestId;
  }

  /**
   * Write the answer, one sub-response at a time as the client reads it, letting go of each once
   * written: the answer is never held whole beside the responses it is made of. (Content-Ids are
   * unique: a requestId may not contain `#`, which starts the suffix of every copy.)
   */
  async write(): Promise<void> {
    const res = this.res;
    res.status(200).set('Cache-Control', 'no-store').type('application/json');
    let closed = false;
    res.once('close', () => (closed = true));
    let separator = '{';
    for (const r of this.order) {
      const piece = `${separator}${JSON.stringify(r.contentId)}:{"headers":${JSON.stringify(r.headers)},"body":${JSON.stringify(bodyString(r))}}`;
      separator = ',';
      r.text = '';
      r.parsed = null;
      if (closed) return;
      if (!res.write(piece)) {
        await new Promise<void>((resolve) => {
          const done = () => {
            res.off('drain', done);
            res.off('close', done);
            resolve();
          };
          res.on('drain', done);
          res.on('close', done);
        });
      }
    }
    if (!closed) res.end(separator === '{' ? '{}' : '}');
  }

  async execute(sub: Subrequest): Promise<void> {
    const outcome: Outcome = { failed: false, responses: [] };
    this.outcomes.set(sub.requestId, outcome);
    const record = (r: Subresponse) => {
      this.spend(Buffer.byteLength(r.text));
      outcome.responses.push(r);
      this.order.push(r);
      if (r.status >= 400) outcome.failed = true;
    };

    // A sub-request that depends on a failed one is not sent. Drupal sends it anyway, and its
    // tokens then resolve against an error document, so it silently disappears or fails in a
    // confusing way (e.g. a log created without the quantity it was meant to reference). Here it
    // gets its own entry, 424 Failed Dependency (RFC 4918 §11.4), naming the failed request, so
    // a client sees exactly which writes did not happen and why.
    const failedDependency = sub.dependsOn.find((id) => this.outcomes.get(id)?.failed);
    if (failedDependency !== undefined) {
      record(
        errorResponse(
          this.via(sub.uri),
          sub.requestId,
          new ApiError(
            424,
            `The subrequest "${sub.requestId}" was not sent because "${failedDependency}", which it depends on, failed.`,
            { source: { pointer: `/${sub.index}/waitFor` } },
          ),
        ),
      );
      return;
    }

    // Replacement tokens: as in Drupal, every value a token finds (across all responses of the
    // request it names) makes one copy of the sub-request, and several tokens make one copy per
    // combination. Copies are named `<id>#uri{n}`, then `#body{m}`, and this happens whenever a
    // location holds a token, even when it finds one value (farmOS.py's tests read
    // `create-asset#body{0}`; farmOS.js strips the suffix). Unlike Drupal, values are escaped
    // for where they land: percent-encoded in a uri (a value cannot add path segments, a query or
    // a fragment) and JSON-string-escaped in a body (a quote in a name cannot break the document).
    let uris: Array<{ suffix: string; uri: string }>;
    let bodies: Array<{ suffix: string; body: string | undefined }>;
    try {
      uris = this.expand(sub, 'uri', sub.uri, sub.uriTokens, (v) => encodeURIComponent(v)).map(([suffix, uri]) => ({
        suffix,
        uri,
      }));
      bodies =
        sub.body === undefined
          ? [{ suffix: '', body: undefined }]
          : this.expand(sub, 'body', sub.body, sub.bodyTokens, (v) => JSON.stringify(v).slice(1, -1)).map(
              ([suffix, body]) => ({ suffix, body }),
            );
    } catch (error) {
      if (!(error instanceof ApiError) || error instanceof BudgetExceeded) throw error;
      record(errorResponse(this.via(sub.uri), sub.requestId, error));
      return;
    }

    const copies = uris.length * bodies.length;
    if (this.sent + copies > this.limits.maxRequests) {
      record(
        errorResponse(
          this.via(sub.uri),
          sub.requestId,
          new ApiError(
            413,
            `The subrequest "${sub.requestId}" would be sent ${copies} time(s), which goes past the limit of ${this.limits.maxRequests} sub-requests in one call (TILTH_SUBREQUEST_MAX_REQUESTS; ${this.sent} already sent).`,
            {
              source: { pointer: `/${sub.index}` },
            },
          ),
        ),
      );
      return;
    }
    for (const u of uris) {
      for (const b of bodies) {
        const contentId = `${sub.requestId}${u.suffix}${b.suffix}`;
        record(await this.send(sub, contentId, u.uri, b.body));
      }
    }
  }

  /** Count bytes against the call's budget; over it, the whole call ends with a 413 (nothing more is sent). */
  private spend(bytes: number): void {
    this.bytes += bytes;
    if (this.bytes > this.limits.maxBytes) throw this.overBudget();
  }

  private overBudget(): BudgetExceeded {
    return new BudgetExceeded(
      413,
      `This subrequests call would hold more than ${this.limits.maxBytes} bytes of requests and responses (TILTH_SUBREQUEST_MAX_BYTES); ${this.sent} sub-request(s) had been sent. Split it, or ask for fewer resources (page[limit]) or fields (fields[TYPE]=…).`,
    );
  }

  /**
   * A sub-response's body, counted as it arrives: as soon as it goes past what the call has left
   * of TILTH_SUBREQUEST_MAX_BYTES (or says it will, in Content-Length), the sub-request is cut off
   * and the call ends with the 413. A response is never held whole before it is counted.
   */
  private async readWithin(response: globalThis.Response, cutOff: AbortController): Promise<string> {
    const room = this.limits.maxBytes - this.bytes;
    const over = () => {
      cutOff.abort();
      return this.overBudget();
    };
    const declared = Number(response.headers.get('content-length') ?? NaN);
    if (declared > room) throw over();
    if (!response.body) return '';
    // Decoded as it arrives: each chunk is let go at once, and only the text is kept.
    const decoder = new TextDecoder();
    const pieces: string[] = [];
    let size = 0;
    const reader = response.body.getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      size += value.byteLength;
      if (size > room) throw over();
      pieces.push(decoder.decode(value, { stream: true }));
    }
    pieces.push(decoder.decode());
    return pieces.join('');
  }

  /** The versions of `subject` with every token replaced, each with its Content-Id suffix. */
  private expand(
    sub: Subrequest,
    member: 'uri' | 'body',
    subject: string,
    tokens: Token[],
    escape: (value: string) => string,
  ): Array<[string, string]> {
    if (tokens.length === 0) return [['', subject]];
    const pointer: ErrorSource = { pointer: `/${sub.index}/${member}` };
    const valueLists = tokens.map((token) => {
      const values: string[] = [];
      for (const response of this.outcomes.get(token.requestId)!.responses) {
        const document = parsedBody(response);
        if (document === undefined) {
          throw new ApiError(
            400,
            `The token ${token.raw} reads the response of "${token.requestId}" (${response.contentId}), which is not JSON.`,
            { source: pointer },
          );
        }
        for (const value of evaluateJsonPath(token.path, document.value)) {
          if (typeof value === 'string') values.push(value);
          else if (typeof value === 'number' && Number.isFinite(value)) values.push(String(value));
          else {
            throw new ApiError(
              400,
              `The token ${token.raw} must find strings or numbers, but found ${JSON.stringify(value) ?? 'undefined'} in the response of "${token.requestId}".`,
              { source: pointer },
            );
          }
        }
      }
      if (values.length === 0) {
        throw new ApiError(
          400,
          `The token ${token.raw} found no value in the response of "${token.requestId}", so the subrequest "${sub.requestId}" was not sent.`,
          { source: pointer },
        );
      }
      return values;
    });
    const combinations = valueLists.reduce((n, list) => n * list.length, 1);
    if (combinations > this.limits.maxRequests) {
      throw new ApiError(
        413,
        `The tokens in the ${member} of "${sub.requestId}" expand to ${combinations} copies; at most ${this.limits.maxRequests} sub-requests are sent in one call (TILTH_SUBREQUEST_MAX_REQUESTS).`,
        { source: pointer },
      );
    }
    // Each copy of a body is held until it is sent: count them before making them.
    if (member === 'body') this.spend(combinations * Buffer.byteLength(subject));
    const out: Array<[string, string]> = [];
    const pick = (i: number, chosen: string[]) => {
      if (i === tokens.length) {
        let text = subject;
        tokens.forEach((token, t) => {
          text = text.split(token.raw).join(escape(chosen[t]!));
        });
        out.push([`#${member}{${out.length}}`, text]);
        return;
      }
      for (const value of valueLists[i]!) pick(i + 1, [...chosen, value]);
    };
    pick(0, []);
    return out;
  }

  /**
   * The absolute URI a sub-request's error names in `links.via`: its uri on this server (the
   * host it gives is never used), as the error documents of the sub-requests sent name theirs.
   */
  private via(uri: string): string {
    try {
      const url = new URL(uri, 'http://tilth.invalid/');
      return `${this.ctx.config.baseUrl}${url.pathname}${url.search}`;
    } catch {
      return `${this.ctx.config.baseUrl}/subrequests`;
    }
  }

  /** Send one sub-request over loopback and capture its response. */
  private async send(sub: Subrequest, contentId: string, uri: string, body: string | undefined): Promise<Subresponse> {
    const target = apiPath(uri);
    if (target instanceof ApiError)
      return errorResponse(
        this.via(uri),
        contentId,
        new ApiError(target.status, target.message, { source: { pointer: `/${sub.index}/uri` } }),
      );
    // The blueprint was checked for exports; a token's value may still have spelled `_format`.
    const format = exportParameter(target);
    if (format !== null)
      return errorResponse(
        this.via(uri),
        contentId,
        new ApiError(400, `The subrequest "${contentId}" asks for an export (_format=${format}). ${NO_EXPORTS}`, {
          source: { pointer: `/${sub.index}/uri` },
        }),
      );
    const sendsBody = body !== undefined && sub.method !== 'GET' && sub.method !== 'HEAD';
    if (sendsBody && Buffer.byteLength(body) > MAX_SUBREQUEST_BODY_BYTES) {
      return errorResponse(
        this.via(uri),
        contentId,
        new ApiError(413, `The body of "${contentId}" is larger than ${MAX_SUBREQUEST_BODY_BYTES / 1024 / 1024} MiB.`, {
          source: { pointer: `/${sub.index}/body` },
        }),
      );
    }

    const headers = new Headers();
    for (const [name, value] of sub.headers) if (!isLoopbackHeader(name)) headers.set(name, value);
    for (const [name, value] of this.callHost) headers.set(name, value);
    if (!headers.has('accept')) headers.set('Accept', JSONAPI_MEDIA_TYPE);
    if (!headers.has('content-type')) headers.set('Content-Type', JSONAPI_MEDIA_TYPE);
    if (this.authorization !== undefined) headers.set('Authorization', this.authorization);
    this.sent += 1;
    // Not a forwarded header: a new id derived from the parent's, so the log lines of a call and
    // its sub-requests can be matched up (unless the blueprint names its own).
    const childId = this.parentRequestId ? `${this.parentRequestId}.${this.sent}` : undefined;
    if (childId && !headers.has('x-request-id') && /^[\w.-]{1,64}$/.test(childId)) headers.set('X-Request-Id', childId);

    let response: globalThis.Response;
    let text: string;
    // Aborting destroys the loopback connection: the sub-request's handler stops writing, and
    // nothing more of its response is read.
    const cutOff = new AbortController();
    try {
      response = await fetch(`${this.loopback}${target}`, {
        method: sub.method,
        headers,
        body: sendsBody ? body : undefined,
        redirect: 'manual',
        signal: AbortSignal.any([cutOff.signal, AbortSignal.timeout(SUBREQUEST_TIMEOUT_MS)]),
      });
      text = sub.method === 'HEAD' ? '' : await this.readWithin(response, cutOff);
    } catch (error) {
      if (error instanceof BudgetExceeded) throw error;
      const timedOut = error instanceof Error && (error.name === 'TimeoutError' || error.name === 'AbortError');
      (this.res.locals.log ?? this.ctx.logger).warn({ err: error, contentId }, 'subrequest failed');
      return errorResponse(
        this.via(uri),
        contentId,
        timedOut
          ? new ApiError(504, `The subrequest "${contentId}" took longer than ${SUBREQUEST_TIMEOUT_MS / 1000} seconds.`)
          : new ApiError(502, `The subrequest "${contentId}" could not be sent.`),
      );
    }

    const reported: SubresponseHeaders = { status: [response.status], 'content-id': [`<${contentId}>`] };
    for (const name of REPORTED_HEADERS) {
      const value = response.headers.get(name);
      if (value !== null) reported[name] = [value];
    }
    return { contentId, status: response.status, headers: reported, text };
  }
}

/**
 * The path and query of a sub-request's uri, when it addresses the JSON:API under /api; an
 * ApiError otherwise. Relative uris (farmOS.js: `/api/…`, farmOS.py 2.x: `api/…`) and absolute
 * ones (farmOS.py 1.x: `http://host/api/…`) are both accepted; the host is never used. The path
 * is checked after URL normalisation, so `/api/../oauth/token` is refused too.
 */
function apiPath(uri: string): string | ApiError {
  let url: URL;
  try {
    url = new URL(uri, 'http://tilth.invalid/');
  } catch {
    return new ApiError(400, `The uri "${uri}" is not a valid URL.`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    return new ApiError(400, `The uri "${uri}" must be a path under /api or an http(s) URL.`);
  }
  if (url.pathname !== '/api' && !url.pathname.startsWith('/api/')) {
    return new ApiError(
      400,
      `Subrequests can only address the JSON:API under /api; "${url.pathname}" is not under /api.`,
    );
  }
  return `${url.pathname}${url.search}`;
}

/** The error of a sub-request that was not sent; `via` is its uri, as its own error documents name it. */
function errorResponse(via: string, contentId: string, error: ApiError): Subresponse {
  const rendered = jsonApiErrorDocument(error, via);
  return {
    contentId,
    status: rendered.status,
    headers: { status: [rendered.status], 'content-id': [`<${contentId}>`], 'content-type': [JSONAPI_MEDIA_TYPE] },
    text: JSON.stringify(rendered.body),
  };
}

function isJsonType(contentType: [string] | [number] | undefined): boolean {
  const value = contentType?.[0];
  return typeof value === 'string' && /^application\/(?:[\w.+-]+\+)?json\b/i.test(value);
}

/** The parsed body of a sub-response, or undefined when it is not JSON. */
function parsedBody(response: Subresponse): { value: unknown } | undefined {
  if (response.parsed === undefined) {
    try {
      response.parsed = response.text === '' ? { value: null } : { value: JSON.parse(response.text) as unknown };
    } catch {
      response.parsed = null;
    }
  }
  return response.parsed ?? undefined;
}

/**
 * `body` in the answer is always a string that JSON.parse accepts: farmOS.js JSON.parses every
 * sub-response body (clients.md §1.7), so an empty body (204 after a delete, every HEAD) is
 * reported as "null" (Drupal would send "", on which farmOS.js throws). JSON responses are
 * passed through as sent; anything else under /api (there is nothing else today) is wrapped as
 * a JSON string so that it still parses.
 */
function bodyString(response: Subresponse): string {
  if (response.text === '') return 'null';
  if (isJsonType(response.headers['content-type']) && parsedBody(response) !== undefined) return response.text;
  return JSON.stringify(response.text);
}
