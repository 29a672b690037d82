/**
 * The web interface (issue 38): server-rendered pages under /farm for people with a browser,
 * generated from the same definitions as the API (generated/ui/, model/ui.ts) and run by one
 * generic set of pages, with no per-bundle code and no script. Reads and writes go through the
 * JSON:API face's parts (reads.ts, records.ts), so the policy, validation, revisions and change
 * feed are the API's own.
 *
 *   GET  /farm                                   dashboard (lists.ts)
 *   GET  /farm/<entity type>                     all its records in one list (assets, logs), or its bundles
 *   GET  /farm/<entity type>/<bundle>            a list: filters, sort and page in the URL
 *   GET  /farm/<entity type>/<bundle>/<uuid>     a record's page: fields, files, revisions, related records (record-page.ts)
 *   GET  /farm/<entity type>/<bundle>/<uuid>/revisions?from=&to=   what changed between two revisions (revision-diff.ts)
 *   GET  /farm/files/<uuid>, /farm/files/<uuid>/image   a file's download, an image's thumbnail (files.ts)
 *   GET|POST /farm/<entity type>/<bundle>/new    the create form
 *   GET|POST /farm/<entity type>/<bundle>/<uuid>/edit   the edit form (refused when stale)
 *   POST /farm/<entity type>/<bundle>/<uuid>/files/<field>  a file or image uploaded into a field (uploads.ts)
 *   GET|POST /farm/<entity type>/<bundle>/<uuid>/delete  the delete confirmation, naming what goes with it
 *   POST /farm/asset/<bundle>/<uuid>/status       archive or reactivate an asset
 *   POST /farm/log/<bundle>/<uuid>/done           a task marked done from the dashboard
 *   POST /farm/log/<bundle>/<uuid>/move           a task moved to another date from the dashboard (tasks.ts)
 *   GET|POST /farm/sign-in, POST /farm/sign-out  (session.ts)
 *   GET|POST /farm/account/password              change my password (account.ts)
 *   GET|POST /farm/people…                       People, for account administrators (people.ts)
 *   GET  /farm/<entity type>[/<bundle>]?_format=csv|geojson|kml   a list view as a file (sheets.ts)
 *   POST /farm/<entity type>[/<bundle>]/bulk      a bulk action: confirm, then apply (bulk.ts)
 *   GET|POST /farm/<entity type>/<bundle>/import, …/import/template.csv   a CSV imported, with a preview (sheets.ts)
 *   GET  /farm/asset/<bundle>/<uuid>/timeline    an asset's logs by day, where it was (timeline.ts)
 *   GET|POST /farm/views…                        saved views of lists (saved-views.ts)
 *   GET  /farm/data_stream/basic/<uuid>/readings(.csv)   a stream's readings per pixel, or as CSV (charts.ts)
 *   GET /farm/quick, GET|POST /farm/quick/<name>   quick forms written in YAML (quick.ts)
 */
import express, { type NextFunction, type Request, type RequestHandler, type Response, type Router } from 'express';
import type { AppContext } from '../context.ts';
import type { ResourceType } from '../model/registry.ts';
import type { BundleUi } from '../model/ui.ts';
import type { LoginSessions } from '../oauth/session.ts';
import type { Limiters } from '../oauth/rate-limit.ts';
import { JsonApiServices } from '../jsonapi/handlers/services.ts';
import { ApiError } from '../errors.ts';
import { domainApiError } from '../jsonapi/errors.ts';
import { html } from './html.ts';
import { M } from './messages.ts';
import { page, sendPage } from './layout.ts';
import { STYLE, STYLE_PATH } from './style.ts';
import { Formats } from './format.ts';
import { WebReads } from './reads.ts';
import { WebSessions } from './session.ts';
import { ListPages, TASKS } from './lists.ts';
import { RecordPages } from './records.ts';
import { AccountPages } from './account.ts';
// --- People (issue 38 screen 8) ---
import { PeoplePages } from './people.ts';
// A record's page, its revisions compared, and its files (the record page's block).
import { RecordPage } from './record-page.ts';
import { RelatedRecords } from './related.ts';
import { RevisionDiffPage } from './revision-diff.ts';
import { FilePages } from './files.ts';
// Issue 42 §3 and §4: bulk actions on lists, spreadsheets in and out.
import { BulkPages } from './bulk.ts';
import { SheetPages } from './sheets.ts';
import { FieldForms } from './records.ts';
// helper `views`: an asset's timeline, saved views, readings' summary and CSV (issue 42 §5, §6).
import { viewsRoutes } from './views.ts';
// --- The pages' own scripts (issue 42): built at install or at start, served under /farm/assets/ (assets.ts) ---
import { ensureAssets, serveAsset } from './assets.ts';
import { pageCsp } from './layout.ts';
// --- The farm map (issue 42 part 1): the features of a view (map.ts) ---
import { MapPages } from './map.ts';
// --- Quick forms (issue 42 §2) ---
import { QuickFormPages } from './quick.ts';

