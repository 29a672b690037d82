/**
 * Relationship endpoints `/<uuid>/relationships/<field>` (GET, POST adds, PATCH replaces, DELETE
 * removes) and related endpoints `/<uuid>/<field>` (farmos-behaviour.md §4.9). Identifiers are
 * checked by the same reader as resource documents.
 *
 * ETags (handlers/etags.ts): a relationship is part of its record, so its routes carry the
 * record's ETag, and their writes honour If-Match as the record's PATCH does. A related route is
 * about one resource only for a to-one relationship: it carries that resource's ETag; a list of
 * resources carries none (it changes when any of them does).
 */
import type { Request, Response } from 'express';
import type { RouteHandler, MatchedRoute } from '../router.ts';
import type { JsonApiServices } from './services.ts';
import { principalOf } from '../../access/principal.ts';
import { mayOnRecord, mayOnType } from '../../access/policy.ts';
import { badRequest, conflict } from '../../errors.ts';
import type { EntityRecord, ItemValue, Reference } from '../../storage/records.ts';
import { JSONAPI_VERSION } from '../document.ts';
import { fieldsetsToRead } from '../query/index.ts';
import { entityTag, ifMatchOf, sentNotModified, setEntityTag } from './etags.ts';
import type { FieldDescriptor } from '../../model/descriptor.ts';
import { isConfigEntityType } from '../../model/config-entities.ts';

function links(s: JsonApiServices, res: Response, record: EntityRecord, field: string) {
  const self = `${s.shape(res).base}/api/${record.rt.entityType.entityType}/${record.rt.bundle.bundle}/${record.uuid}`;
  return { self: { href: `${self}/relationships/${field}` }, related: { href: `${self}/${field}` } };
}

function refsOf(record: EntityRecord, field: string): Reference[] {
  const v = record.values.get(field);
  return ((Array.isArray(v) ? v : v ? [v] : []) as ItemValue[]).filter(Boolean) as Reference[];
}

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

/**
 * What farmOS's relationship routes refuse with a 400 before any identifier is looked up (Drupal's
 * relationship denormalizer, in its words): a to-many relationship takes a list and a to-one one
 * identifier or null; each identifier's type is one the field takes; and no identifier comes
 * twice unless `meta.arity` tells the copies apart. Items that are not identifiers at all are left
 * to the resource reader, which names the member at fault.
 */
function assertRelationshipBody(f: FieldDescriptor, data: unknown, allowed: readonly string[]): void {
  if (f.multiple ? !Array.isArray(data) : Array.isArray(data)) {
    const takes = f.multiple ? 'a list of resource identifiers' : 'one resource identifier, or null';
    throw badRequest(`Invalid body payload for the relationship. ${f.name} takes ${takes}.`, { pointer: '/data' });
  }
  const items = Array.isArray(data) ? data : data === null ? [] : [data];
  const seen = new Set<string>();
  items.forEach((item, i) => {
    if (!isObject(item) || typeof item.type !== 'string' || typeof item.id !== 'string') return;
    const pointer = Array.isArray(data) ? `/data/${i}` : '/data';
    if (allowed.length && !allowed.includes(item.type)) {
      throw badRequest(
        `The provided type (${item.type}) does not match the destination resource types (${allowed.join(', ')}).`,
        { pointer: `${pointer}/type` },
      );
    }
    const arity = isObject(item.meta) && Number.isInteger(item.meta.arity) ? item.meta.arity : null;
    const key = JSON.stringify([item.type, item.id.toLowerCase(), arity]);
    if (seen.has(key))
      throw badRequest(
        'Duplicate relationships are not permitted. Use `meta.arity` to distinguish resource identifiers with matching `type` and `id` values.',
        { pointer },
      );
    seen.add(key);
  });
}

