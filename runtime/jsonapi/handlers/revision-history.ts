/**
 * Tilth's own extension: `GET /api/<entity>/<bundle>/<uuid>/revision-history` lists a record's
 * revisions, newest first, each as the resource object that `?resourceVersion=id:<n>` serves
 * (who: relationship `revision_user`; when: `revision_created`; why: `revision_log_message`).
 * `fields[<type>]` trims them, e.g. to just those three and `drupal_internal__revision_id`.
 *
 * Why this path: `/<uuid>/<name>` is the related route of a field called <name>, so
 * `/<uuid>/revisions` would collide with a field named `revisions` (a module may add one). Field
 * names are machine names, `[a-z][a-z0-9_]*`, and never hold a hyphen, so `revision-history` can
 * never be a field's route. It echoes Drupal's `version-history` link relation.
 */
import express, { type Router } from 'express';
import type { JsonApiServices } from './services.ts';
import { badParameter } from '../../errors.ts';
import { buildQueryString, fieldsetsToRead, RESOURCE_VERSION_PARAMETER } from '../query/index.ts';

export const REVISION_HISTORY_SEGMENT = 'revision-history';

export function revisionHistoryRoutes(s: JsonApiServices): Router {
  const router = express.Router();
  router.get(`/api/:entity/:bundle/:id/${REVISION_HISTORY_SEGMENT}`, async (req, res, next) => {
    const rt = s.ctx.registry.get(`${req.params.entity}--${req.params.bundle}`);
    if (!rt || !rt.entityType.revisionId) return next();
    const probe = s.requests.query(req, rt);
    if (probe.resourceVersion)
      throw badParameter(
        RESOURCE_VERSION_PARAMETER,
        `The revision history lists every version; it takes no ${RESOURCE_VERSION_PARAMETER} parameter.`,
      );
    const { principal, query, record } = await s.records.viewable(req, res, rt, req.params.id, { fieldsets: true });
    const fieldsets = fieldsetsToRead(query.fields, query.include);
    const { offset, limit } = query.page;
    // One more than a page tells whether another page follows.
    const rows = await s.loader.store.revisions.list(s.knex, rt.entityType.entityType, record.id, {
      offset,
      limit: limit + 1,
    });
    const revisions = await s.loader.loadRevisions(s.knex, record, rows.slice(0, limit), fieldsets);
    for (const r of revisions) r.revisionView = true;
    const base = `${s.shape(res).base}/api/${rt.entityType.entityType}/${rt.bundle.bundle}/${record.uuid}/${REVISION_HISTORY_SEGMENT}`;
    const links: Record<string, { href: string }> = { self: s.requests.selfLink(req) };
    if (rows.length > limit) {
      const params = { ...query.params, page: { offset: String(offset + limit), limit: String(limit) } };
      links.next = { href: `${base}?${buildQueryString(params)}` };
    }
    s.documents.send(
      res,
      200,
      await s.documents.document(s.knex, revisions, principal, query, links, { shape: s.shape(res) }),
    );
  });
  return router;
}
