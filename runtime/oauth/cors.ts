/**
 * CORS after farmOS (farmos-behaviour.md §8.1): on every response, an Origin that one of the
 * clients lists among its allowed origins (any client's list) is echoed with credentials allowed;
 * any other origin gets no CORS headers. Unlike farmOS, PATCH is allowed (JSON:API updates with
 * it), and preflights are cached for ten minutes. Every OPTIONS request is answered here with 200.
 */
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import type { Knex } from 'knex';
import { isAllowedOrigin } from './clients.ts';

const ALLOW_HEADERS = 'Content-Type,Content-Disposition,Authorization,X-CSRF-Token';
const ALLOW_METHODS = 'GET,POST,PUT,PATCH,DELETE,HEAD,OPTIONS';
const EXPOSE_HEADERS = 'Location,Retry-After,WWW-Authenticate,X-Request-Id';

/** CORS headers for listed origins on every response; OPTIONS answered here. */
export function corsMiddleware(db: Knex): RequestHandler {
  return async (req: Request, res: Response, next: NextFunction) => {
    const origin = req.headers.origin?.trim();
    if (origin) {
      res.vary('Origin');
      if (await isAllowedOrigin(db, origin)) {
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
}
