/** Reading a JSON:API request: its query string (PHP-style, validated), its body's media type, its own URL. */
import type { Request } from 'express';
import type { AppContext } from '../../context.ts';
import type { ResourceType } from '../../model/registry.ts';
import { validateIncludes } from '../include.ts';
import { badParameter, unsupportedMediaType } from '../../errors.ts';
import { JSONAPI_MEDIA_TYPE } from '../document.ts';
import { parseJsonApiQuery, RESOURCE_VERSION_PARAMETER, type JsonApiQuery } from '../query/index.ts';

export class RequestReader {
  constructor(private readonly ctx: AppContext) {}

  /** The raw query string of a request (after `?`), parsed the PHP way. */
  query(req: Request, rt?: ResourceType): JsonApiQuery {
    const url = req.originalUrl;
    const i = url.indexOf('?');
    const query = parseJsonApiQuery(i < 0 ? '' : url.slice(i + 1));
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

  selfLink(req: Request): { href: string } {
    return { href: `${this.ctx.config.baseUrl}${req.originalUrl}` };
  }
}
