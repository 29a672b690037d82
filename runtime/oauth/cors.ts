/**
 * CORS after farmOS (farmos-behaviour.md §8.1): on every response, an Origin that one of the
 * clients lists among its allowed origins (any client's list) is echoed with credentials allowed;
 * any other origin gets no CORS headers. Unlike farmOS, PATCH is allowed (JSON:API updates with
 * it), and preflights are cached for ten minutes. Every OPTIONS request is answered here with 200.
 */
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import type { Knex } from 'knex';
import { isAllowedOrigin } from './clients.ts';
import { ChangeCache } from '../storage/change-cache.ts';

const ALLOW_HEADERS = 'Content-Type,Content-Disposition,Authorization,X-CSRF-Token,If-Match,If-None-Match';
const ALLOW_METHODS = 'GET,POST,PUT,PATCH,DELETE,HEAD,OPTIONS';
const EXPOSE_HEADERS = 'ETag,Location,Retry-After,WWW-Authenticate,X-Request-Id';

/** Most origins whose answer is kept (any client can send any Origin). */
const MAX_KEPT_ORIGINS = 1_000;
/** Longest Origin header whose answer is kept. */
const MAX_KEPT_ORIGIN_LENGTH = 300;

/** CORS headers for listed origins on every response; OPTIONS answered here. */
export function corsMiddleware(db: Knex): RequestHandler {
  // A browser app (Field Kit) sends its Origin on every request: the answer is kept until the
  // database changes (storage/change-cache.ts), so listing or removing an origin (`tilth client`,
  // the clients set up at start) takes effect on the next request. Looking it up each time cost a
  // third of `GET /api`.
  const listed = new ChangeCache<boolean>(MAX_KEPT_ORIGINS);
  const answer = (req: Request, res: Response, next: NextFunction, origin: string | undefined, allowed: boolean) => {
    if (origin) {
      res.vary('Origin');
      if (allowed) {
        res.set({
          'Access-Control-Allow-Origin': origin,
          'Access-Control-Allow-Credentials': 'true',
          'Access-Control-Allow-Headers': ALLOW_HEADERS,
          'Access-Control-Allow-Methods': ALLOW_METHODS,
          'Access-Control-Expose-Headers': EXPOSE_HEADERS,
          'Access-Control-Max-Age': '600',
        });
      }
    }
    if (req.method === 'OPTIONS') {
      res.status(200).set('Content-Length', '0').end();
      return;
    }
    next();
  };
  return (req: Request, res: Response, next: NextFunction) => {
    const origin = req.headers.origin?.trim();
    if (!origin) return answer(req, res, next, origin, false);
    const { version, kept } = listed.get(db, origin);
    if (kept !== undefined) return answer(req, res, next, origin, kept);
    // An origin is at most a scheme, a host and a port: a longer header is not kept (clients send
    // any text they like, and a thousand long ones would fill the cache's memory).
    const keep = origin.length <= MAX_KEPT_ORIGIN_LENGTH;
    isAllowedOrigin(db, origin).then((allowed) => {
      try {
        if (keep) listed.set(origin, allowed, version);
        answer(req, res, next, origin, allowed);
      } catch (error) {
        next(error);
      }
    }, next);
  };
}
