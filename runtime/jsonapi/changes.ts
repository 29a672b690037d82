/**
 * `GET /api/changes?since=<cursor>`: the change feed for offline clients (storage/change-feed.ts
 * says how it is kept in commit order). Every record created, changed or deleted since the cursor,
 * each once with its latest state, as a resource identifier with `meta.version`, `meta.changed`
 * and `meta.deleted: true` for a tombstone; `meta.cursor` to continue from, always; `links.next`
 * while more follow at once. `filter[type]` (one or several), `page[limit]` (1–500, default 100)
 * and `include=records` (the live records, rendered as the collections render them).
 *
 * Access is the collections': only types the caller may view, tombstones included; users the
 * caller may not see (blocked ones, for all but account administrators) are left out.
 */
import express, { type Request, type Router } from 'express';
import type { JsonApiServices } from './handlers/services.ts';
import { principalOf, type Principal } from '../access/principal.ts';
import { mayOnType, mayOnRecord, requireAuthenticated } from '../access/policy.ts';
import { ApiError, badParameter, forbidden, methodNotAllowed } from '../errors.ts';
import { parseQueryString, buildQueryString, type QueryObject } from './query/index.ts';
import { FEED_START, decodeCursor, encodeCursor, pruneTombstones, readFeed, type FeedRow } from '../storage/change-feed.ts';
import { JSONAPI_VERSION } from './document.ts';
import { formatTimestamp } from '../values/timestamps.ts';
import type { EntityRecord } from '../storage/records.ts';

export const CHANGES_PATH = '/api/changes';
export const MAX_CHANGES_LIMIT = 500;
const DEFAULT_CHANGES_LIMIT = 100;
const DAY = 86_400;
/** Tombstones are pruned a day after their cursors expire: a transaction may commit a while after it wrote. */
const PRUNE_MARGIN = DAY;
const PRUNE_EVERY_MS = 3_600_000;

function single(params: QueryObject, name: string): string | undefined {
  const v = params[name];
  if (v === undefined) return undefined;
  if (typeof v !== 'string') throw badParameter(name, `${name} must be given once, as a plain value.`);
  return v;
}

/** The resource types asked for with `filter[type]` (repeated, `filter[type][]=`, or comma-separated). */
function requestedTypes(params: QueryObject): string[] | null {
  const filter = params.filter;
  if (filter === undefined) return null;
  if (typeof filter !== 'object' || Array.isArray(filter) || Object.keys(filter).some((k) => k !== 'type')) {
    throw badParameter('filter', 'The change feed filters only by type: filter[type]=log--activity (several: filter[type][]=…, or comma-separated).');
  }
  const raw = filter.type;
  const list = (Array.isArray(raw) ? raw : Object.values(raw as QueryObject)).flat();
  const values = typeof raw === 'string' ? [raw] : list;
  if (!values.every((v): v is string => typeof v === 'string')) throw badParameter('filter[type]', 'filter[type] takes resource type names, such as log--activity.');
  return [...new Set(values.flatMap((v) => v.split(',')).map((v) => v.trim()).filter(Boolean))];
}

function pageLimit(params: QueryObject): number {
  const page = params.page;
  if (page === undefined) return DEFAULT_CHANGES_LIMIT;
  const raw = typeof page === 'object' && !Array.isArray(page) ? page.limit : undefined;
  if (typeof page !== 'object' || Array.isArray(page) || Object.keys(page).some((k) => k !== 'limit') || typeof raw !== 'string' || !/^\d{1,4}$/.test(raw) || Number(raw) < 1 || Number(raw) > MAX_CHANGES_LIMIT) {
    throw badParameter('page[limit]', `The change feed pages only by page[limit], a whole number from 1 to ${MAX_CHANGES_LIMIT}.`);
  }
  return Number(raw);
}

