/** Reading a JSON:API request: its query string (PHP-style, validated), its body's media type, its own URL. */
import type { Request } from 'express';
import type { AppContext } from '../../context.ts';
import type { ResourceType } from '../../model/registry.ts';
import { validateIncludes } from '../include.ts';
import { badParameter, unsupportedMediaType } from '../../errors.ts';
import { JSONAPI_MEDIA_TYPE } from '../document.ts';
import { parseJsonApiQuery, RESOURCE_VERSION_PARAMETER, type JsonApiQuery } from '../query/index.ts';
import { ShapedQuery } from '../collection/shaped-query.ts';
import { SHAPE_NAMES, type ShapeName } from '../../model/shapes.ts';
import { shapeOf, type ApiShape } from '../shape.ts';

export class RequestReader {
  /** Each shape's reader of names and values into stored ones, made once. */
  private readonly shaped: Record<ShapeName, ShapedQuery>;

  constructor(private readonly ctx: AppContext) {
    this.shaped = Object.fromEntries(SHAPE_NAMES.map((s) => [s, new ShapedQuery(ctx.registry, s)])) as Record<
      ShapeName,
      ShapedQuery
    >;
  }

  /** The request's API shape (http/shape-choice.ts chose it); the farmOS 2.x shape for a request without a response. */
  shape(req: Request): ApiShape {
    return shapeOf(req.res, this.ctx.config.baseUrl);
  }

  /**
   * The raw query string of a request (after `?`), parsed the PHP way; with `rt`, its field names
   * and values read from the request's shape into the stored fields' (collection/shaped-query.ts).
   */
  query(req: Request, rt?: ResourceType): JsonApiQuery {
    const url = req.originalUrl;
    const i = url.indexOf('?');
    let query = parseJsonApiQuery(i < 0 ? '' : url.slice(i + 1));
    query = this.shaped[this.shape(req).name].read(rt, query);
    if (query.resourceVersion && req.method !== 'GET' && req.method !== 'HEAD') {
      // Drupal's answer: a version can be read, not written to.
      throw badParameter(
        RESOURCE_VERSION_PARAMETER,
        `${req.method} requests with a \`${RESOURCE_VERSION_PARAMETER}\` query parameter are not supported.`,
      );
    }
    if (rt && query.include.length) validateIncludes(this.ctx.registry, rt, query.include);
    return query;
  }

  /** 415 unless the request body is declared as JSON:API. */
  requireJsonApiBody(req: Request): void {
    const type = req.headers['content-type'];
    if (!type) throw unsupportedMediaType(`No "Content-Type" request header specified: send ${JSONAPI_MEDIA_TYPE}.`);
    const [media, ...params] = type.split(';').map((s) => s.trim().toLowerCase());
    if (media !== JSONAPI_MEDIA_TYPE)
      throw unsupportedMediaType(`The Content-Type "${type}" is not supported here: send ${JSONAPI_MEDIA_TYPE}.`);
    const bad = params.filter((p) => p && !/^(charset|ext|profile)=/.test(p));
    if (bad.length)
      throw unsupportedMediaType(
        `The media type parameter(s) ${bad.join(', ')} are not supported: send ${JSONAPI_MEDIA_TYPE} without them.`,
      );
  }

  /** The request's own URL on the base it came in on. */
  selfLink(req: Request): { href: string } {
    return { href: `${this.shape(req).base}${req.originalUrl}` };
  }
}
