/**
 * Dispatches /api requests through the generated route table. The table is indexed once into a
 * map keyed by method and path pattern, so a request costs two map lookups however many bundles
 * there are. A path that exists under other methods gets 405 with Allow; anything else 404.
 */
import type { NextFunction, Request, Response } from 'express';
import type { HandlerName, RouteEntry } from '../model/routes.ts';
import type { FieldDescriptor } from '../model/descriptor.ts';
import type { ModelRegistry, ResourceType } from '../model/registry.ts';
import { methodNotAllowed, notFound } from '../errors.ts';

export interface MatchedRoute {
  entry: RouteEntry;
  resourceType: ResourceType;
  /** The UUID from the path, when the route has one. */
  id?: string;
  field?: FieldDescriptor;
}

export type RouteHandler = (req: Request, res: Response, route: MatchedRoute) => Promise<void> | void;

const UUID_SEGMENT = 3; // /api/<entity>/<bundle>/<uuid>/…

export function createDispatcher(
  routes: readonly RouteEntry[],
  registry: ModelRegistry,
  handlers: Record<HandlerName, RouteHandler>,
) {
  const byPattern = new Map<
    string,
    Map<string, { entry: RouteEntry; resourceType: ResourceType; field?: FieldDescriptor }>
  >();
  for (const entry of routes) {
    const resourceType = registry.get(entry.resourceType);
    if (!resourceType) continue; // a bundle of a module that is switched off
    const field = entry.field ? resourceType.fieldsByName.get(entry.field) : undefined;
    let methods = byPattern.get(entry.path);
    if (!methods) byPattern.set(entry.path, (methods = new Map()));
    methods.set(entry.method, { entry, resourceType, ...(field ? { field } : {}) });
  }

  return async (req: Request, res: Response, next: NextFunction): Promise<void> => {
    const path = req.path.length > 1 && req.path.endsWith('/') ? req.path.slice(0, -1) : req.path;
    const segments = ('/api' + path).split('/').slice(1);
    // segments: ['api', entity, bundle, …]
    let methods = byPattern.get('/api' + path);
    let id: string | undefined;
    if (!methods && segments.length > UUID_SEGMENT) {
      id = segments[UUID_SEGMENT];
      const pattern = [...segments.slice(0, UUID_SEGMENT), '{id}', ...segments.slice(UUID_SEGMENT + 1)].join('/');
      methods = byPattern.get('/' + pattern);
    }
    if (!methods) return next();
    const method = req.method === 'HEAD' ? 'GET' : req.method;
    const match = methods.get(method);
    if (!match) {
      if (method === 'OPTIONS') return next();
      throw methodNotAllowed(req.method, [...methods.keys()]);
    }
    let decodedId: string | undefined;
    if (id !== undefined) {
      try {
        decodedId = decodeURIComponent(id);
      } catch {
        throw notFound(`No resource of type ${match.resourceType.type} has the id "${id}".`);
      }
    }
    res.locals.route = match.entry.path;
    await handlers[match.entry.handler](req, res, { ...match, ...(decodedId !== undefined ? { id: decodedId } : {}) });
  };
}
