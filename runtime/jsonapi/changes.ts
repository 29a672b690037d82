/**
 * `GET /api/changes?since=<cursor>`: the change feed for offline clients (storage/change-feed.ts
 * says how it is kept in commit order). Every record created, changed or deleted since the cursor,
 * each once with its latest state, as a resource identifier with `meta.version`, `meta.changed`
 * and `meta.deleted: true` for a tombstone; `meta.cursor` to continue from, always; `links.next`
 * while more follow at once. `filter[type]` (one or several), `page[limit]` (1–500, default 100)
 * and `include=records` (the live records, rendered as the collections render them; then at most
 * 50 a page, and a page ends early where the response budget does).
 *
 * Access is the collections': only types the caller may view, tombstones included. Blocked users
 * are listed as the user collection lists them, and rendered as it renders them: by their name
 * only, for all but account administrators (policy.ts labelOnly).
 */
import type { ApiShape } from './shape.ts';
import express, { type Request, type Response, type Router } from 'express';
import type { JsonApiServices } from './handlers/services.ts';
import { principalOf, type Principal } from '../access/principal.ts';
import { listCondition, mayOnType, requireAuthenticated } from '../access/policy.ts';
import { ApiError, badParameter, forbidden, methodNotAllowed } from '../errors.ts';
import { parseQueryString, buildQueryString, type QueryObject } from './query/index.ts';
import {
  FEED_START,
  decodeCursor,
  encodeCursor,
  readFeed,
  type FeedKind,
  type FeedRow,
} from '../storage/change-feed.ts';
import { DocumentPieces, JSONAPI_MEDIA_TYPE, JSONAPI_VERSION, sendBytes } from './document.ts';
import { formatTimestamp } from '../values/timestamps.ts';
import type { EntityRecord } from '../storage/records.ts';

export const CHANGES_PATH = '/api/changes';
export const MAX_CHANGES_LIMIT = 500;
const DEFAULT_CHANGES_LIMIT = 100;
/**
 * With include=records a page holds at most this many entries (and the default), as a collection
 * page does: a page of 500 records of megabytes each once took the server's memory (issue 41). A
 * larger page[limit] is taken as this one, links.next going on; no farmOS client reads this feed.
 */
export const MAX_CHANGES_WITH_RECORDS = 50;
/** The most records loaded at once while a page is filled: what is loaded past the budget stays little. */
const RECORDS_PER_LOAD = 16;
/** Records loaded first, before their size is known. */
const FIRST_LOAD = 2;
/** The longest cursor there can be (decodeCursor's widest fields), to keep room for links.next. */
const LONGEST_CURSOR = { issued: 999_999_999_999, txid: '9'.repeat(20), position: Number.MAX_SAFE_INTEGER };
const DAY = 86_400;

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
    throw badParameter(
      'filter',
      'The change feed filters only by type: filter[type]=log--activity (several: filter[type][]=…, or comma-separated).',
    );
  }
  const raw = filter.type;
  const list = (Array.isArray(raw) ? raw : Object.values(raw as QueryObject)).flat();
  const values = typeof raw === 'string' ? [raw] : list;
  if (!values.every((v): v is string => typeof v === 'string'))
    throw badParameter('filter[type]', 'filter[type] takes resource type names, such as log--activity.');
  return [
    ...new Set(
      values
        .flatMap((v) => v.split(','))
        .map((v) => v.trim())
        .filter(Boolean),
    ),
  ];
}

/** page[limit], or its default; with records, at most MAX_CHANGES_WITH_RECORDS (a larger one is taken as that). */
function pageLimit(params: QueryObject, { withRecords }: { withRecords: boolean }): number {
  const page = params.page;
  const most = withRecords ? MAX_CHANGES_WITH_RECORDS : MAX_CHANGES_LIMIT;
  if (page === undefined) return Math.min(DEFAULT_CHANGES_LIMIT, most);
  const raw = typeof page === 'object' && !Array.isArray(page) ? page.limit : undefined;
  if (
    typeof page !== 'object' ||
    Array.isArray(page) ||
    Object.keys(page).some((k) => k !== 'limit') ||
    typeof raw !== 'string' ||
    !/^\d{1,4}$/.test(raw) ||
    Number(raw) < 1 ||
    Number(raw) > MAX_CHANGES_LIMIT
  ) {
    throw badParameter(
      'page[limit]',
      `The change feed pages only by page[limit], a whole number from 1 to ${MAX_CHANGES_LIMIT}.`,
    );
  }
  return Math.min(Number(raw), most);
}

/** A feed row as the page lists it: a resource identifier (its 2.x resource type, wireType) with its version. */
function entryOf(r: FeedRow): Record<string, unknown> {
  return {
    type: wireType(r),
    id: r.uuid,
    meta: { version: r.position, changed: formatTimestamp(r.changed), ...(r.deleted ? { deleted: true } : {}) },
  };
}

/**
 * The 2.x resource type of a feed row's record: the feed keeps its entity type and bundle
 * (core migration 0014), and this face names them as ModelRegistry.typeName does.
 */
function wireType(r: FeedRow): string {
  return `${r.entityType}--${r.bundle}`;
}

