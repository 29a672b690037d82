/**
 * Assembles the Express application: security headers, request logging, CORS, bearer
 * authentication, body parsing, the /api entry point and schemas, the generated resource routes,
 * subrequests and OAuth, and one error handler that renders every failure.
 */
import express, { type NextFunction, type Request, type Response } from 'express';
import type { AppContext } from '../context.ts';
import { requestLogger } from './logging.ts';
import { entryPoint } from '../jsonapi/entry-point.ts';
import { SchemaStore, schemaIndexHandler } from '../jsonapi/schemas.ts';
import { createDispatcher } from '../jsonapi/router.ts';
import { createResourceHandlers } from '../jsonapi/handlers/index.ts';
import { ApiError, badRequest, notFound, OAuthError } from '../errors.ts';
import { domainApiError, jsonApiErrorDocument } from '../jsonapi/errors.ts';
import { JSONAPI_MEDIA_TYPE } from '../jsonapi/document.ts';
import { OAUTH_PATHS, type OAuthComponents } from '../oauth/index.ts';
import { createSubrequestHandler } from '../jsonapi/subrequests.ts';
import { LANGUAGE_PATH, languageRoutes } from '../jsonapi/languages.ts';
import { CHANGES_PATH } from '../jsonapi/changes.ts';
import { FIELD_MODULE_SCRIPT_PATHS, fieldModuleRoutes } from './field-modules.ts';
import { healthHandler } from './health.ts';
import { FRONT_DOOR_PATHS, frontDoorRoutes } from './front-door.ts';
import { OPENAPI_PATHS, openApiRoutes } from '../jsonapi/openapi.ts';
import { createMetrics } from './metrics.ts';
import { DATA_STREAM_PATHS, dataStreamRoutes } from './data-streams.ts';
import { securityHeaders } from './security-headers.ts';
import { mergeScopes, scoped } from './scoped.ts';
import { AheadWatch, WRITE_PATHS, databaseAheadError } from './database-ahead.ts';
import { WEB_PATHS, rootForSignedIn, webRoutes } from '../web/index.ts';
import { shapeChoice } from './shape-choice.ts';
import { shapeOf } from '../jsonapi/shape.ts';
import { inShape, principalOf, setPrincipal } from '../access/principal.ts';

/** Largest JSON:API request body accepted. */
const JSON_LIMIT_BYTES = 4 * 1024 * 1024;
const JSON_LIMIT = '4 MiB';

