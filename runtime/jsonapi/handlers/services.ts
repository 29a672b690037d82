/** The pieces every JSON:API handler uses, built once per server. */
import type { Request, Response } from 'express';
import type { AppContext } from '../../context.ts';
import type { Principal } from '../../access/principal.ts';
import type { ResourceType } from '../../model/registry.ts';
import type { Db, EntityRecord } from '../../storage/records.ts';
import { RecordLoader } from '../loader.ts';
import { Serializer, type ResourceObject } from '../serialize.ts';
import { InputReader, UUID } from '../input.ts';
import { EntityService } from '../../entities/service.ts';
import { LogGeometry } from '../../farm/log-geometry.ts';
import { loadIncluded, validateIncludes } from '../include.ts';
import { notFound, unsupportedMediaType, forbidden } from '../../errors.ts';
import { JSONAPI_MEDIA_TYPE, JSONAPI_VERSION, sendDocument } from '../document.ts';
import { assertMayOnType, mayOnRecord, requireAuthenticated } from '../../access/policy.ts';
import { principalOf } from '../../http/principal.ts';
import { parseJsonApiQuery, type JsonApiQuery } from '../query/index.ts';

export class JsonApiServices {
  readonly loader: RecordLoader;
  readonly serializer: Serializer;
  readonly input: InputReader;
  readonly entities: EntityService;

  constructor(readonly ctx: AppContext) {
    this.loader = new RecordLoader(ctx.registry, ctx.config.baseUrl);
    this.serializer = new Serializer(ctx);
    this.input = new InputReader(ctx.registry);
    this.entities = new EntityService(this.loader.store, new LogGeometry(this.loader));
  }

  get knex() {
    return this.ctx.db.knex;
  }

  /** The raw query string of a request (after `?`), parsed the PHP way. */
  query(req: Request, rt?: ResourceType): JsonApiQuery {
    const url = req.originalUrl;
    const i = url.indexOf('?');
    const query = parseJsonApiQuery(i < 0 ? '' : url.slice(i + 1));
    if (rt && query.include.length) validateIncludes(this.ctx.registry, rt, query.include);
    return query;
  }

  /** 415 unless the request body is declared as JSON:API. */
  requireJsonApiBody(req: Request): void {
    const type = req.headers['content-type'];
    if (!type) throw unsupportedMediaType(`No "Content-Type" request header specified: send ${JSONAPI_MEDIA_TYPE}.`);
    const [media, ...params] = type.split(';').map((s) => s.trim().toLowerCase());
    if (media !== JSONAPI_MEDIA_TYPE) throw unsupportedMediaType(`The Content-Type "${type}" is not supported here: send ${JSONAPI_MEDIA_TYPE}.`);
    const bad = params.filter((p) => p && !/^(charset|ext|profile)=/.test(p));
    if (bad.length) throw unsupportedMediaType(`The media type parameter(s) ${bad.join(', ')} are not supported: send ${JSONAPI_MEDIA_TYPE} without them.`);
  }

  /** The record with this UUID in this bundle, or 404 (another bundle's UUID is a 404 too). */
  async find(db: Db, rt: ResourceType, uuid: string | undefined, principal: Principal, fields: Map<string, Set<string>> | null = null): Promise<EntityRecord> {
    requireAuthenticated(principal);
    const hit = uuid && UUID.test(uuid) ? await this.loader.store.findByUuid(db, rt.entityType.entityType, uuid.toLowerCase()) : null;
    if (!hit || hit.bundle !== rt.bundle.bundle) throw notFound(`There is no ${rt.type} with the id "${uuid}".`, { parameter: 'id' });
    const [record] = await this.loader.load(db, rt.entityType.entityType, [hit.id], fields, principal);
    if (!record) throw notFound(`There is no ${rt.type} with the id "${uuid}".`, { parameter: 'id' });
    return record;
  }

  /** The record a GET route names, after checking that the caller may read it. */
  async viewable(req: Request, res: Response, rt: ResourceType, id: string | undefined, options: { fieldsets?: boolean; validateIncludes?: boolean } = {}): Promise<{ principal: Principal; query: JsonApiQuery; record: EntityRecord }> {
    const principal = principalOf(res);
    const query = this.query(req, options.validateIncludes === false ? undefined : rt);
    assertMayOnType(principal, rt.entityType, 'view', 'this resource');
    const record = await this.find(this.knex, rt, id, principal, options.fieldsets && query.fields.size ? query.fields : null);
    this.assertMayOnRecord(principal, record, 'view');
    return { principal, query, record };
  }

  assertMayOnRecord(principal: Principal, record: EntityRecord, op: 'view' | 'update' | 'delete'): void {
    if (!mayOnRecord(principal, record.rt.entityType, op, record)) {
      const verb = { view: 'GET', update: 'PATCH', delete: 'DELETE' }[op];
      throw forbidden(`The current user is not allowed to ${verb} the selected resource (${record.rt.type} ${record.uuid}).`, { pointer: '/data' });
    }
  }

  /** A top-level document with `data`, `included` (when asked for) and links. */
  async document(
    db: Db,
    data: EntityRecord | EntityRecord[] | null,
    principal: Principal,
    query: JsonApiQuery,
    links: Record<string, { href: string }>,
    meta?: Record<string, unknown>,
  ): Promise<Record<string, unknown>> {
    const list = data === null ? [] : Array.isArray(data) ? data : [data];
    const render = (r: EntityRecord): ResourceObject => this.serializer.resourceObject(r, principal, query.fields.get(r.rt.type));
    const doc: Record<string, unknown> = { jsonapi: JSONAPI_VERSION, data: Array.isArray(data) ? list.map(render) : data ? render(data) : null };
    if (query.include.length) {
      const included = await loadIncluded(db, this.loader, list, query.include, principal);
      doc.included = included.map(render);
    }
    if (meta) doc.meta = meta;
    doc.links = links;
    return doc;
  }

  send(res: Response, status: number, doc: unknown): void {
    sendDocument(res, status, doc);
  }

  selfLink(req: Request): { href: string } {
    return { href: `${this.ctx.config.baseUrl}${req.originalUrl}` };
  }
}
