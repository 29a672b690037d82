/**
 * The schema endpoints (farmos-behaviour.md §3.2): `/api/schema` and, per resource type,
 * `…/resource/schema`, `…/schema`, `…/collection/schema` and the related-resource schemas.
 * Served as plain JSON without authentication, as jsonapi_schema does, in the request's API
 * shape (jsonapi/shape.ts) and naming its base. Built once per shape and base, and the fixed ones
 * kept as the bytes sent.
 */
import type { Request, Response } from 'express';
import type { AppContext } from '../context.ts';
import type { ResourceType } from '../model/registry.ts';
import { sendBytes } from './document.ts';
import { defaultShape, shapeOf, type ApiShape } from './shape.ts';

const BASE_TOKEN = /\{base_url\}/g;

/** Most shape and base pairs kept: a 4.x host name may be reached under a few ports (http/shape-choice.ts). */
const MAX_BASES = 64;

/**
 * The schemas of every API shape: the farmOS 2.x shape's under the farm's base URL, another's
 * (farmOS 4.x: generated/schemas/farmos4/) under the base its request came by. Each shape and base
 * is built once, when first asked.
 */
export class SchemaStore {
  private readonly byBase = new Map<string, ShapeSchemas>();

  constructor(private readonly ctx: AppContext) {
    this.in(defaultShape(ctx.config.baseUrl));
  }

  /** The schemas a request in `shape` is answered with. */
  in(shape: ApiShape): ShapeSchemas {
    const key = `${shape.name} ${shape.base}`;
    let known = this.byBase.get(key);
    if (!known) {
      known = new ShapeSchemas(this.ctx, shape);
      if (this.byBase.size < MAX_BASES) this.byBase.set(key, known);
    }
    return known;
  }

  /** The schemas of the request's shape. */
  of(res: Response): ShapeSchemas {
    return this.in(shapeOf(res, this.ctx.config.baseUrl));
  }
}

/** One shape's schemas on one base, the fixed ones kept as the bytes sent. */
export class ShapeSchemas {
  private readonly resource = new Map<string, Buffer>();
  private readonly index: Buffer;
  private readonly base: string;

  constructor(
    private readonly ctx: AppContext,
    shape: ApiShape,
  ) {
    const base = (this.base = shape.base);
    const texts =
      shape.name === 'farmos2' ? ctx.generated.schemas : (ctx.generated.shapeSchemas.get(shape.name) ?? new Map());
    for (const type of ctx.registry.resourceTypes.keys()) {
      const text = texts.get(type);
      if (text) this.resource.set(type, Buffer.from(text.replace(BASE_TOKEN, base)));
    }
    const links = [...ctx.registry.resourceTypes.values()]
      .sort((a, b) => a.type.localeCompare(b.type))
      .map((rt) => ({
        href: '{instanceHref}',
        rel: 'related',
        title: `${rt.bundle.label} ${rt.entityType.hasBundles ? rt.entityType.labelPlural : ''}`.trim(),
        targetMediaType: 'application/vnd.api+json',
        targetSchema: { $ref: `${base}/api/${rt.entityType.entityType}/${rt.bundle.bundle}/collection/schema` },
        templatePointers: { instanceHref: `/links/${rt.type}/href` },
        templateRequired: ['instanceHref'],
      }));
    this.index = Buffer.from(
      JSON.stringify({
        $schema: 'https://json-schema.org/draft/2019-09/hyper-schema',
        $id: `${base}/api/schema`,
        allOf: [{ $ref: 'https://jsonapi.org/schema#/definitions/success' }, { type: 'object', links }],
      }),
    );
  }

  indexSchema(): Buffer {
    return this.index;
  }

  resourceSchema(type: string): Buffer | undefined {
    return this.resource.get(type);
  }

  /** The absolute URL of a path on this shape's base (a schema's `$id`). */
  self(path: string): string {
    return `${this.base}${path}`;
  }

  documentSchema(rt: ResourceType, kind: 'individual' | 'collection', self: string): string {
    const ref = { $ref: `${this.base}/api/${rt.entityType.entityType}/${rt.bundle.bundle}/resource/schema` };
    return JSON.stringify(
      document(
        self,
        `${rt.bundle.label} ${kind === 'collection' ? 'collection' : 'resource'}`,
        kind === 'collection' ? { type: 'array', items: ref } : ref,
      ),
    );
  }

  relatedSchema(rt: ResourceType, field: string, self: string): string | undefined {
    const f = rt.fieldsByName.get(field);
    if (!f || f.kind !== 'relationship') return undefined;
    const targets = this.ctx.registry
      .targetsOf(f)
      .map((t) => ({ $ref: `${this.base}/api/${t.entityType.entityType}/${t.bundle.bundle}/resource/schema` }));
    const item = targets.length === 1 ? targets[0] : { anyOf: targets };
    return JSON.stringify(
      document(self, `${f.label}`, f.multiple ? { type: 'array', items: item } : { oneOf: [item, { type: 'null' }] }),
    );
  }
}

function document(id: string, title: string, data: unknown): Record<string, unknown> {
  return {
    $schema: 'https://json-schema.org/draft/2019-09/hyper-schema',
    $id: id,
    title,
    allOf: [
      { $ref: 'https://jsonapi.org/schema' },
      {
        if: { $ref: 'https://jsonapi.org/schema#/definitions/success' },
        then: { type: 'object', properties: { data: { $ref: '#/definitions/data' } }, required: ['data'] },
      },
    ],
    definitions: { data },
  };
}

export function sendSchema(res: Response, text: string | Buffer): void {
  sendBytes(res, 'application/json; charset=utf-8', text);
}

export function schemaIndexHandler(store: SchemaStore) {
  return (_req: Request, res: Response) => sendSchema(res, store.of(res).indexSchema());
}
