/**
 * The change feed: every record created, changed or deleted, each once with its latest state, in
 * the order the changes committed (core migration 0008 makes the `change_feed` table).
 *
 * Writing. RecordStore's insert, update and delete, and the cascades that change a record without
 * saving it (placements rebuilt: an asset's computed location), call `recordChanges` inside the
 * write's own transaction: an upsert per record changed, no trigger, nothing scanned.
 * Each upsert gives the row a new `position`, which is also the record's version (its ETag).
 *
 * Each dialect's statements are in a file of its own (change-feed-sqlite.ts, change-feed-postgres.ts),
 * reached through the database's dialect (storage/dialect.ts); this file is the API.
 *
 * Reading in commit order, and why nothing is skipped:
 *
 * - SQLite has one writer, and group commit runs a batch's writes one after another on it, then
 *   COMMITs the batch before the next batch writes anything. Positions come from AUTOINCREMENT, so
 *   every row a later commit writes has a higher position than every row an earlier one wrote. A
 *   reader first takes the highest position H it can see, then reads rows above its cursor up to
 *   H: everything at or below H has committed, and anything committed later lies above H.
 *
 * - PostgreSQL hands out positions (a sequence) when a write happens, not when it commits: a
 *   transaction that took position 10 may commit after one that took 11, and a reader that had
 *   passed 11 would never see 10. So rows are read in the order of their writing transaction's id
 *   (`txid`, pg_current_xact_id()), then position, and only below a horizon h taken in a
 *   statement before the rows are read: every transaction with an id below h has ended by then,
 *   so its rows, if it committed, are all visible to the next statement; and every transaction
 *   that can still write has an id at or above h. The set of rows below h can therefore never
 *   grow, and a cursor at (h, 0) has seen all of it. (A row rewritten later moves above h with its
 *   new txid: the reader meets the record again there, with its newer state.)
 *
 *   h is pg_snapshot_xmin(pg_current_snapshot()) narrowed to this database: the least of the
 *   snapshot's xmax (no id at or above it had been handed out when the snapshot was taken) and
 *   the ids of the transactions of this database still running (pg_stat_activity.backend_xid),
 *   read after the snapshot in the same statement. An id below xmax was then either running
 *   (listed, unless it ended in between, and then visible to the next statement) or ended; an id
 *   handed out later is at or above xmax. Taking the whole cluster's xmin instead would be as
 *   correct, but would hold the feed back behind long transactions of other databases. Every
 *   writer of the feed is this server's role, whose sessions' ids pg_stat_activity shows.
 *
 *   So the feed trails the oldest of this farm's transactions still running: a write is in the
 *   feed once every transaction of the farm that began before it has ended.
 *
 * Cursors are opaque to clients: `issued.txid.position`, base64url-encoded. `issued` (seconds)
 * lets the server refuse a cursor older than the tombstones it keeps (TILTH_TOMBSTONE_DAYS).
 */
import type { Knex } from 'knex';
import type { Db } from './records.ts';
import { execute, selectRows } from './sql.ts';
import { dialectOf } from './dialect.ts';

export const FEED_TABLE = 'change_feed';

/** A record whose change goes into the feed. */
export interface ChangedRecord {
  id: number;
  uuid: string;
  bundle: string;
}

/** Records of one entity type and bundle: what a reader of the feed asks for (a face names it its own way). */
export interface FeedKind {
  entityType: string;
  bundle: string;
}

/** One row of the feed as read. */
export interface FeedRow {
  position: number;
  txid: string;
  entityType: string;
  entityId: number;
  bundle: string;
  uuid: string;
  deleted: boolean;
  changed: number;
}

/** Where a reader is in the feed. `txid` is '0' on SQLite. */
export interface FeedCursor {
  issued: number;
  txid: string;
  position: number;
}

/** The start of the feed: `since=0`. */
export const FEED_START: FeedCursor = { issued: 0, txid: '0', position: 0 };

const ROWS_PER_STATEMENT = 500;

/**
 * The versions a PostgreSQL transaction has given records (`entityType:id` → position), from its
 * upserts' RETURNING: the answer to a write then needs no statement of its own for its ETag (a
 * round trip, a tenth of what the feed added to a POST there). Only PostgreSQL's: each request
 * has a transaction of its own there, and a failed statement ends it. On SQLite a group commit's
 * writes share one transaction object and a savepoint rolled back would leave a stale entry; a
 * version read there is a few microseconds on the writer's own connection anyway.
 */
const written = new WeakMap<object, Map<string, number>>();

/**
 * Put these records' latest state in the feed, inside the transaction that changed them. Each
 * call gives each record a new position, its new version, even within one transaction: on SQLite
 * the writes of a group commit's batch share one transaction object, and each must show its own
 * version (an ETag) and survive the rollback of another's savepoint.
 */