export function changesRoutes(s: JsonApiServices): Router {
  const router = express.Router();
  const { registry, config } = s.ctx;
  let lastPrune = 0;

  /** Resource types the caller may read, of those asked for (403 naming one it may not). */
  const readableTypes = (principal: Principal, asked: string[] | null): string[] => {
    if (!asked) return [...registry.resourceTypes.values()].filter((rt) => mayOnType(principal, rt.entityType, 'view')).map((rt) => rt.type);
    for (const type of asked) {
      const rt = registry.get(type);
      if (!rt) throw badParameter('filter[type]', `filter[type] names "${type.slice(0, 100)}", which is not a resource type of this farm.`);
      if (!mayOnType(principal, rt.entityType, 'view')) throw forbidden(`The current user is not allowed to read ${type} resources, so not their changes either.`, { parameter: 'filter[type]' });
    }
    return asked;
  };

  /** Drop the rows of records the caller may not see although it may see their type (blocked users). */
  const visible = async (principal: Principal, rows: FeedRow[]): Promise<FeedRow[]> => {
    const users = rows.filter((r) => !r.deleted && r.entityType === 'user');
    if (!users.length) return rows;
    const et = registry.model.entityTypes.user!;
    const records = (await s.knex(et.table).whereIn('id', users.map((r) => r.entityId)).select('id', 'status')) as Array<{ id: number; status: unknown }>;
    const hidden = new Set(records.filter((u) => !mayOnRecord(principal, et, 'view', { id: Number(u.id), values: new Map([['status', Boolean(u.status)]]) })).map((u) => Number(u.id)));
    return rows.filter((r) => r.entityType !== 'user' || r.deleted || !hidden.has(r.entityId));
  };

  /** The live records of these rows, loaded a type at a time, rendered as the collections do. */
  const included = async (principal: Principal, rows: FeedRow[]) => {
    const byType = new Map<string, number[]>();
    for (const r of rows) if (!r.deleted) byType.set(r.entityType, [...(byType.get(r.entityType) ?? []), r.entityId]);
    const records: EntityRecord[] = [];
    for (const [entityType, ids] of byType) records.push(...(await s.loader.load(s.knex, entityType, ids, null)));
    return records.map((r) => s.serializer.resourceObject(r, principal, undefined));
  };

  const prune = (now: number) => {
    if (Date.now() - lastPrune < PRUNE_EVERY_MS) return;
    lastPrune = Date.now();
    pruneTombstones(s.knex, Math.floor(now - config.tombstoneDays * DAY - PRUNE_MARGIN)).catch((err: unknown) => s.ctx.logger.warn({ err }, 'pruning the change feed failed'));
  };

  router.get(CHANGES_PATH, async (req: Request, res) => {
    const principal = principalOf(res);
    requireAuthenticated(principal);
    const i = req.originalUrl.indexOf('?');
    const params = parseQueryString(i < 0 ? '' : req.originalUrl.slice(i + 1));
    for (const name of Object.keys(params)) {
      if (!['since', 'filter', 'page', 'include'].includes(name)) throw badParameter(name, `The change feed takes since, filter[type], page[limit] and include=records; not ${name.slice(0, 100)}.`);
    }
    const since = single(params, 'since');
    if (since === undefined) throw badParameter('since', 'since is required: 0 for every change kept, or the meta.cursor of the previous answer.');
    const cursor = decodeCursor(since);
    if (!cursor) throw badParameter('since', 'since is not a cursor this server gave: use 0, or a meta.cursor exactly as it came.');
    const now = Math.floor(Date.now() / 1000);
    if (cursor !== FEED_START && cursor.issued < now - config.tombstoneDays * DAY) {
      throw new ApiError(410, `This cursor is older than the ${config.tombstoneDays} day(s) deletions are kept for: sync in full (since=0) and continue from the new cursor.`, { code: 'cursor_expired', source: { parameter: 'since' } });
    }
    const include = single(params, 'include');
    if (include !== undefined && include !== 'records') throw badParameter('include', 'The change feed includes only "records" (include=records).');
    const limit = pageLimit(params);
    const types = readableTypes(principal, requestedTypes(params));
    prune(now);

    const { rows, next, more } = types.length ? await readFeed(s.knex, cursor, types, limit, now) : { rows: [], next: { ...cursor, issued: now }, more: false };
    const shown = await visible(principal, rows);
    const nextCursor = encodeCursor(next);
    const doc: Record<string, unknown> = {
      jsonapi: JSONAPI_VERSION,
      data: shown.map((r) => ({ type: r.type, id: r.uuid, meta: { version: r.position, changed: formatTimestamp(r.changed), ...(r.deleted ? { deleted: true } : {}) } })),
    };
    if (include) doc.included = await included(principal, shown);
    doc.meta = { cursor: nextCursor };
    const links: Record<string, { href: string }> = { self: { href: `${config.baseUrl}${req.originalUrl}` } };
    if (more) links.next = { href: `${config.baseUrl}${CHANGES_PATH}?${buildQueryString({ ...params, since: nextCursor })}` };
    doc.links = links;
    s.documents.send(res, 200, doc);
  });
  router.all(CHANGES_PATH, (req) => {
    throw methodNotAllowed(req.method, ['GET']);
  });
  return router;
}
