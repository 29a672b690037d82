/** Writing JSON:API documents: `data`, `included` (records and configuration resources), links and meta, sent within the response budget. */
import type { Response } from 'express';
import type { AppContext } from '../../context.ts';
import type { Db, EntityRecord } from '../../storage/records.ts';
import type { RecordLoader } from '../../farm/loader.ts';
import type { Serializer, ResourceObject } from '../serialize.ts';
import { loadIncluded } from '../include.ts';
import type { ConfigCatalogue, ConfigResource } from '../config-resources.ts';
import { JSONAPI_VERSION, sendDocument } from '../document.ts';
import type { Principal } from '../../access/principal.ts';
import { fieldsetsToRead, type JsonApiQuery } from '../query/index.ts';
import type { ApiShape } from '../shape.ts';

export class DocumentWriter {
  constructor(
    private readonly ctx: AppContext,
    private readonly loader: RecordLoader,
    private readonly serializer: Serializer,
    private readonly configs: ConfigCatalogue,
  ) {}

  /**
   * A top-level document with `data`, `included` (when asked for) and links. `at`: the moment the
   * data's computed fields were computed for (`as_of`), so the included records' are too.
   */
  async document(
    db: Db,
    data: EntityRecord | EntityRecord[] | null,
    principal: Principal,
    query: JsonApiQuery,
    links: Record<string, { href: string }>,
    options: { meta?: Record<string, unknown>; at?: number; shape?: ApiShape } = {},
  ): Promise<Record<string, unknown>> {
    const list = data === null ? [] : Array.isArray(data) ? data : [data];
    // Inline arrows, not a named `render`: under tsx each named function made per request is also
    // given its name (Object.defineProperty), 0.7 % of a request for one log.
    const doc: Record<string, unknown> = {
      jsonapi: JSONAPI_VERSION,
      data: Array.isArray(data)
        ? list.map((r) => this.render(r, principal, query, options.shape))
        : data
          ? this.render(data, principal, query, options.shape)
          : null,
    };
    if (query.include.length) {
      const { records, levels } = await loadIncluded(
        db,
        this.loader,
        list,
        query.include,
        principal,
        fieldsetsToRead(query.fields, query.include),
        options.at,
      );
      doc.included = [
        ...records.map((r) => this.render(r, principal, query, options.shape)),
        ...this.configIncludes(levels, query.include, principal),
      ];
    }
    if (options.meta) doc.meta = options.meta;
    doc.links = links;
    return doc;
  }

  private render(r: EntityRecord, principal: Principal, query: JsonApiQuery, shape?: ApiShape): ResourceObject {
    return this.serializer.resourceObject(r, principal, query.fields.get(r.rt.type), shape);
  }

  /** The configuration resources (log types, vocabularies, roles…) include paths end on, once each. */
  private configIncludes(
    levels: Map<string, EntityRecord[]>,
    paths: string[][],
    principal: Principal,
  ): ConfigResource[] {
    const out = new Map<string, ConfigResource>();
    for (const path of paths) {
      const segment = path[path.length - 1]!;
      for (const record of levels.get(path.slice(0, -1).join('.')) ?? []) {
        const resource = this.serializer.resourceObject(record, principal, new Set([segment]));
        const data = (resource.relationships?.[segment] as { data?: unknown } | undefined)?.data;
        for (const ref of [data ?? []].flat() as Array<{ type: string; id: string }>) {
          const hit = this.configs.find(principal, ref.type, ref.id);
          if (hit) out.set(`${hit.type}:${hit.id}`, hit);
        }
      }
    }
    return [...out.values()];
  }

  send(res: Response, status: number, doc: unknown): void {
    // Reads only: the answer to a write is the record just saved, and a committed write must not
    // turn into an error.
    const read = res.req.method === 'GET' || res.req.method === 'HEAD';
    sendDocument(res, status, doc, read ? this.ctx.config.responseMaxBytes : Infinity);
  }
}
