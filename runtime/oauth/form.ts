/**
 * Reading application/x-www-form-urlencoded bodies of the OAuth endpoints.
 *
 * Parsed with URLSearchParams, which is forgiving where it must be: farmOS.js builds its password
 * grant body by string concatenation without encoding (clients.md §1.2), so a raw space in a
 * password arrives as a space and must stay one. Unknown parameters are ignored (farmOS.py sends
 * `allow_redirects=True`); a parameter the server reads may appear only once (RFC 6749 §3.1).
 */
import express, { type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import { ApiError, OAuthError } from '../errors.ts';
import type { BodyLimits } from '../access/body-limits.ts';
import { GRANT_PARAMETERS } from './grants/index.ts';

/** Largest OAuth form body accepted; real ones are a few hundred bytes. */
const FORM_LIMIT_BYTES = 16 * 1024;
const FORM_LIMIT = '16 KiB';

/** Every parameter an OAuth endpoint of this server reads: the common ones, and each grant's. */
const KNOWN: ReadonlySet<string> = new Set([
  'grant_type',
  'client_id',
  'client_secret',
  'scope',
  // Revocation (RFC 7009).
  'token',
  'token_type_hint',
  // The consent and sign-in pages.
  'transaction_id',
  'csrf_token',
  'decision',
  'return_to',
  ...GRANT_PARAMETERS,
]);

/** Parse a form body; throws invalid_request for a repeated known parameter. */
export function parseForm(raw: string): Record<string, string> {
  const params = new URLSearchParams(raw);
  const out: Record<string, string> = Object.create(null);
  for (const [name, value] of params) {
    if (!KNOWN.has(name)) continue;
    if (name in out) throw new OAuthError('invalid_request', `The parameter ${name} appears more than once.`);
    out[name] = value;
  }
  return out;
}

const readText = express.text({ type: 'application/x-www-form-urlencoded', limit: FORM_LIMIT_BYTES });

/** A refusal of the body limits (access/body-limits.ts) in RFC 6749's form, with its status and headers. */
function limitError(error: ApiError): OAuthError {
  return new OAuthError(error.status === 503 ? 'temporarily_unavailable' : 'invalid_request', error.message, {
    status: error.status,
    headers: error.headers,
  });
}

/**
 * Middleware: sets req.body to the parsed form, read within the body limits. A body of another
 * type, or none, is invalid_request: the OAuth endpoints take forms only.
 */
export function formBody(bodies: BodyLimits): RequestHandler {
  const read = bodies.read(readText, { limitBytes: FORM_LIMIT_BYTES });
  return (req: Request, res: Response, next: NextFunction) => {
    if (!req.is('application/x-www-form-urlencoded')) {
      next(new OAuthError('invalid_request', 'The request body must be application/x-www-form-urlencoded.'));
      return;
    }
    read(req, res, (error?: unknown) => {
      if (error) {
        const e = error as { type?: string };
        if (error instanceof ApiError) next(limitError(error));
        else
          next(
            new OAuthError(
              'invalid_request',
              e.type === 'entity.too.large'
                ? `The request body is larger than ${FORM_LIMIT}.`
                : 'The request body could not be read.',
            ),
          );
        return;
      }
      try {
        req.body = parseForm(typeof req.body === 'string' ? req.body : '');
        next();
      } catch (err) {
        next(err);
      }
    });
  };
}

/** The query string of a request as single-valued parameters (RFC 6749 §3.1: none may repeat). */
export function parseQuery(req: Request): Record<string, string> {
  const q = req.originalUrl.indexOf('?');
  const params = new URLSearchParams(q === -1 ? '' : req.originalUrl.slice(q + 1));
  const out: Record<string, string> = Object.create(null);
  for (const [name, value] of params) {
    if (name in out) throw new OAuthError('invalid_request', `The parameter ${name} appears more than once.`);
    out[name] = value;
  }
  return out;
}
