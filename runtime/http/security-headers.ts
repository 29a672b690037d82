/**
 * helmet's security headers, worked out once. With the options Tilth uses (no CSP here: pages set
 * their own; no CORP: CORS decides who may read) none of them depends on the request, so helmet
 * runs once at start against a recorder and every response gets the recorded list, instead of a
 * dozen middlewares setting the same headers on every request.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import helmet from 'helmet';

export function securityHeaders(): RequestHandler {
  const headers: Array<[string, string]> = [];
  const recorder = {
    setHeader(name: string, value: string | number | readonly string[]) {
      headers.push([name, String(value)]);
      return recorder;
    },
    removeHeader() {},
  };
  helmet({ contentSecurityPolicy: false, crossOriginResourcePolicy: false })(
    {} as IncomingMessage,
    recorder as unknown as ServerResponse,
    (error?: unknown) => {
      if (error) throw error;
    },
  );
  return (_req: Request, res: Response, next: NextFunction) => {
    for (const [name, value] of headers) res.setHeader(name, value);
    next();
  };
}