/** Where webRoutes answers (app.ts scopes it to these). */
export const WEB_PATHS = { exact: ['/farm'], prefixes: ['/farm/'] } as const;

export interface WebDeps {
  ctx: AppContext;
  /** The OAuth pages' sign-in, shared (oauth/index.ts). */
  sessions: LoginSessions;
  limiters: Limiters;
  /**
   * Refuses a write while the database is ahead of this process's code (http/database-ahead.ts),
   * as it refuses the API's: every POST that changes a record goes through it. Signing in and out
   * does not, as an API sign-in does not.
   */
  refuseWrites: RequestHandler;
}

export function webRoutes({ ctx, sessions, limiters, refuseWrites }: WebDeps): Router {
  const services = JsonApiServices.of(ctx);
  // Every date and number on the pages in the farm's locale and time zone (TILTH_LOCALE, TILTH_TIME_ZONE).
  const formats = new Formats(ctx.config.locale, ctx.config.timeZone);
  const reads = new WebReads(services);
  const web = new WebSessions(ctx, sessions, limiters);
  const lists = new ListPages(ctx, reads, web, formats);
  const records = new RecordPages(ctx, services, reads, web, lists, formats);
  const account = new AccountPages(ctx, services, web, lists);
  // The record page's block.
  const recordPage = new RecordPage(ctx, services, reads, web, lists, formats, new RelatedRecords(ctx, reads));
  const revisionDiff = new RevisionDiffPage(ctx, services, reads, web, lists, formats);
  const filePages = new FilePages(ctx);
  const router = express.Router();
  // A POST that changes a record: signed in, not refused (before its body is read), then its body and CSRF token.
  const recordWrite = [web.signedIn, refuseWrites, web.formBody, web.checkCsrf];

  router.get(STYLE_PATH, (_req, res) => {
    res.type('text/css').set('Cache-Control', 'public, max-age=31536000, immutable').send(STYLE);
  });
  // --- The pages' own scripts: built now when missing or stale (logged), then served from memory ---
  ensureAssets(ctx.logger);
  router.get(`/farm/assets/:file`, serveAsset);
  // The map's tiles (TILTH_MAP_TILES), when set, are the one other origin a page takes images from.
  const csp = pageCsp(ctx.config.mapTiles?.origins ?? []);
  router.use((_req, res, next) => {
    res.locals.pageCsp = csp;
    next();
  });
  // --- end of the pages' own scripts ---
  router.use(web.routes());
  // --- The farm map: GET /farm/map/features (map.ts), before the generic /farm/<type>/<bundle> routes ---
  router.use(MapPages.of(ctx).routes(web));

  /** The resource type and UI description of a path's entity type and bundle, or null (a 404). */
  const bundleOf = (req: Request) => {
    const rt = ctx.registry.get(ctx.registry.typeName(String(req.params.entityType), String(req.params.bundle)));
    const ui = rt ? ctx.generated.ui.get(rt.type) : undefined;
    return rt && ui && rt.entityType.entityType !== 'file' ? { rt, ui } : null;
  };
  const asyncPage =
    (handler: (req: Request, res: Response) => Promise<unknown>) => (req: Request, res: Response, next: NextFunction) =>
      handler(req, res).catch(next);
  const notFoundPage = (res: Response) => sendError(res, 404, M.errors.notFound, M.errors.notFoundText);
  /** A page of one bundle (the path's entity type and bundle, with screens), or the 404 page. */
  const bundlePage =
    (handler: (req: Request, res: Response, bundle: { rt: ResourceType; ui: BundleUi }) => unknown): RequestHandler =>
    (req, res, next) => {
      const b = bundleOf(req);
      Promise.resolve(b ? handler(req, res, b) : notFoundPage(res)).catch(next);
    };
  const sendError = (res: Response, status: number, title: string, text: string) =>
    sendPage(
      res,
      status,
      page(title, web.chrome(null), html`<p>${text}</p><p><a href="/farm">${M.errors.home}</a></p>`),
    );

  router.get(
    '/farm',
    web.signedIn,
    asyncPage((req, res) => lists.dashboard(req, res)),
  );
  // --- People (issue 38 screen 8): /farm/people…, for account administrators (people.ts) ---
  router.use(new PeoplePages(ctx, services, reads, web, lists, formats).routes(web.signedIn, recordWrite));
  // --- end of People ---
  // --- Issue 42 §3, §4: bulk actions and spreadsheets (bulk.ts, sheets.ts), before the routes their paths would match ---
  const sheets = new SheetPages(ctx, services, reads, web, lists);
  const bulk = new BulkPages(ctx, services, reads, web, lists, formats, new FieldForms(records), sheets);
  lists.attachTools({
    export: (res, listView, view, format) => sheets.export(res, listView, view, format),
    offer: (res, listView, view, count) => bulk.offer(res, listView, view, count),
  });
  router.use(sheets.routes(web.signedIn, refuseWrites));
  router.use(bulk.routes(recordWrite));
  // --- end of issue 42 §3, §4 ---
  // --- helper `views` (issue 42 §5, §6): an asset's timeline, saved views, readings' summary and CSV ---
  router.use(viewsRoutes({ ctx, reads, web, lists, formats, signedIn: web.signedIn, recordWrite }));
  // --- end of helper `views` ---
  // --- Quick forms (issue 42 §2): /farm/quick… (quick.ts), before the generic /farm/<entity type> routes ---
  const quick = new QuickFormPages(ctx, services, reads, web, lists, formats, records);
  lists.quickForms = (principal) => quick.links(principal);
  router.use(quick.routes(web.signedIn, refuseWrites));
  // --- end of Quick forms ---
  router.get('/farm/account/password', web.signedIn, (_req, res) => account.form(res));
  router.post(
    '/farm/account/password',
    ...recordWrite,
    asyncPage((req, res) => account.save(req, res)),
  );
  // The record page's block: files before the generic /farm/<entity type>/<bundle> routes they would match.
  router.get(
    '/farm/files/:uuid',
    web.signedIn,
    asyncPage((req, res) => filePages.send(req, res, false)),
  );
  router.get(
    '/farm/files/:uuid/image',
    web.signedIn,
    asyncPage((req, res) => filePages.send(req, res, true)),
  );
  router.get(
    '/farm/:entityType/:bundle/:uuid/revisions',
    web.signedIn,
    bundlePage((req, res, b) => revisionDiff.show(req, res, b.rt, b.ui, String(req.params.uuid))),
  );
  router.get(
    '/farm/:entityType',
    web.signedIn,
    asyncPage(async (req, res) => {
      if (!(await lists.index(req, res, String(req.params.entityType)))) notFoundPage(res);
    }),
  );
  router.get(
    '/farm/:entityType/:bundle',
    web.signedIn,
    bundlePage((req, res, b) => lists.list(req, res, b.rt, b.ui)),
  );
  router.get(
    '/farm/:entityType/:bundle/new',
    web.signedIn,
    // The query string may fill fields in (the map's "record a log here": ?location=<name> [<uuid>]).
    bundlePage((req, res, b) => records.form(res, b.rt, b.ui, null, new URL(req.originalUrl, 'http://x').searchParams)),
  );
  router.post(
    '/farm/:entityType/:bundle/new',
    ...recordWrite,
    bundlePage((req, res, b) => records.save(req, res, b.rt, b.ui, null)),
  );
  router.get(
    '/farm/:entityType/:bundle/:uuid',
    web.signedIn,
    bundlePage((req, res, b) => recordPage.show(req, res, b.rt, b.ui, String(req.params.uuid))),
  );
  router.get(
    '/farm/:entityType/:bundle/:uuid/edit',
    web.signedIn,
    bundlePage((req, res, b) => records.form(res, b.rt, b.ui, String(req.params.uuid))),
  );
  router.post(
    '/farm/:entityType/:bundle/:uuid/edit',
    ...recordWrite,
    bundlePage((req, res, b) => records.save(req, res, b.rt, b.ui, String(req.params.uuid))),
  );
  // Screen 5: a file or image added to a record's field (uploads.ts reads the multipart body and checks its CSRF token).
  router.post(
    '/farm/:entityType/:bundle/:uuid/files/:field',
    web.signedIn,
    refuseWrites,
    bundlePage((req, res, b) =>
      records.uploads.upload(req, res, b.rt, String(req.params.uuid), String(req.params.field)),
    ),
  );
  router.get(
    '/farm/:entityType/:bundle/:uuid/delete',
    web.signedIn,
    bundlePage((req, res, b) => records.confirmDelete(res, b.rt, String(req.params.uuid))),
  );
  router.post(
    '/farm/:entityType/:bundle/:uuid/delete',
    ...recordWrite,
    bundlePage((req, res, b) => records.remove(req, res, b.rt, String(req.params.uuid))),
  );
  router.post(
    '/farm/:entityType/:bundle/:uuid/status',
    ...recordWrite,
    bundlePage((req, res, b) =>
      b.rt.entityType.entityType === 'asset'
        ? records.setStatus(req, res, b.rt, String(req.params.uuid))
        : notFoundPage(res),
    ),
  );
  router.post(
    '/farm/:entityType/:bundle/:uuid/done',
    ...recordWrite,
    bundlePage((req, res, b) =>
      b.rt.entityType.entityType === TASKS.entityType
        ? records.markDone(req, res, b.rt, String(req.params.uuid))
        : notFoundPage(res),
    ),
  );
  // --- helper `tasks`: a task moved to another date from the dashboard ---
  router.post(
    '/farm/:entityType/:bundle/:uuid/move',
    ...recordWrite,
    bundlePage((req, res, b) =>
      b.rt.entityType.entityType === TASKS.entityType
        ? lists.moveTask(req, res, b.rt, String(req.params.uuid))
        : notFoundPage(res),
    ),
  );
  // --- end of helper `tasks`'s routes ---
  router.use((_req: Request, res: Response) => notFoundPage(res));

  // Every failure is a plain page: 403 and 404 as the API answers them, never a stack trace.
  router.use((error: unknown, _req: Request, res: Response, _next: NextFunction) => {
    if (res.headersSent) return;
    // Express decodes a path's parameters and throws a URIError when one is not valid
    // percent-encoding: the address is wrong, not the server.
    if (error instanceof URIError) return sendError(res, 400, M.errors.badRequest, M.errors.badAddress);
    const e = domainApiError(error) ?? error;
    if (e instanceof ApiError && e.status === 404) return notFoundPage(res);
    if (e instanceof ApiError && (e.status === 403 || e.status === 401))
      return sendError(res, 403, M.errors.forbidden, M.errors.forbiddenText);
    if (e instanceof ApiError && e.status < 500) return sendError(res, e.status, M.errors.badRequest, e.message);
    // Refused for now (the database is ahead of this process): the API's 503, as a page.
    if (e instanceof ApiError && e.status === 503) {
      res.set(e.headers);
      return sendError(res, 503, M.errors.unavailable, e.message);
    }
    (res.locals.log ?? ctx.logger).error({ err: error }, 'web page failed');
    sendError(res, 500, M.errors.server, M.errors.serverText);
  });
  return router;
}

/**
 * `GET /` for a browser signed in: to the dashboard. Everyone else (API clients, a browser not
 * signed in) gets the front door as before.
 */
export function rootForSignedIn(sessions: LoginSessions): express.RequestHandler {
  return (req, res, next) => {
    // With a query (back from the authorization flow) the front door cleans the address first.
    if (req.method !== 'GET' || req.path !== '/' || !req.headers.cookie || req.originalUrl.includes('?')) return next();
    sessions.attach(req).then((session) => (session ? res.redirect(303, '/farm') : next()), next);
  };
}
