/** Binds every handler name in the route table to its shared implementation. */
import type { AppContext } from '../../context.ts';
import type { HandlerName } from '../../model/routes.ts';
import type { RouteHandler } from '../router.ts';
import { SchemaStore, sendSchema } from '../schemas.ts';
import { ApiError, notFound } from '../../errors.ts';

export function createResourceHandlers(ctx: AppContext, store: SchemaStore): Record<HandlerName, RouteHandler> {
  const self = (path: string) => `${ctx.config.baseUrl}${path}`;
  const notYet: RouteHandler = () => {
    throw new ApiError(501, 'Not implemented yet.');
  };
  return {
    'schema.resource': (_req, res, route) => {
      const text = store.resourceSchema(route.resourceType.type);
      if (!text) throw notFound(`No schema for ${route.resourceType.type}.`);
      sendSchema(res, text);
    },
    'schema.individual': (req, res, route) => sendSchema(res, store.documentSchema(route.resourceType, 'individual', self(req.originalUrl))),
    'schema.collection': (req, res, route) => sendSchema(res, store.documentSchema(route.resourceType, 'collection', self(req.originalUrl))),
    'schema.related': (req, res, route) => {
      const text = store.relatedSchema(route.resourceType, route.entry.field!, self(req.originalUrl));
      if (!text) throw notFound(`${route.resourceType.type} has no relationship ${route.entry.field}.`);
      sendSchema(res, text);
    },
    'collection.get': notYet,
    'collection.post': notYet,
    'individual.get': notYet,
    'individual.patch': notYet,
    'individual.delete': notYet,
    'related.get': notYet,
    'relationship.get': notYet,
    'relationship.post': notYet,
    'relationship.patch': notYet,
    'relationship.delete': notYet,
    'file.upload': notYet,
    'file.uploadNew': notYet,
  };
}
