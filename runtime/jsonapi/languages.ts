/**
 * `/api/configurable_language/configurable_language`: the installed languages, read-only, as
 * Drupal's language module lists them (English plus the two locked pseudo-languages).
 */
import express, { type Request, type Response, type Router } from 'express';
import type { AppContext } from '../context.ts';
import { nameUuid } from '../model/config-entities.ts';
import { principalOf } from '../access/principal.ts';
import { requireAuthenticated } from '../access/policy.ts';
import { forbidden, methodNotAllowed, notFound } from '../errors.ts';
import { JSONAPI_VERSION, sendDocument } from './document.ts';
import { parseJsonApiQuery } from './query/index.ts';

export const LANGUAGE_TYPE = 'configurable_language--configurable_language';
export const LANGUAGE_PATH = '/api/configurable_language/configurable_language';

const LANGUAGES = [
  { langcode: 'en', label: 'English', weight: 0, locked: false },
  { langcode: 'und', label: 'Not specified', weight: 1, locked: true },
  { langcode: 'zxx', label: 'Not applicable', weight: 2, locked: true },
];

export function languageRoutes(ctx: AppContext): Router {
  const router = express.Router();
  const base = `${ctx.config.baseUrl}${LANGUAGE_PATH}`;
  const resource = (l: (typeof LANGUAGES)[number]) => {
    const id = nameUuid(`${LANGUAGE_TYPE}:${l.langcode}`);
    return {
      type: LANGUAGE_TYPE,
      id,
      links: { self: { href: `${base}/${id}` } },
      attributes: {
        drupal_internal__id: l.langcode,
        langcode: 'en',
        status: true,
        dependencies: [],
        label: l.label,
        direction: 'ltr',
        weight: l.weight,
        locked: l.locked,
      },
    };
  };
  const check = (req: Request, res: Response) => {
    const principal = principalOf(res);
    requireAuthenticated(principal);
    if (!principal.permissions.has('language:view'))
      throw forbidden('The current user is not allowed to view languages.');
    const i = req.originalUrl.indexOf('?');
    parseJsonApiQuery(i < 0 ? '' : req.originalUrl.slice(i + 1));
  };
  router.get(LANGUAGE_PATH, (req, res) => {
    check(req, res);
    sendDocument(res, 200, {
      jsonapi: JSONAPI_VERSION,
      data: LANGUAGES.map(resource),
      links: { self: { href: `${ctx.config.baseUrl}${req.originalUrl}` } },
    });
  });
  router.get(`${LANGUAGE_PATH}/:id`, (req, res) => {
    check(req, res);
    const hit = LANGUAGES.map(resource).find((l) => l.id === req.params.id);
    if (!hit) throw notFound(`There is no ${LANGUAGE_TYPE} with the id "${req.params.id}".`, { parameter: 'id' });
    sendDocument(res, 200, {
      jsonapi: JSONAPI_VERSION,
      data: hit,
      links: { self: { href: `${ctx.config.baseUrl}${req.originalUrl}` } },
    });
  });
  router.all([LANGUAGE_PATH, `${LANGUAGE_PATH}/:id`], (req) => {
    throw methodNotAllowed(req.method, ['GET']);
  });
  return router;
}
