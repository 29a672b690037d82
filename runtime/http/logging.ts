/**
 * Structured logs with pino: one line per request with a request id. Secrets never reach a
 * line: the Authorization header, cookies, and token-bearing parameters are redacted. On a
 * terminal the lines are made readable with pino-pretty; elsewhere (a service, a container, a
 * pipe) they stay JSON for log collectors. TILTH_LOG_FORMAT chooses either way.
 */
import { randomUUID } from 'node:crypto';
import pino, { type Logger } from 'pino';
import type { NextFunction, Request, Response } from 'express';

export function createLogger(level: string, format: 'auto' | 'json' | 'pretty' = 'json'): Logger {
  const options = {
    level,
    base: undefined,
    redact: {
      paths: [
        'req.headers.authorization',
        'req.headers.cookie',
        'res.headers["set-cookie"]',
        '*.password',
        '*.client_secret',
        '*.refresh_token',
        '*.access_token',
        '*.code',
      ],
      censor: '[redacted]',
    },
  };
  const pretty = format === 'pretty' || (format === 'auto' && process.stdout.isTTY === true);
  if (!pretty || level === 'silent') return pino(options);
  return pino(
    options,
    pino.transport({
      target: 'pino-pretty',
      options: { colorize: process.stdout.isTTY === true, translateTime: 'SYS:HH:MM:ss', ignore: 'pid,hostname' },
    }),
  );
}

/** Names of secrets, as a whole query parameter name or one bracketed part of it (`filter[private_key]`). */
const SECRET_NAME = /(?:^|\[)(?:access_token|refresh_token|code|client_secret|password|token|private_key)(?:\]|$)/i;
/** A filter condition's path (`filter[k][condition][path]`), whose value member then holds the secret. */
const CONDITION_PATH = /^filter\[([^\]]*)\]\[condition\]\[path\]$/;
/** Worth a closer look: a URL without any of these has no secret in its query. */
const MAYBE_SECRET = /token|code|secret|password|key|%/i;

/** A query string's name or value as the server reads it (PHP's rules: + is a space), or as sent when it does not decode. */
function decodeComponent(text: string): string {
  try {
    return decodeURIComponent(text.replace(/\+/g, ' '));
  } catch {
    return text;
  }
}

/**
 * The URL as it may be logged: the values of secret query parameters replaced. Names are read
 * as the server reads them (`private%5Fkey` is `private_key`), and a filter on a secret field
 * (`filter[private_key]=…`, or a condition whose path is one) has its value replaced too.
 */
export function loggableUrl(url: string): string {
  const q = url.indexOf('?');
  if (q < 0 || !MAYBE_SECRET.test(url)) return url;
  const parts = url.slice(q + 1).split('&');
  const names = parts.map((part) => decodeComponent(part.split('=', 1)[0]!));
  // Filter conditions on a secret field: their values are secrets, whatever their names say.
  const secretConditions = new Set<string>();
  names.forEach((name, i) => {
    const m = CONDITION_PATH.exec(name);
    const path = m && decodeComponent(parts[i]!.slice(parts[i]!.indexOf('=') + 1));
    if (m && path && SECRET_NAME.test(path.split('.').pop()!)) secretConditions.add(m[1]!);
  });
  let changed = false;
  const out = parts.map((part, i) => {
    const name = names[i]!;
    const condition = /^filter\[([^\]]*)\]\[condition\]\[value\]/.exec(name);
    if (!SECRET_NAME.test(name) && !(condition && secretConditions.has(condition[1]!))) return part;
    const eq = part.indexOf('=');
    if (eq < 0) return part;
    changed = true;
    return `${part.slice(0, eq)}=[redacted]`;
  });
  return changed ? `${url.slice(0, q)}?${out.join('&')}` : url;
}

/**
 * A request's logger: lines stamped with its request id. pino's child logger is made when the
 * first line is written: most requests write only the request line, and none at all when
 * requests are not logged. (A getter on res.locals would do the same, but turns that object
 * slow for every later reader: a quarter of a small request's time.)
 */
export class RequestLog {
  private child: Logger | undefined;

  constructor(
    private readonly logger: Logger,
    readonly requestId: string,
  ) {}

  private get lines(): Logger {
    return (this.child ??= this.logger.child({ requestId: this.requestId }));
  }

  info(fields: object, message: string): void {
    this.lines.info(fields, message);
  }

  warn(fields: object, message: string): void {
    this.lines.warn(fields, message);
  }

  error(fields: object, message: string): void {
    this.lines.error(fields, message);
  }
}

export function requestLogger(logger: Logger) {
  const logsRequests = logger.isLevelEnabled('info');
  return (req: Request, res: Response, next: NextFunction): void => {
    const id =
      typeof req.headers['x-request-id'] === 'string' && /^[\w.-]{1,64}$/.test(req.headers['x-request-id'])
        ? req.headers['x-request-id']
        : randomUUID();
    res.locals.requestId = id;
    res.setHeader('X-Request-Id', id);
    res.locals.log = new RequestLog(logger, id);
    if (!logsRequests) return next();
    const started = process.hrtime.bigint();
    res.on('finish', () => {
      const ms = Number(process.hrtime.bigint() - started) / 1e6;
      res.locals.log!.info(
        { method: req.method, url: loggableUrl(req.originalUrl), status: res.statusCode, ms: Math.round(ms * 10) / 10 },
        'request',
      );
    });
    next();
  };
}
