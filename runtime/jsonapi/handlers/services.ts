/** The pieces every JSON:API handler uses, built once per server. */
import type { Request, Response } from 'express';
import type { AppContext } from '../../context.ts';
import type { ResourceType } from '../../model/registry.ts';
import type { Db, EntityRecord } from '../../storage/records.ts';
import { RecordLoader } from '../../farm/loader.ts';
import { Serializer, type ResourceObject } from '../serialize.ts';
import { InputReader, UUID } from '../input.ts';
import { EntityService } from '../../entities/service.ts';
import { LogGeometry } from '../../farm/log-geometry.ts';
import { loadIncluded, validateIncludes } from '../include.ts';
import { ConfigCatalogue, type ConfigResource } from '../config-resources.ts';
import { notFound, unsupportedMediaType, forbidden, badParameter } from '../../errors.ts';
import { JSONAPI_MEDIA_TYPE, JSONAPI_VERSION, sendDocument } from '../document.ts';
import { assertMayOnType, mayOnRecord, requireAuthenticated } from '../../access/policy.ts';
import { principalOf, type Principal } from '../../access/principal.ts';
import { parseJsonApiQuery, RESOURCE_VERSION_PARAMETER, type JsonApiQuery, type ResourceVersion } from '../query/index.ts';

export class JsonApiServices {
  readonly loader: RecordLoader;
  readonly serializer: Serializer;
  readonly input: InputReader;
  readonly entities: EntityService;
  /** Log types, vocabularies, roles… served read-only (config-resources.ts). */
  readonly configs: ConfigCatalogue;

  constructor(readonly ctx: AppContext) {
    this.loader = new RecordLoader(ctx.registry, ctx.config.baseUrl);
    this.serializer = new Serializer(ctx);
    this.input = new InputReader(ctx.registry);
    this.configs = new ConfigCatalogue(ctx);
    this.entities = new EntityService(this.loader.store, new LogGeometry(this.loader), ctx.passwords);
  }

  get knex() {
    return this.ctx.db.knex;
  }

  /** The raw query string of a request (after `?`), parsed the PHP way. */
  query(req: Request, rt?: ResourceType): JsonApiQuery {
    const url = req.originalUrl;
    const i = url.indexOf('?');
    const query = parseJsonApiQuery(i < 0 ? '' : url.slice(i + 1));
    if (query.resourceVersion && req.method !== 'GET' && req.method !== 'HEAD') {
      // Drupal's answer: a version can be read, not written to.
      throw badParameter(RESOURCE_VERSION_PARAMETER, `${req.method} requests with a \`${RESOURCE_VERSION_PARAMETER}\` query parameter are not supported.`);
    }
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
    const fieldsets = options.fieldsets && query.fields.size ? query.fields : null;
    const record = await this.find(this.knex, rt, id, principal, fieldsets);
    this.assertMayOnRecord(principal, record, 'view');
    if (!query.resourceVersion) return { principal, query, record };
    return { principal, query, record: await this.version(record, query.resourceVersion, fieldsets) };
  }

  /**
   * The revision `?resourceVersion` asks for, as Drupal's VersionNegotiator finds it: `rel:…`
   * is the current revision (Tilth has no drafts or moderation, so the latest version and the
   * working copy are both the current one); `id:<n>` is that revision of this record, or 404.
   * Reading a revision needs what reading the record needs, checked before.
   */
  async version(current: EntityRecord, version: ResourceVersion, fieldsets: Map<string, Set<string>> | null): Promise<EntityRecord> {
    const rt = current.rt;
    if (!rt.entityType.revisionId) {
      throw badParameter(RESOURCE_VERSION_PARAMETER, `${rt.type} resources keep no revisions: remove the ${RESOURCE_VERSION_PARAMETER} parameter.`);
    }
    const missing = () => notFound(`The requested version, identified by \`${version.identifier}\`, could not be found.`, { parameter: RESOURCE_VERSION_PARAMETER });
    if (version.kind === 'rel' || version.revisionId === current.revisionId) {
      if (current.revisionId === null) throw missing();
      return { ...current, revisionView: true };
    }
    const revision = await this.loader.store.revisions.find(this.knex, rt.entityType.entityType, current.id, version.revisionId);
    if (!revision) throw missing();
    return this.loader.loadRevision(this.knex, current, revision, fieldsets);
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
      const { records, levels } = await loadIncluded(db, this.loader, list, query.include, principal);
      doc.included = [...records.map(render), ...this.configIncludes(levels, query.include, principal)];
    }
    if (meta) doc.meta = meta;
    doc.links = links;
    return doc;
  }

  /** The configuration resources (log types, vocabularies, roles…) include paths end on, once each. */
  private configIncludes(levels: Map<string, EntityRecord[]>, paths: string[][], principal: Principal): ConfigResource[] {
    const out = new Map<string, ConfigResource>();
    for (const path of paths) {
      const segment = path[path.length - 1]!;
      for (const record of levels.get(path.slice(0, -1).join('.')) ?? []) {
        const resource = this.serializer.resourceObject(record, principal, new Set([segment]));
        const data = (resource.relationships[segment] as { data?: unknown } | undefined)?.data;
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

  selfLink(req: Request): { href: string } {
    return { href: `${this.ctx.config.baseUrl}${req.originalUrl}` };
  }
}
