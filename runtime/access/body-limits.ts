/**
 * What a request body may cost the server while it is read into memory: every parser that buffers
 * a body (JSON:API documents, sensor readings, the OAuth forms) reads it through `BodyLimits.read`.
 *
 * - **Time.** A body that sends nothing for TILTH_BODY_TIMEOUT seconds is ended with 408 and its
 *   connection closed (uploads to disk have the same rule in files/storage.ts). Without it, only
 *   Node's five-minute request timeout closed a body that stopped one byte short.
 * - **Bytes held at once.** Each body reserves what it may grow to before a byte is read: its
 *   Content-Length when it is sent plain, else the parser's whole limit (a chunked body, or a
 *   compressed one, whose size is known only once inflated). Past TILTH_BODY_BUDGET_MB of
 *   reservations, a new body is a 503 with Retry-After, answered before its body is read. A
 *   reservation is given back when the response ends, since the parsed body lives until then.
 * - **Who.** A parser marked `tokenFirst` answers 401 to a body sent without an access token
 *   before reading it: every route behind it needs one, so the body would be read for nothing.
 *
 * A body refused before it is read (no token, no budget, a declared length over the limit) is
 * then read and thrown away by Node, so the client reads its answer rather than a reset
 * connection (closing at once resets a connection the client is still sending on, and the answer
 * is lost with it); it holds no memory, and Node's keep-alive timeout ends a connection that
 * stalls there. A body that stalled ends its connection. Counts are per process, like the rate
 * limiters.
 */
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { ApiError } from '../errors.ts';
import { isAuthenticated, WWW_AUTHENTICATE } from './policy.ts';
import { principalOf } from './principal.ts';

export interface BodyLimitsOptions {
  /** Milliseconds a body may send nothing. */
  stallMs: number;
  /** Bytes all bodies being read (and held) at once may reserve. */
  budgetBytes: number;
}

export interface ReadOptions {
  /** Largest body the parser accepts, in bytes (its own `limit`). */
  limitBytes: number;
  /** Refuse a body without an access token before reading it (401). */
  tokenFirst?: boolean;
}

const CLOSE = { Connection: 'close' } as const;

/** Whether a request carries a body (type-is's rule: a Transfer-Encoding, or a non-zero Content-Length). */
export function hasBody(req: Request): boolean {
  return (
    req.headers['transfer-encoding'] !== undefined ||
    (req.headers['content-length'] !== undefined && req.headers['content-length'] !== '0')
  );
}

/** The bytes a body may grow to in memory, or null when its declared length is over `limit`. */
function reservationOf(req: Request, limit: number): number | null {
  const encoding = (req.headers['content-encoding'] ?? 'identity').toLowerCase();
  const declared = req.headers['content-length'];
  if (encoding !== 'identity' || declared === undefined || req.headers['transfer-encoding'] !== undefined) return limit;
  const length = Number(declared);
  if (!Number.isSafeInteger(length) || length < 0) return limit;
  return length > limit ? null : length;
}

export class BodyLimits {
  private reserved = 0;

  constructor(private readonly options: BodyLimitsOptions) {}

  /** Bytes reserved by the bodies being read or held now (a gauge for /metrics). */
  get reservedBytes(): number {
    return this.reserved;
  }

  /**
   * Middleware reading a body with `parser` (body-parser's json, raw or text) within the limits
   * above. Requests without a body, and GET and HEAD (whose bodies no route reads), go straight
   * on unread.
   */
  read(parser: RequestHandler, options: ReadOptions): RequestHandler {
    return (req: Request, res: Response, next: NextFunction) => {
      if (!hasBody(req) || req.method === 'GET' || req.method === 'HEAD') return next();
      if (options.tokenFirst && !isAuthenticated(principalOf(res))) {
        const detail =
          'This resource needs an OAuth 2.0 bearer access token (Authorization: Bearer <token>); the request body was not read.';
        return next(new ApiError(401, detail, { headers: { 'WWW-Authenticate': WWW_AUTHENTICATE } }));
      }
      const size = reservationOf(req, options.limitBytes);
      if (size === null)
        return next(
          new ApiError(
            413,
            `The request body is larger than ${formatBytes(options.limitBytes)} (Content-Length ${req.headers['content-length']}); it was not read.`,
          ),
        );
      if (this.reserved + size > this.options.budgetBytes && this.reserved > 0) {
        return next(
          new ApiError(
            503,
            'The server is reading as many request bodies as it holds at once; try again in a moment.',
            { headers: { 'Retry-After': '1' } },
          ),
        );
      }
      this.reserved += size;
      res.once('close', () => (this.reserved -= size));
      new BodyRead(req, res, next, this.options.stallMs).start(parser);
    };
  }
}

/**
 * One body being read: the parser's callback, or the stall timer, whichever comes first, settles
 * it. A class rather than closures made per request (under tsx each named closure costs).
 */
class BodyRead {
  private settled = false;

  constructor(
    private readonly req: Request,
    private readonly res: Response,
    private readonly next: NextFunction,
    private readonly stallMs: number,
  ) {}

  start(parser: RequestHandler): void {
    // The socket's idle timer: it runs while nothing arrives, and restarts with every chunk.
    this.req.setTimeout(this.stallMs, this.stalled);
    parser(this.req, this.res, this.done);
  }

  private readonly done = (error?: unknown): void => {
    if (this.settled) return;
    this.settled = true;
    this.req.setTimeout(0);
    this.next(error);
  };

  private readonly stalled = (): void => {
    if (this.settled) return;
    this.settled = true;
    const seconds = this.stallMs / 1000;
    this.next(
      new ApiError(
        408,
        `The request body sent nothing for ${seconds} seconds (TILTH_BODY_TIMEOUT) and was ended; nothing was kept.`,
        { headers: CLOSE },
      ),
    );
    // The 408 closes the connection once sent; a client that does not read it loses it a second later.
    setTimeout(() => this.req.socket.destroy(), 1000).unref();
  };
}

function formatBytes(bytes: number): string {
  return bytes % (1024 * 1024) === 0 ? `${bytes / 1024 / 1024} MiB` : `${Math.round(bytes / 1024)} KiB`;
}
