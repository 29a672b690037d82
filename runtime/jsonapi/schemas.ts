/**
 * The schema endpoints (farmos-behaviour.md §3.2): `/api/schema` and, per resource type,
 * `…/resource/schema`, `…/schema`, `…/collection/schema` and the related-resource schemas.
 * Served as plain JSON without authentication, as jsonapi_schema does. Built once per server,
 * and the fixed ones kept as the bytes sent.
 */
import type { Request, Response } from 'express';
import type { AppContext } from '../context.ts';
import type { ResourceType } from '../model/registry.ts';
import { sendBytes } from './document.ts';

const BASE_TOKEN = /\{base_url\}/g;

export class SchemaStore {
  private readonly resource = new Map<string, Buffer>();
  private readonly index: Buffer;

  constructor(private readonly ctx: AppContext) {
    const base = ctx.config.baseUrl;
    for (const type of ctx.registry.resourceTypes.keys()) {
      const text = ctx.generated.schemas.get(type);
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

  documentSchema(rt: ResourceType, kind: 'individual' | 'collection', self: string): string {
    const base = this.ctx.config.baseUrl;
    const ref = { $ref: `${base}/api/${rt.entityType.entityType}/${rt.bundle.bundle}/resource/schema` };
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
    const base = this.ctx.config.baseUrl;
    const targets = this.ctx.registry
      .targetsOf(f)
      .map((t) => ({ $ref: `${base}/api/${t.entityType.entityType}/${t.bundle.bundle}/resource/schema` }));
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
  return (_req: Request, res: Response) => sendSchema(res, store.indexSchema());
}
