/** Binds every handler name in the route table to its shared implementation. */
import type { AppContext } from '../../context.ts';
import type { HandlerName } from '../../model/routes.ts';
import type { RouteHandler } from '../router.ts';
import { SchemaStore, sendSchema } from '../schemas.ts';
import { notFound } from '../../errors.ts';
import { JsonApiServices } from './services.ts';
import { individualHandlers } from './individual.ts';
import { createHandler } from './create.ts';
import { collectionHandler } from './collection.ts';
import { relationshipHandlers } from './relationships.ts';
import { fileHandlers, fileDownloadRoutes } from './files.ts';
import { revisionHistoryRoutes } from './revision-history.ts';
import type { Router } from 'express';
import type { ConfigCatalogue } from '../config-resources.ts';
import { changesRoutes } from '../changes.ts';

export function createResourceHandlers(
  ctx: AppContext,
  store: SchemaStore,
): {
  handlers: Record<HandlerName, RouteHandler>;
  downloads: Router;
  revisionHistory: Router;
  changes: Router;
  configs: ConfigCatalogue;
} {
  const services = JsonApiServices.of(ctx);
  const individual = individualHandlers(services);
  const relationships = relationshipHandlers(services);
  // The farm's one FileStore, with its upload limits (context.ts buildFarmServices).
  const files = ctx.services.files;
  const uploads = fileHandlers(services, files);
  const handlers: Record<HandlerName, RouteHandler> = {
    // In the request's shape, naming its base (jsonapi/schemas.ts).
    'schema.resource': (_req, res, route) => {
      const text = store.of(res).resourceSchema(route.resourceType.type);
      if (!text) throw notFound(`No schema for ${route.resourceType.type}.`);
      sendSchema(res, text);
    },
    'schema.individual': (req, res, route) => {
      const schemas = store.of(res);
      sendSchema(res, schemas.documentSchema(route.resourceType, 'individual', schemas.self(req.originalUrl)));
    },
    'schema.collection': (req, res, route) => {
      const schemas = store.of(res);
      sendSchema(res, schemas.documentSchema(route.resourceType, 'collection', schemas.self(req.originalUrl)));
    },
    'schema.related': (req, res, route) => {
      const schemas = store.of(res);
      const text = schemas.relatedSchema(route.resourceType, route.entry.field!, schemas.self(req.originalUrl));
      if (!text) throw notFound(`${route.resourceType.type} has no relationship ${route.entry.field}.`);
      sendSchema(res, text);
    },
    'collection.get': collectionHandler(services),
    'collection.post': createHandler(services),
    'individual.get': individual.get,
    'individual.patch': individual.patch,
    'individual.delete': individual.delete,
    'related.get': relationships.related,
    'relationship.get': relationships.get,
    'relationship.post': relationships.post,
    'relationship.patch': relationships.patch,
    'relationship.delete': relationships.delete,
    'file.upload': uploads.upload,
    'file.uploadNew': uploads.uploadNew,
  };
  return {
    handlers,
    downloads: fileDownloadRoutes(services, files),
    revisionHistory: revisionHistoryRoutes(services),
    changes: changesRoutes(services),
    configs: services.configs,
  };
}
