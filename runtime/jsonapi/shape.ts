/**
 * The API shape a request is answered in, and the base its links are built on: one value per
 * request, in `res.locals.shape`, set once by http/shape-choice.ts before any route runs. Every
 * face reads it here (`shapeOf`), never from the request itself. The mapping each shape applies
 * to a bundle is compiled once at start (model/shapes.ts, `ResourceType.shapes`).
 */
import type { Response } from 'express';
import type { ShapeName } from '../model/shapes.ts';
import { SHAPE_FARM_VERSION } from '../model/shapes.ts';

export interface ApiShape {
  name: ShapeName;
  /** The absolute base every link of the answer starts with (no trailing slash). */
  base: string;
  /** `meta.farm.version` in this shape. */
  version: string;
  /** The Host header the shape was chosen by (a host name of TILTH_API4_HOSTS), carried to sub-requests. */
  host?: string;
}

/** The farmOS 2.x shape on the farm's own base URL: what /api has always answered, and what the web pages read. */
export function defaultShape(baseUrl: string): ApiShape {
  return { name: 'farmos2', base: baseUrl, version: SHAPE_FARM_VERSION.farmos2 };
}

export function apiShape(name: ShapeName, base: string): ApiShape {
  return { name, base, version: SHAPE_FARM_VERSION[name] };
}

/** The request's shape; `fallback` for a response no shape was chosen for (a page, a test's own call). */
export function shapeOf(res: Pick<Response, 'locals'> | undefined, fallback: string): ApiShape {
  return (res?.locals.shape as ApiShape | undefined) ?? defaultShape(fallback);
}

export function setShape(res: Response, shape: ApiShape): void {
  res.locals.shape = shape;
}
