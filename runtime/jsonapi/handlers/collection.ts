/** GET of a collection: filter, sort, page (keyset when following links.next), include, sparse fieldsets. */
import type { Request } from 'express';
import type { RouteHandler } from '../router.ts';
import type { JsonApiServices } from './services.ts';
import { principalOf } from '../../access/principal.ts';
import { assertMayOnType } from '../../access/policy.ts';
import { QueryCompiler } from '../collection/compile.ts';
import { fetchPage } from '../collection/page.ts';
import { buildQueryString } from '../query/build-query-string.ts';
import { fieldsetsToRead, RESOURCE_VERSION_PARAMETER, type JsonApiQuery } from '../query/index.ts';
import { badParameter } from '../../errors.ts';
import { exportFormat, sendExport } from '../export.ts';

/** An absolute link to this collection with `page` replaced and every other parameter kept. */
function pageLink(
  s: JsonApiServices,
  req: Request,
  query: JsonApiQuery,
  page: Record<string, string>,
): { href: string } {
  const params = { ...query.params, page };
  const qs = buildQueryString(params);
  return { href: `${s.requests.shape(req).base}${req.baseUrl}${req.path}${qs ? `?${qs}` : ''}` };
}

export function collectionHandler(s: JsonApiServices): RouteHandler {
  const compiler = new QueryCompiler(s.knex, s.ctx.registry, s.ctx.db.sql);
  return async (req, res, route) => {
    const principal = principalOf(res);
    const rt = route.resourceType;
    const query = s.requests.query(req, rt);
    // As Drupal: a collection is of current revisions, which `rel:` names; an `id:` names none.
    if (query.resourceVersion?.kind === 'id') {
      throw badParameter(
        RESOURCE_VERSION_PARAMETER,
        'Collection resources only support the following resource version identifiers: rel:latest-version, rel:working-copy',
      );
    }
    assertMayOnType(principal, rt.entityType, 'view', `${rt.type} resources`);
    // CSV, GeoJSON or KML: the whole filtered collection, streamed (export.ts).
    const format = exportFormat(req, query);
    if (format) return sendExport(s, compiler, res, rt, query, principal, format);
    const { page } = query;
    const at = query.asOf ?? undefined;
    const result = await fetchPage(s.knex, compiler, rt, query.filter, query.sort, page, principal, at);
    const records = await s.loader.load(
      s.knex,
      rt.entityType.entityType,
      result.ids,
      fieldsetsToRead(query.fields, query.include),
      at,
      [rt.bundle.bundle],
    );
    const links: Record<string, { href: string }> = { self: s.requests.selfLink(req) };
    if (result.hasMore) {
      links.next = pageLink(s, req, query, {
        offset: String(page.offset + page.limit),
        limit: String(page.limit),
        ...(result.nextCursor ? { cursor: result.nextCursor } : {}),
      });
    }
    if (page.offset > 0) {
      links.first = pageLink(s, req, query, { offset: '0', limit: String(page.limit) });
      links.prev = pageLink(s, req, query, {
        offset: String(Math.max(0, page.offset - page.limit)),
        limit: String(page.limit),
      });
    }
    s.documents.send(
      res,
      200,
      await s.documents.document(s.knex, records, principal, query, links, { at, shape: s.shape(res) }),
    );
  };
}