export async function recordChanges(
  db: Db,
  entityType: string,
  records: readonly ChangedRecord[],
  options: { deleted?: boolean; now?: number } = {},
): Promise<void> {
  const { deleted = false, now = Math.floor(Date.now() / 1000) } = options;
  if (!records.length) return;
  // A record listed twice in one statement: once (PostgreSQL's ON CONFLICT refuses it twice).
  const list = [...new Map(records.map((r) => [r.id, r])).values()];
  const feed = dialectOf(db).feed;
  for (let i = 0; i < list.length; i += ROWS_PER_STATEMENT) {
    const part = list.slice(i, i + ROWS_PER_STATEMENT);
    const bindings = part.flatMap((r) => [entityType, r.id, r.bundle, r.uuid, deleted ? 1 : 0, now]);
    const rows = await feed.upsert(db, part.length, bindings);
    // Only PostgreSQL's upsert tells the positions (see `written`). Kept for a transaction only: one outside any would be seen by every later request.
    if (!rows || !(db as Knex.Transaction).isTransaction) continue;
    let versions = written.get(db);
    if (!versions) written.set(db, (versions = new Map()));
    for (const r of rows) versions.set(`${entityType}:${r.entity_id}`, Number(r.position));
  }
}

/** `recordChanges` for records known by id only (a cascade): their UUIDs and bundles are read first. */
export async function recordChangedIds(
  db: Db,
  entityType: string,
  table: string,
  ids: readonly number[],
): Promise<void> {
  if (!ids.length) return;
  const dialect = dialectOf(db);
  const unique = [...new Set(ids)];
  const rows = await selectRows<{ id: number; uuid: string; bundle: string }>(
    db,
    `SELECT id, uuid, bundle FROM "${table}" WHERE ${dialect.inIdList('id', { single: unique.length === 1 })}`,
    [dialect.idListParameter(unique)],
  );
  await recordChanges(
    db,
    entityType,
    rows.map((r) => ({ id: Number(r.id), uuid: r.uuid, bundle: r.bundle })),
  );
}

/**
 * The versions of several records of one entity type (id → version), in one statement: a page
 * that offers a change of each of its rows (the dashboard's tasks) sends each one's version, as
 * an edit form does. A record the feed has no row of is left out.
 */
export async function versionsOf(db: Db, entityType: string, ids: readonly number[]): Promise<Map<number, number>> {
  const unique = [...new Set(ids)];
  if (!unique.length) return new Map();
  const dialect = dialectOf(db);
  const rows = await selectRows<{ entity_id: number | string; position: number | string }>(
    db,
    `SELECT entity_id, position FROM ${FEED_TABLE} WHERE entity_type = ? AND ${dialect.inIdList('entity_id', { single: unique.length === 1 })}`,
    [entityType, dialect.idListParameter(unique)],
  );
  return new Map(rows.map((r) => [Number(r.entity_id), Number(r.position)]));
}

/**
 * A record's version: its feed row's position; null for a record the feed has no row of. With
 * `lock`, the feed row is read FOR UPDATE (an If-Match's check before its save).
 */
export async function versionOf(
  db: Db,
  entityType: string,
  id: number,
  options: { lock?: boolean } = {},
): Promise<number | null> {
  const lock = options.lock === true;
  // What this transaction wrote itself (PostgreSQL, see `written`); a lock always asks the row.
  const known = lock ? undefined : written.get(db)?.get(`${entityType}:${id}`);
  if (known !== undefined) return known;
  // FOR UPDATE, not the weaker NO KEY UPDATE: the upsert that follows an If-Match gives the row a
  // new position, its key, and takes FOR UPDATE itself (a weaker lock first would be upgraded).
  // Step 4 of the global lock order (storage/locks.ts): after the record's row and its revision counter.
  const sql = `SELECT position FROM ${FEED_TABLE} WHERE entity_type = ? AND entity_id = ?${lock ? dialectOf(db).rowLock('UPDATE') : ''}`;
  const [row] = await selectRows<{ position: number | string }>(db, sql, [entityType, id]);
  return row ? Number(row.position) : null;
}

export function encodeCursor(cursor: FeedCursor): string {
  return Buffer.from(`${cursor.issued}.${cursor.txid}.${cursor.position}`).toString('base64url');
}

/** The cursor a client sent, or null when it is not one this server issued (or `0`, the start). */
export function decodeCursor(text: string): FeedCursor | null {
  if (text === '0') return FEED_START;
  if (text.length > 100 || !/^[A-Za-z0-9_-]+$/.test(text)) return null;
  const match = /^(\d{1,12})\.(\d{1,20})\.(\d{1,20})$/.exec(Buffer.from(text, 'base64url').toString('latin1'));
  if (!match) return null;
  const position = Number(match[3]);
  if (!Number.isSafeInteger(position)) return null;
  return { issued: Number(match[1]), txid: match[2]!, position };
}

