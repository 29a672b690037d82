/**
 * helper `views`'s routes (issue 42 §5, §6): an asset's timeline, saved views, and a data
 * stream's readings summarised for its chart or as CSV; and the log types' icon sprite.
 *
 *   GET  /farm/asset/<bundle>/<uuid>/timeline     (timeline.ts)
 *   POST /farm/views                              save the list's view (saved-views.ts)
 *   POST /farm/views/<id>/share, /farm/views/<id>/delete
 *   GET  /farm/data_stream/basic/<uuid>/readings, …/readings.csv   (charts.ts)
 */
import express, { type NextFunction, type Request, type RequestHandler, type Response, type Router } from 'express';
import type { AppContext } from '../context.ts';
import { ApiError } from '../errors.ts';
import { M } from './messages.ts';
import type { Formats } from './format.ts';
import type { WebReads } from './reads.ts';
import { formValue, webState, type Form, type WebSessions } from './session.ts';
import type { ListPages } from './lists.ts';
import { RelatedRecords } from './related.ts';
import { TimelinePage } from './timeline.ts';
import { RecordCharts } from './charts.ts';
import { ICON_SPRITE, ICONS_PATH } from './views-style.ts';

export interface ViewsDeps {
  ctx: AppContext;
  reads: WebReads;
  web: WebSessions;
  lists: ListPages;
  formats: Formats;
  signedIn: RequestHandler;
  /** A POST that changes something: signed in, not refused, its body read and its CSRF token checked. */
  recordWrite: RequestHandler[];
}

export function viewsRoutes({ ctx, reads, web, lists, formats, signedIn, recordWrite }: ViewsDeps): Router {
  const router = express.Router();
  const timeline = new TimelinePage(ctx, reads, web, lists, formats, new RelatedRecords(ctx, reads));
  const charts = new RecordCharts(ctx, reads, formats);
  const async =
    (handler: (req: Request, res: Response) => Promise<unknown>) => (req: Request, res: Response, next: NextFunction) =>
      handler(req, res).catch(next);

  router.get(ICONS_PATH, (_req, res) => {
    res.type('image/svg+xml').set('Cache-Control', 'public, max-age=31536000, immutable').send(ICON_SPRITE);
  });
  router.get(
    '/farm/asset/:bundle/:uuid/timeline',
    signedIn,
    async(async (req, res) => {
      const rt = ctx.registry.get(ctx.registry.typeName('asset', String(req.params.bundle)));
      if (!rt) throw new ApiError(404, M.errors.notFoundText);
      await timeline.show(req, res, rt, String(req.params.uuid));
    }),
  );
  router.use(charts.routes(signedIn));

  router.post(
    '/farm/views',
    ...recordWrite,
    async(async (req, res) => {
      const form = req.body as Form;
      const path = formValue(form, 'path') ?? '';
      await lists.saved.save(webState(res).principal, {
        name: formValue(form, 'name') ?? '',
        path,
        query: formValue(form, 'query') ?? '',
      });
      const query = new URLSearchParams(formValue(form, 'query') ?? '');
      query.set('view_saved', '1');
      // The path was checked as one of this site's lists by save().
      res.redirect(303, `${path}?${query}`);
    }),
  );
  router.post(
    '/farm/views/:id/share',
    ...recordWrite,
    async(async (req, res) => {
      const shared = formValue(req.body as Form, 'shared') === '1';
      await lists.saved.setShared(webState(res).principal, Number(req.params.id), shared);
      res.redirect(303, '/farm#saved-views');
    }),
  );
  router.post(
    '/farm/views/:id/delete',
    ...recordWrite,
    async(async (req, res) => {
      await lists.saved.remove(webState(res).principal, Number(req.params.id));
      res.redirect(303, '/farm#saved-views');
    }),
  );
  return router;
}