export function relationshipHandlers(
  s: JsonApiServices,
): Record<'get' | 'post' | 'patch' | 'delete' | 'related', RouteHandler> {
  const field = (route: MatchedRoute) => route.field!;
  /** The identifier types a relationship takes. */
  const targetTypes = (f: FieldDescriptor): string[] => {
    const target = f.target?.entityType;
    if (target && isConfigEntityType(target)) return [`${target}--${target}`];
    return s.ctx.registry.targetsOf(f).map((t) => t.type);
  };

  /** Read the identifiers of a relationship request body through the resource reader. */
  async function identifiers(
    trx: Parameters<typeof s.input.read>[0],
    req: Request,
    route: MatchedRoute,
  ): Promise<{ value: ItemValue | ItemValue[]; sent: unknown[] }> {
    const body = req.body as Record<string, unknown> | undefined;
    if (!body || typeof body !== 'object' || !('data' in body))
      throw badRequest('The request body must be a document with a "data" member holding resource identifiers.', {
        pointer: '/data',
      });
    const f = field(route);
    assertRelationshipBody(f, body.data, targetTypes(f));
    const input = await s.input.read(trx, route.resourceType, {
      data: { type: route.resourceType.type, relationships: { [f.name]: { data: body.data } } },
    });
    const value = input.values.get(f.name) ?? (f.multiple ? [] : null);
    const sent = Array.isArray(body.data) ? body.data : body.data === null ? [] : [body.data];
    return { value, sent };
  }

  async function write(
    req: Request,
    res: Parameters<RouteHandler>[1],
    route: MatchedRoute,
    op: 'post' | 'patch' | 'delete',
  ): Promise<void> {
    const principal = principalOf(res);
    const rt = route.resourceType;
    const f = field(route);
    s.requests.requireJsonApiBody(req);
    if (op !== 'patch' && !f.multiple)
      throw conflict(
        `You can only ${op.toUpperCase()} to to-many relationships; ${f.name} holds one resource, so PATCH it instead.`,
        { pointer: '/data' },
      );
    let sent: unknown[] = [];
    const { version, shown } = await s.commands.update(principal, rt, route.id, {
      ifMatch: ifMatchOf(req),
      // The record locked first, as a PATCH of it is: the new list is made from the current one.
      read: async (trx, record) => {
        const read = await identifiers(trx, req, route);
        sent = read.sent;
        const current = refsOf(record, f.name);
        const key = (r: Reference) => r.targetId;
        let next: ItemValue | ItemValue[];
        if (op === 'patch') next = read.value;
        else if (op === 'post') {
          const have = new Set(current.map(key));
          next = [...current, ...(read.value as Reference[]).filter((r) => !have.has(key(r)) && have.add(key(r)))];
        } else {
          const remove = new Set((read.value as Reference[]).map(key));
          next = current.filter((r) => !remove.has(key(r)));
        }
        return { values: new Map([[f.name, next]]), secrets: new Map() };
      },
      present: async (_trx, updated) => {
        const data = s.serializer.relationshipData(updated, f);
        const final = Array.isArray(data) ? data : data ? [data] : [];
        const sentIds = new Set(sent.map((i) => (i as { id?: string })?.id));
        const extra = op !== 'delete' && final.some((i) => !sentIds.has(i.id));
        return { extra, doc: { jsonapi: JSONAPI_VERSION, data, links: links(s, res, updated, f.name) } };
      },
    });
    // The record's new version, on the 204 too: a sync client sends it with its next If-Match.
    if (version !== null) res.setHeader('ETag', entityTag(version, req));
    if (shown.extra) s.documents.send(res, 200, shown.doc);
    else res.status(204).end();
  }

  return {
    async get(req, res, route) {
      const { principal, query, record } = await s.records.viewable(req, res, route.resourceType, route.id);
      const version = await setEntityTag(s.knex, res, req, record.rt.entityType.entityType, record.id);
      if (sentNotModified(req, res, version)) return;
      const doc: Record<string, unknown> = {
        jsonapi: JSONAPI_VERSION,
        data: s.serializer.relationshipData(record, field(route)),
        links: links(s, res, record, field(route).name),
      };
      if (query.include.length) {
        const full = await s.documents.document(
          s.knex,
          record,
          principal,
          { ...query, include: query.include.filter((p) => p[0] === field(route).name) },
          {},
          { shape: s.shape(res) },
        );
        if (full.included) doc.included = full.included;
      }
      s.documents.send(res, 200, doc);
    },
    post: (req, res, route) => write(req, res, route, 'post'),
    patch: (req, res, route) => write(req, res, route, 'patch'),
    delete: (req, res, route) => write(req, res, route, 'delete'),

    async related(req, res, route) {
      const f = field(route);
      const { principal, query, record } = await s.records.viewable(req, res, route.resourceType, route.id, {
        validateIncludes: false,
      });
      const refs = refsOf(record, f.name).filter((r) => r.uuid);
      const et = s.ctx.registry.model.entityTypes[f.target!.entityType]!;
      let targets: EntityRecord[] = [];
      if (refs.length && mayOnType(principal, et, 'view')) {
        targets = (
          await s.loader.load(
            s.knex,
            et.entityType,
            refs.map((r) => r.targetId),
            fieldsetsToRead(query.fields, query.include),
          )
        ).filter((t) => mayOnRecord(principal, et, 'view', t));
      }
      const data = f.multiple ? targets : (targets[0] ?? null);
      if (!Array.isArray(data) && data) {
        const version = await setEntityTag(s.knex, res, req, data.rt.entityType.entityType, data.id);
        if (sentNotModified(req, res, version)) return;
      }
      s.documents.send(
        res,
        200,
        await s.documents.document(
          s.knex,
          data,
          principal,
          query,
          { self: s.requests.selfLink(req) },
          { shape: s.shape(res) },
        ),
      );
    },
  };
}