/**
 * The rows after `cursor`, in commit order, of records of these kinds, at most `limit`; and the
 * cursor to continue from. `more` says a full page was read and others may follow at once.
 */
export async function readFeed(
  db: Db,
  cursor: FeedCursor,
  kinds: readonly FeedKind[],
  limit: number,
  now = Math.floor(Date.now() / 1000),
): Promise<{ rows: FeedRow[]; next: FeedCursor; more: boolean; ahead: boolean }> {
  const feed = dialectOf(db).feed;
  const { horizon, rows: raw } = await feed.read(db, cursor, kinds.map(kindKey), limit, now);
  const more = raw.length > limit;
  const rows = raw.slice(0, limit).map((r) => ({
    position: Number(r.position),
    txid: String(r.txid),
    entityType: String(r.entity_type),
    entityId: Number(r.entity_id),
    bundle: String(r.bundle),
    uuid: String(r.uuid),
    deleted: Boolean(r.deleted),
    changed: Number(r.changed),
  }));
  const last = rows[rows.length - 1];
  let next: FeedCursor;
  if (more) next = { issued: now, txid: last!.txid, position: last!.position };
  else
    next = laterOf(
      horizon,
      last ? { issued: now, txid: last.txid, position: last.position } : { ...cursor, issued: now },
    );
  // A cursor past the horizon was issued by a database that had written more than this one has:
  // a farm restored from an older backup, or commits a power cut took back before they reached
  // the disk (a read may see a commit a moment before it is synced). The horizon never moves back
  // otherwise (new transaction ids and positions only grow).
  const ahead = feed.ahead(cursor, horizon);
  return { rows, next, more, ahead };
}

/** A kind as the feed's statements match it (`entity_type || ' ' || bundle`: machine names hold no space). */
function kindKey(kind: FeedKind): string {
  return `${kind.entityType} ${kind.bundle}`;
}

/** The later of two cursors, in feed order. */
function laterOf(a: FeedCursor, b: FeedCursor): FeedCursor {
  const ta = BigInt(a.txid);
  const tb = BigInt(b.txid);
  if (ta !== tb) return ta > tb ? a : b;
  return a.position >= b.position ? a : b;
}

/** Delete tombstones written before `before` (unix seconds); how many went. */
export async function pruneTombstones(db: Db, before: number): Promise<number> {
  return execute(db, `DELETE FROM ${FEED_TABLE} WHERE deleted AND changed < ?`, [before]);
}

/** Tombstones are pruned a day after their cursors expire: a transaction may commit a while after it wrote. */
const PRUNE_MARGIN_SECONDS = 86_400;
const PRUNE_EVERY_MS = 3_600_000;

/**
 * The server's timer that deletes tombstones older than the days a cursor stays good, at start and
 * then hourly: off the requests (a GET of the feed no longer deletes), and a farm nobody syncs
 * is pruned too. Several processes over one database each prune; the deletes are the same.
 */
export class TombstonePruner {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly knex: Knex,
    private readonly tombstoneDays: number,
    private readonly onError: (error: unknown) => void,
  ) {}

  start(): void {
    this.prune();
    this.timer = setInterval(() => this.prune(), PRUNE_EVERY_MS).unref();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.running;
  }

  private prune(): void {
    const before = Math.floor(Date.now() / 1000 - this.tombstoneDays * 86_400 - PRUNE_MARGIN_SECONDS);
    this.running = this.running.then(() => pruneTombstones(this.knex, before)).catch(this.onError);
  }
}

/**
 * Fill the feed for records saved before it existed (a farm upgraded to the release that brought
 * it), when migration 0008 asked for it: one statement per entity table; then clear the request.
 */
export async function fillIfPending(
  knex: Knex,
  tables: ReadonlyArray<{ entityType: string; table: string }>,
): Promise<number> {
  if (!(await knex.schema.hasTable('tilth_pending_work'))) return 0;
  if (!(await knex('tilth_pending_work').where('name', FEED_TABLE).first())) return 0;
  const feed = dialectOf(knex).feed;
  const now = Math.floor(Date.now() / 1000);
  let filled = 0;
  await knex.transaction(async (trx) => {
    for (const { entityType, table } of tables) {
      if (!(await trx.schema.hasTable(table))) continue;
      filled += await execute(trx, feed.fillSql(table), [entityType, 0, now, entityType]);
    }
    await trx('tilth_pending_work').where('name', FEED_TABLE).delete();
  });
  return filled;
}