/** The bytes of a page around its entries and records, at most: room kept for them in the budget. */
function frameBytes(self: { href: string }, nextLink: (cursor: string) => { href: string }): number {
  const longest = encodeCursor(LONGEST_CURSOR);
  return Buffer.byteLength(
    `{"jsonapi":${JSON.stringify(JSONAPI_VERSION)},"data":[],"included":[],"meta":${JSON.stringify({ cursor: longest })},"links":${JSON.stringify({ self, next: nextLink(longest) })}}`,
  );
}

/** What a page sends: its entries, its records (JSON text), and where it was cut short, if it was. */
interface PageText {
  entries: string[];
  records: Array<{ text: string; bytes: number }>;
  /** The last row sent, when the budget ended the page before its last row. */
  cutAfter: FeedRow | null;
}

export function changesRoutes(s: JsonApiServices): Router {
  const router = express.Router();
  const { registry, config } = s.ctx;

  /** Resource types the caller may read, of those asked for (403 naming one it may not). */
  const readableTypes = (principal: Principal, asked: string[] | null): string[] => {
    if (!asked)
      return [...registry.resourceTypes.values()]
        .filter((rt) => mayOnType(principal, rt.entityType, 'view'))
        .map((rt) => rt.type);
    for (const type of asked) {
      const rt = registry.get(type);
      if (!rt)
        throw badParameter(
          'filter[type]',
          `filter[type] names "${type.slice(0, 100)}", which is not a resource type of this farm.`,
        );
      if (!mayOnType(principal, rt.entityType, 'view'))
        throw forbidden(`The current user is not allowed to read ${type} resources, so not their changes either.`, {
          parameter: 'filter[type]',
        });
    }
    return asked;
  };

  /**
   * Drop the rows of records the caller may not see although it may see their type (unpublished
   * terms; blocked users are listed, by label only): the access policy's own condition for lists
   * (listCondition), asked of the page's live rows of each such entity type in one query.
   */
  const visible = async (principal: Principal, rows: FeedRow[]): Promise<FeedRow[]> => {
    const hidden = new Set<string>();
    const live = rows.filter((r) => !r.deleted);
    for (const entityType of new Set(live.map((r) => r.entityType))) {
      const et = registry.model.entityTypes[entityType]!;
      const guard = listCondition(principal, et, 'e');
      if (!guard) continue;
      const ids = live.filter((r) => r.entityType === entityType).map((r) => r.entityId);
      const q = s.knex(`${et.table} as e`).whereIn('e.id', ids).select('e.id');
      guard(q);
      const seen = new Set(((await q) as Array<{ id: number | string }>).map((r) => Number(r.id)));
      for (const id of ids) if (!seen.has(id)) hidden.add(`${entityType}:${id}`);
    }
    return hidden.size ? rows.filter((r) => r.deleted || !hidden.has(`${r.entityType}:${r.entityId}`)) : rows;
  };

  /** The live records of these rows, loaded a type at a time, by `entityType:id`. */
  const liveRecords = async (rows: FeedRow[]): Promise<Map<string, EntityRecord>> => {
    const byType = new Map<string, number[]>();
    for (const r of rows) if (!r.deleted) byType.set(r.entityType, [...(byType.get(r.entityType) ?? []), r.entityId]);
    const out = new Map<string, EntityRecord>();
    for (const [entityType, ids] of byType)
      for (const record of await s.loader.load(s.knex, entityType, ids, null))
        out.set(`${entityType}:${record.id}`, record);
    return out;
  };

  /**
   * The page's entries and (`withRecords`) live records, rendered as the collections render them,
   * in feed order, until the next row would take them past `budget` bytes: the page then ends
   * after the last row that fits, and the next page starts after it. Records are loaded a few at a
   * time (as many as the bytes left have room for, by the largest seen so far) and kept as text
   * only, so what a page holds is bounded by the budget, not by page[limit] times a record's size.
   * A record that alone is past the budget is a 413 naming it.
   */
  const pageText = async (
    principal: Principal,
    rows: FeedRow[],
    { withRecords, budget, shape }: { withRecords: boolean; budget: number; shape: ApiShape },
  ): Promise<PageText> => {
    const page: PageText = { entries: [], records: [], cutAfter: null };
    let used = 0;
    let largest = 0;
    for (let i = 0; i < rows.length;) {
      const count = withRecords
        ? Math.max(1, Math.min(RECORDS_PER_LOAD, largest ? Math.floor((budget - used) / largest) : FIRST_LOAD))
        : rows.length;
      const batch = rows.slice(i, i + count);
      const loaded = withRecords ? await liveRecords(batch) : new Map<string, EntityRecord>();
      for (const row of batch) {
        const entry = JSON.stringify(entryOf(row));
        const record = loaded.get(`${row.entityType}:${row.entityId}`);
        const text = record ? JSON.stringify(s.serializer.resourceObject(record, principal, undefined, shape)) : null;
        const bytes = text === null ? 0 : Buffer.byteLength(text);
        // Each with the comma before it.
        const adds = Buffer.byteLength(entry) + 1 + (text === null ? 0 : bytes + 1);
        if (used + adds > budget) {
          if (i === 0) throw recordTooLarge(row);
          page.cutAfter = rows[i - 1]!;
          return page;
        }
        used += adds;
        largest = Math.max(largest, bytes);
        page.entries.push(entry);
        if (text !== null) page.records.push({ text, bytes });
        i++;
      }
    }
    return page;
  };

  const recordTooLarge = (row: FeedRow) =>
    new ApiError(
      413,
      `The record ${wireType(row)} ${row.uuid} alone is larger than the ${config.responseMaxBytes} bytes an answer may hold (TILTH_RESPONSE_MAX_BYTES): read the feed past it without include=records.`,
      { source: { parameter: 'include' } },
    );

  /** The page as one JSON:API document, in bytes (no joined copy of its text: see DocumentPieces). */
  const send = (
    res: Response,
    page: PageText,
    {
      withRecords,
      meta,
      links,
    }: { withRecords: boolean; meta: Record<string, unknown>; links: Record<string, { href: string }> },
  ) => {
    const body = new DocumentPieces();
    body.push(`{"jsonapi":${JSON.stringify(JSONAPI_VERSION)},"data":[${page.entries.join(',')}]`);
    if (withRecords) {
      body.push(',"included":[');
      page.records.forEach((r, n) => {
        if (n) body.push(',', 1);
        body.push(r.text, r.bytes);
      });
      body.push(']');
      page.records.length = 0;
    }
    body.push(`,"meta":${JSON.stringify(meta)},"links":${JSON.stringify(links)}}`);
    sendBytes(res, `${JSONAPI_MEDIA_TYPE}; charset=utf-8`, body.toBuffer());
  };

  router.get(CHANGES_PATH, async (req: Request, res) => {
    const principal = principalOf(res);
    requireAuthenticated(principal);
    const i = req.originalUrl.indexOf('?');
    const params = parseQueryString(i < 0 ? '' : req.originalUrl.slice(i + 1));
    for (const name of Object.keys(params)) {
      if (!['since', 'filter', 'page', 'include'].includes(name))
        throw badParameter(
          name,
          `The change feed takes since, filter[type], page[limit] and include=records; not ${name.slice(0, 100)}.`,
        );
    }
    const since = single(params, 'since');
    if (since === undefined)
      throw badParameter(
        'since',
        'since is required: 0 for every change kept, or the meta.cursor of the previous answer.',
      );
    const cursor = decodeCursor(since);
    if (!cursor)
      throw badParameter(
        'since',
        'since is not a cursor this server gave: use 0, or a meta.cursor exactly as it came.',
      );
    const now = Math.floor(Date.now() / 1000);
    if (cursor !== FEED_START && cursor.issued < now - config.tombstoneDays * DAY) {
      throw new ApiError(
        410,
        `This cursor is older than the ${config.tombstoneDays} day(s) deletions are kept for: sync in full (since=0) and continue from the new cursor.`,
        { code: 'cursor_expired', source: { parameter: 'since' } },
      );
    }
    const include = single(params, 'include');
    if (include !== undefined && include !== 'records')
      throw badParameter('include', 'The change feed includes only "records" (include=records).');
    const withRecords = include !== undefined;
    const limit = pageLimit(params, { withRecords });
    const types = readableTypes(principal, requestedTypes(params));

    const kinds: FeedKind[] = types.map((type) => ({
      entityType: registry.get(type)!.entityType.entityType,
      bundle: registry.get(type)!.bundle.bundle,
    }));
    const read = kinds.length
      ? await readFeed(s.knex, cursor, kinds, limit, now)
      : { rows: [], next: { ...cursor, issued: now }, more: false, ahead: false };
    if (read.ahead) {
      throw new ApiError(
        410,
        "This cursor is ahead of this farm's change feed (the farm was restored from a backup, or lost its last moments in a power cut): sync in full (since=0) and continue from the new cursor.",
        { code: 'cursor_expired', source: { parameter: 'since' } },
      );
    }
    const shown = await visible(principal, read.rows);
    // The records and links in the caller's shape (jsonapi/shape.ts): one feed, read two ways.
    const shape = s.shape(res);
    const self = { href: `${shape.base}${req.originalUrl}` };
    const nextLink = (at: string) => ({
      href: `${shape.base}${CHANGES_PATH}?${buildQueryString({ ...params, since: at })}`,
    });
    const page = await pageText(principal, shown, {
      withRecords,
      shape,
      budget: config.responseMaxBytes - frameBytes(self, nextLink),
    });
    // Cut short by the budget: go on after the last row sent (a shorter page is a page like another).
    const next = page.cutAfter
      ? { issued: now, txid: page.cutAfter.txid, position: page.cutAfter.position }
      : read.next;
    const nextCursor = encodeCursor(next);
    const links: Record<string, { href: string }> = { self };
    if (read.more || page.cutAfter) links.next = nextLink(nextCursor);
    send(res, page, { withRecords, meta: { cursor: nextCursor }, links });
  });
  router.all(CHANGES_PATH, (req) => {
    throw methodNotAllowed(req.method, ['GET']);
  });
  return router;
}