export function createApp(ctx: AppContext, oauth: OAuthComponents): express.Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  // Behind TILTH_TRUST_PROXY reverse proxies, the client address comes from X-Forwarded-For.
  app.set('trust proxy', ctx.config.trustProxy);
  // Query strings are parsed where they are used, PHP-style (runtime/jsonapi/query).
  app.set('query parser', () => ({}));

  const metrics = createMetrics(ctx);
  const ahead = new AheadWatch(ctx);
  app.use(requestLogger(ctx.logger));
  app.use(metrics.observe);
  // The API shape (farmOS 2.x or 4.x) and the base of its links, once, for every face to read.
  app.use(shapeChoice(ctx.config));
  // Before authentication: a health check needs no token, and a stale one must not fail it.
  app.get('/health', healthHandler(ctx, ahead));
  // Every page and document from here on carries helmet's headers (X-Frame-Options, nosniff…).
  app.use(securityHeaders());
  // Routers without a mount path see only the requests under their own paths, and those at one
  // place in the chain are one layer for every other request (http/scoped.ts). The pages for a
  // person with a browser: the front door and the API's documentation.
  app.use(
    scoped(
      mergeScopes(FRONT_DOOR_PATHS, OPENAPI_PATHS),
      rootForSignedIn(oauth.sessions),
      frontDoorRoutes(ctx),
      openApiRoutes(ctx),
    ),
  );
  // The web interface (runtime/web/): its own pages, signed in with the OAuth pages' session cookie, not a token.
  // The farmOS 2.x sensor listener (/farm/sensor/listener/…, below) is not a page of the web interface.
  app.use(
    scoped(
      { ...WEB_PATHS, except: DATA_STREAM_PATHS },
      webRoutes({ ctx, sessions: oauth.sessions, limiters: oauth.limiters, refuseWrites: ahead.refuseWrites() }),
    ),
  );
  app.use(oauth.cors);
  // Signing in, and Field Kit's field module scripts, public as farmOS serves them: before authentication.
  app.use(scoped([...OAUTH_PATHS, ...FIELD_MODULE_SCRIPT_PATHS], oauth.router, fieldModuleRoutes(ctx)));

  app.use(oauth.authenticate);
  // Through the farmOS 4.x shape its roles decide what a token may do (farmOS 4.0's worker deletes
  // only its own records: access/roles.ts); the web pages set their own principal, with 2.x rights.
  app.use((_req: Request, res: Response, next: NextFunction) => {
    const shape = shapeOf(res, ctx.config.baseUrl).name;
    if (shape !== 'farmos2') setPrincipal(res, inShape(principalOf(res), shape));
    next();
  });
  // A database migrated past this code (by a process beside it) takes no writes from it: before any body is read.
  app.use(scoped(WRITE_PATHS, ahead.refuseWrites()));
  // Metrics, and sensor readings: bodies of any media type, read by their own parser (before express.json).
  app.use(
    scoped(
      ['/metrics', ...DATA_STREAM_PATHS],
      express.Router().get('/metrics', metrics.handler),
      dataStreamRoutes(ctx),
    ),
  );
  // Every route from here on needs a token for a body: one sent without is refused unread.
  const readJson = express.json({
    type: [JSONAPI_MEDIA_TYPE, 'application/json', 'application/*+json'],
    limit: JSON_LIMIT_BYTES,
    strict: false,
  });
  app.use(ctx.bodies.read(readJson, { limitBytes: JSON_LIMIT_BYTES, tokenFirst: true }));

  const store = new SchemaStore(ctx);
  const { handlers, downloads, revisionHistory, changes, configs } = createResourceHandlers(ctx, store);
  app.get(['/api', '/api/'], entryPoint(ctx, configs));
  app.get('/api/schema', schemaIndexHandler(store));
  app.use(scoped([LANGUAGE_PATH, ...configs.paths(), CHANGES_PATH], languageRoutes(ctx), configs.routes(ctx), changes));
  app.use('/api', createDispatcher(ctx.generated.routes, ctx.registry, handlers));
  app.use(downloads);
  app.use(revisionHistory);
  app.post('/subrequests', createSubrequestHandler(ctx));

  app.use('/api', (req: Request) => {
    throw notFound(`No route matches ${req.method} ${req.baseUrl}${req.path}.`);
  });
  app.use((req: Request, res: Response) => {
    res.status(404).json({ error: 'not_found', error_description: `No route matches ${req.method} ${req.path}.` });
  });

  app.use(async (error: unknown, req: Request, res: Response, _next: NextFunction) => {
    if (res.headersSent) return;
    if (error instanceof OAuthError) {
      res.status(error.status).set(error.headers).set('Cache-Control', 'no-store').json(error.toBody());
      return;
    }
    let e = domainApiError(error) ?? normaliseBodyError(error, req);
    // A failure this code cannot explain may be a schema it does not know: another process of a
    // newer release migrated the database (README, "Scaling out"). Then say so with a 503, as
    // /health does, so the load balancer and the client retry elsewhere, rather than a 500.
    if (!(e instanceof ApiError) && (await ahead.checkNow())) e = databaseAheadError('answer');
    const rendered = jsonApiErrorDocument(e, `${shapeOf(res, ctx.config.baseUrl).base}${req.originalUrl}`);
    if (rendered.status >= 500) (res.locals.log ?? ctx.logger).error({ err: error }, 'unhandled error');
    res.status(rendered.status).set(rendered.headers).type(JSONAPI_MEDIA_TYPE).send(JSON.stringify(rendered.body));
  });
  return app;
}

/** Express's and body-parser's own errors (a path that does not decode, bad JSON, too large, bad charset) as JSON:API errors. */
function normaliseBodyError(error: unknown, req: Request): unknown {
  if (error instanceof ApiError) return error;
  // Express's router decodes path parameters (":uuid") and throws a URIError when one is not
  // valid percent-encoding: the client's mistake, whatever the route.
  if (error instanceof URIError)
    return badRequest(
      `The URL path ${JSON.stringify(req.path.slice(0, 200))} is not valid percent-encoding (RFC 3986): each % must start a %XX escape of UTF-8 bytes.`,
    );
  const e = error as { type?: string; status?: number; message?: string };
  if (e && typeof e === 'object' && typeof e.type === 'string') {
    if (e.type === 'entity.parse.failed')
      return badRequest(`The request body is not valid JSON: ${e.message}`, { pointer: '' });
    if (e.type === 'entity.too.large') return new ApiError(413, `The request body is larger than ${JSON_LIMIT}.`);
    if (e.type === 'encoding.unsupported' || e.type === 'charset.unsupported')
      return new ApiError(415, `The request body's encoding is not supported: ${e.message}`);
    if (typeof e.status === 'number' && e.status >= 400 && e.status < 500)
      return new ApiError(e.status, e.message ?? 'The request could not be read.');
  }
  // zlib's own errors, from a body that does not decompress as its Content-Encoding says.
  const code = (error as { code?: unknown })?.code;
  if (typeof code === 'string' && /^(Z_|ERR_BROTLI|ERR__ERROR)/.test(code)) {
    return badRequest(
      'The request body does not decompress as its Content-Encoding header says; send it uncompressed, or compressed correctly.',
      { pointer: '' },
    );
  }
  return error;
}
