/**
 * Readings of basic data streams, as farmOS's data_stream module keeps them (Basic.php): reading
 * a device's JSON payload into (name, timestamp, value) readings, storing them in bulk, and
 * reading them back newest first over a time range. Sources: farmOS modules/core/data_stream and
 * modules/asset/sensor; farmos-behaviour.md §8.4.
 *
 * As farmOS's Basic::storageSave does, a value that is not numeric is skipped (the numeric ones of
 * the same post are stored) and an empty or unreadable timestamp is taken as the time of the post;
 * the post is still a 201. Only a body that is not a JSON object or an array of them is refused
 * (`PostRefused`, nothing written), where farmOS would fail with a 500; the HTTP routes
 * (http/data-streams.ts) answer it, and read the query's range and page.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { Db } from '../storage/records.ts';
import { parseTimestamp } from '../values/timestamps.ts';
import { badParameter } from '../errors.ts';

export const READINGS_TABLE = 'data_stream_basic';

/** farmOS's cap on the readings one GET returns ("to prevent exhausting PHP's memory"). */
export const MAX_READINGS_LIMIT = 100_000;

/** One value of one named stream at one time. */
export interface Reading {
  name: string;
  timestamp: number;
  value: number;
}

export interface ReadingsQuery {
  start: number | null;
  end: number | null;
  limit: number;
  offset: number;
  /** Only these stream names (farmOS's `name` parameter), or every stream when null. */
  names: string[] | null;
}

/** A stream's row as the readings functions need it. */
export interface StreamRef {
  id: number;
  name: string;
}

/**
 * Compare a presented key with the stored one in constant time. Both are hashed first so that
 * neither the length nor the content of the stored key leaks through timing.
 */
export function keysMatch(presented: unknown, stored: unknown): boolean {
  if (typeof presented !== 'string' || typeof stored !== 'string' || presented === '' || stored === '') return false;
  const a = createHash('sha256').update(presented).digest();
  const b = createHash('sha256').update(stored).digest();
  return timingSafeEqual(a, b);
}

/** A JSON number, or a string PHP's is_numeric would accept, as a finite number; else null. */
function numericValue(value: unknown): number | null {
  if (typeof value === 'number') return Number.isFinite(value) ? value : null;
  if (typeof value !== 'string' || !/^\s*[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?\s*$/.test(value)) return null;
  const n = Number(value);
  return Number.isFinite(n) ? n : null;
}

/**
 * A post of readings refused, with nothing stored: a point that is not a JSON object (`point`:
 * its place in the posted array), or the post as a whole (`point` null: a lone point that is not
 * an object, too many new value names). The face places it (http/data-streams.ts: a 400 pointing
 * into the body).
 */
export class PostRefused extends Error {
  constructor(
    readonly point: number | null,
    detail: string,
  ) {
    super(detail);
    this.name = 'PostRefused';
  }
}

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/** What a posted payload holds: its numeric readings, and every value name it mentions. */
export interface PostedReadings {
  readings: Reading[];
  /**
   * Every accepted key but `timestamp`, whether its values were numeric or not: farmOS's
   * SensorDataController::getUniqueNamedValues creates a sensor's data streams from these.
   */
  names: string[];
}

/**
 * The readings in a posted payload: one point `{"timestamp": …, "<name>": <number>, …}` or an
 * array of them. `accept(name)` says which keys are stream values: for a data stream only its own
 * name (other keys are ignored, as farmOS does); for a sensor every key but `timestamp`.
 *
 * As farmOS's Basic::storageSave: a value that is not numeric (PHP's is_numeric) is skipped; a
 * timestamp that is empty (PHP's empty: missing, null, 0, "0", "", false) or unreadable is the
 * time of the post, `now`. A point that is not a JSON object is refused (`PostRefused`).
 */
export function readingsFromPayload(payload: unknown, now: number, accept: (name: string) => boolean): PostedReadings {
  const points = Array.isArray(payload) ? payload : [payload];
  const where = (i: number) => (Array.isArray(payload) ? `point ${i} of the posted array` : 'the posted point');
  const readings: Reading[] = [];
  const names = new Set<string>();
  points.forEach((point, i) => {
    if (!isObject(point)) {
      throw new PostRefused(
        Array.isArray(payload) ? i : null,
        `${capitalise(where(i))} is not a JSON object: post {"timestamp": 1700000000, "<name>": 76.5} or an array of such objects.`,
      );
    }
    const timestamp = timestampOf(point.timestamp) ?? now;
    for (const [name, value] of Object.entries(point)) {
      if (name === 'timestamp' || !accept(name)) continue;
      names.add(name);
      const number = numericValue(value);
      if (number !== null) readings.push({ name, timestamp, value: number });
    }
  });
  return { readings, names: [...names] };
}

/** A posted timestamp as Unix seconds, or null when farmOS would fall back to the request time. */
function timestampOf(raw: unknown): number | null {
  if (raw === undefined || raw === null || raw === '' || raw === 0 || raw === '0' || raw === false) return null;
  // A number, or a numeric string (PHP's is_numeric), is taken as Unix seconds; else a date string.
  const number = numericValue(raw);
  const parsed = parseTimestamp(number !== null ? Math.floor(number) : raw);
  return parsed === 0 ? null : parsed;
}

function capitalise(s: string): string {
  return s.charAt(0).toUpperCase() + s.slice(1);
}

/**
 * Rows per INSERT: three bindings each, inside SQLite's and PostgreSQL's limits. Knex writes a
 * many-row INSERT on SQLite as one compound SELECT, which SQLite caps at 500 terms
 * (SQLITE_MAX_COMPOUND_SELECT): 1,000 rows failed with "too many terms in compound SELECT".
 */
const INSERT_CHUNK = 500;

/**
 * Each stream's readings summed up by the hour (core migration 0019): what a summary over a long
 * range reads instead of every reading. Kept in step by insertReadings and deleteReadings, the
 * only writers of readings.
 */
export const HOURS_TABLE = 'data_stream_hours';
const HOUR = 3600;
/**
 * The bucket width from which a summary reads the hours' sums: rounding a bucket of 4 hours or
 * more up to whole hours from the hour the range starts in costs at most a fifth of the buckets.
 */
const HOURLY_FROM = 4 * HOUR;

/** The start of the hour a time falls in (times before 1970 too). */
function hourOf(timestamp: number): number {
  return timestamp - (((timestamp % HOUR) + HOUR) % HOUR);
}

interface HourRow {
  stream_id: number;
  hour: number;
  first: number;
  last: number;
  min: number;
  max: number;
  n: number;
}

/** Store readings of streams by id, in bulk, and their hours' sums. Runs inside the caller's transaction. */
export async function insertReadings(
  db: Db,
  rows: Array<{ streamId: number; timestamp: number; value: number }>,
): Promise<void> {
  const hours = new Map<string, HourRow>();
  for (let i = 0; i < rows.length; i += INSERT_CHUNK) {
    const chunk = rows
      .slice(i, i + INSERT_CHUNK)
      .map((r) => ({ stream_id: r.streamId, timestamp: r.timestamp, value: r.value }));
    await db(READINGS_TABLE).insert(chunk);
    for (const r of chunk) {
      const hour = hourOf(r.timestamp);
      const key = `${r.stream_id}:${hour}`;
      const h = hours.get(key);
      if (!h)
        hours.set(key, {
          stream_id: r.stream_id,
          hour,
          first: r.timestamp,
          last: r.timestamp,
          min: r.value,
          max: r.value,
          n: 1,
        });
      else {
        if (r.timestamp < h.first) h.first = r.timestamp;
        if (r.timestamp > h.last) h.last = r.timestamp;
        if (r.value < h.min) h.min = r.value;
        if (r.value > h.max) h.max = r.value;
        h.n++;
      }
    }
  }
  // In (stream, hour) order: two writers' upserts lock the rows they meet in the same order, so
  // on PostgreSQL one waits for the other instead of each holding a row the other needs.
  const all = [...hours.values()].sort((a, b) => a.stream_id - b.stream_id || a.hour - b.hour);
  for (let i = 0; i < all.length; i += INSERT_CHUNK) {
    // Added to the hour's row when it has one: the same statement on SQLite and PostgreSQL.
    await db(HOURS_TABLE)
      .insert(all.slice(i, i + INSERT_CHUNK))
      .onConflict(['stream_id', 'hour'])
      .merge({
        first: db.raw(
          `CASE WHEN excluded.first < ${HOURS_TABLE}.first THEN excluded.first ELSE ${HOURS_TABLE}.first END`,
        ),
        last: db.raw(`CASE WHEN excluded.last > ${HOURS_TABLE}.last THEN excluded.last ELSE ${HOURS_TABLE}.last END`),
        min: db.raw(`CASE WHEN excluded.min < ${HOURS_TABLE}.min THEN excluded.min ELSE ${HOURS_TABLE}.min END`),
        max: db.raw(`CASE WHEN excluded.max > ${HOURS_TABLE}.max THEN excluded.max ELSE ${HOURS_TABLE}.max END`),
        n: db.raw(`${HOURS_TABLE}.n + excluded.n`),
      });
  }
}

/** Delete every reading of a stream, and its hours' sums. Runs inside the caller's transaction. */
export async function deleteReadings(db: Db, streamId: number): Promise<void> {
  await db(READINGS_TABLE).where('stream_id', streamId).delete();
  await db(HOURS_TABLE).where('stream_id', streamId).delete();
}

/**
 * The readings of these streams in the query's range, newest first, as farmOS's storageGetMultiple
 * returns them: `{"timestamp": <unix seconds>, "<stream name>": "<decimal>"}` per reading.
 * The value is a decimal string, as farmOS renders its fractions (Fraction::toDecimal).
 */
export async function queryReadings(
  db: Db,
  streams: StreamRef[],
  query: ReadingsQuery,
): Promise<Array<Record<string, number | string>>> {
  const selected = query.names ? streams.filter((s) => query.names!.includes(s.name)) : streams;
  if (!selected.length || query.limit === 0) return [];
  const names = new Map(selected.map((s) => [s.id, s.name]));
  const q = db(READINGS_TABLE).select('stream_id', 'timestamp', 'value');
  if (selected.length === 1) q.where('stream_id', selected[0]!.id);
  else q.whereIn('stream_id', [...names.keys()]);
  if (query.start !== null) q.where('timestamp', '>=', query.start);
  if (query.end !== null) q.where('timestamp', '<=', query.end);
  q.orderBy('timestamp', 'desc').limit(query.limit);
  if (query.offset) q.offset(query.offset);
  const rows = (await q) as Array<{ stream_id: number; timestamp: number | string; value: number | string }>;
  return rows.map((r) => ({
    timestamp: Number(r.timestamp),
    [names.get(Number(r.stream_id))!]: decimalString(Number(r.value)),
  }));
}

/** A double as a plain decimal string (no exponent for ordinary magnitudes). */
function decimalString(value: number): string {
  const s = String(value);
  if (!/e/i.test(s)) return s;
  // Very small or large magnitudes: write them out in full, trimming trailing zeros.
  return Math.abs(value) >= 1
    ? BigInt(Math.round(value)).toString()
    : value.toFixed(20).replace(/0+$/, '').replace(/\.$/, '');
}

/** The most buckets one summary may ask for: a chart wider than this has more buckets than pixels. */
export const MAX_SUMMARY_BUCKETS = 4000;

/** One bucket of a summary: the readings of [start, start + width) reduced to their extremes. */
export interface ReadingsBucket {
  /** The bucket's first and last reading's times (Unix seconds). */
  first: number;
  last: number;
  min: number;
  max: number;
  count: number;
}

export interface ReadingsSummary {
  start: number;
  end: number;
  /** Seconds per bucket: the range split into at most `buckets` equal parts. */
  width: number;
  buckets: ReadingsBucket[];
}

/**
 * A stream's readings in [start, end] reduced for a chart (issue 42 §6): the range cut into at
 * most `buckets` equal spans (one per pixel of the chart), each span's minimum, maximum, count and
 * first and last times. A line through each bucket's min and max draws what every reading would
 * at that width (no peak is lost), from at most `buckets` rows whatever the stream holds.
 *
 * It is one aggregate statement, the same text on SQLite and PostgreSQL (integer division of
 * bigints truncates on both, and bucket numbers count from the range's start, so none is
 * negative). A span shorter than an hour reads the readings over the (stream_id, timestamp) index
 * (core migration 0004). A bucket of four hours or more is made a whole number of hours, counted
 * from the hour the range starts in, so each hour falls in one bucket: the hours wholly inside the
 * range are read from their sums (migration 0019), and only the partial first and last hours
 * reading by reading. A million readings a minute apart are then 16,700 rows instead of a million.
 * `width` is then counted from that hour, not from `start`.
 */
export async function summariseReadings(
  db: Db,
  streamId: number,
  range: { start: number; end: number; buckets: number },
): Promise<ReadingsSummary> {
  const { start, end } = range;
  const buckets = Math.max(1, Math.min(MAX_SUMMARY_BUCKETS, Math.floor(range.buckets)));
  let width = Math.max(1, Math.ceil((end - start + 1) / buckets));
  let rows: unknown;
  // Below HOURLY_FROM a bucket would lose too much to whole hours counted from the hour the range
  // starts in (a day in 24 spans of an hour would need 25, so it would get 13 of two hours): such
  // ranges are short enough (at most HOURLY_FROM per bucket) to read reading by reading.
  if (width < HOURLY_FROM) {
    rows = await db.raw(SUMMARY_SQL, [start, width, streamId, start, end]);
  } else {
    const origin = hourOf(start);
    width = Math.ceil((end - origin + 1) / buckets / HOUR) * HOUR;
    // Hours wholly inside [start, end]: from the first hour starting at or after `start` to the
    // last ending at or before `end`. What is left at either end is read reading by reading.
    const fromHour = start === origin ? origin : origin + HOUR;
    const toHour = hourOf(end + 1); // exclusive: the hour holding end + 1 is not whole
    rows =
      fromHour < toHour
        ? await db.raw(HOURLY_SUMMARY_SQL, [
            origin,
            width,
            streamId,
            start,
            fromHour - 1,
            origin,
            width,
            streamId,
            toHour,
            end,
            origin,
            width,
            streamId,
            fromHour,
            toHour - HOUR,
          ])
        : await db.raw(SUMMARY_SQL, [origin, width, streamId, start, end]);
  }
  // SQLite's driver answers the rows; PostgreSQL's a result holding them.
  const list = (Array.isArray(rows) ? rows : (rows as { rows: unknown[] }).rows) as Array<Record<string, unknown>>;
  return {
    start,
    end,
    width,
    buckets: list.map((r) => ({
      first: Number(r.first),
      last: Number(r.last),
      min: Number(r.min),
      max: Number(r.max),
      count: Number(r.n),
    })),
  };
}

const SUMMARY_SQL = `SELECT ("timestamp" - CAST(? AS BIGINT)) / CAST(? AS BIGINT) AS bucket,
 MIN("timestamp") AS first, MAX("timestamp") AS last, MIN(value) AS min, MAX(value) AS max, COUNT(*) AS n
 FROM ${READINGS_TABLE} WHERE stream_id = ? AND "timestamp" >= ? AND "timestamp" <= ?
 GROUP BY 1 ORDER BY 1`;

/** The partial first hour, the partial last hour (readings), and the whole hours between (sums). */
const HOURLY_SUMMARY_SQL = `SELECT bucket, MIN(first) AS first, MAX(last) AS last, MIN(min) AS min, MAX(max) AS max, SUM(n) AS n
 FROM (
  SELECT ("timestamp" - CAST(? AS BIGINT)) / CAST(? AS BIGINT) AS bucket, "timestamp" AS first, "timestamp" AS last,
   value AS min, value AS max, 1 AS n
  FROM ${READINGS_TABLE} WHERE stream_id = ? AND "timestamp" >= ? AND "timestamp" <= ?
  UNION ALL
  SELECT ("timestamp" - CAST(? AS BIGINT)) / CAST(? AS BIGINT), "timestamp", "timestamp", value, value, 1
  FROM ${READINGS_TABLE} WHERE stream_id = ? AND "timestamp" >= ? AND "timestamp" <= ?
  UNION ALL
  SELECT (hour - CAST(? AS BIGINT)) / CAST(? AS BIGINT), first, last, min, max, n
  FROM ${HOURS_TABLE} WHERE stream_id = ? AND hour >= ? AND hour <= ?
 ) AS parts GROUP BY bucket ORDER BY bucket`;

/** A stream's newest reading (one step down the index), or null when it has none. */
export async function latestReading(db: Db, streamId: number): Promise<{ timestamp: number; value: number } | null> {
  const row = (await db(READINGS_TABLE)
    .where('stream_id', streamId)
    .orderBy('timestamp', 'desc')
    .first('timestamp', 'value')) as { timestamp: number | string; value: number | string } | undefined;
  return row ? { timestamp: Number(row.timestamp), value: Number(row.value) } : null;
}

/** A summary's range when the query names none: the last day. */
export const DEFAULT_SUMMARY_SPAN = 86_400;
/** Buckets when the query names none: about a chart's width on a desktop. */
export const DEFAULT_SUMMARY_BUCKETS = 600;

/**
 * A summary's range and bucket count from a query (`start`, `end`: Unix seconds, inclusive, as the
 * readings endpoint reads them; `buckets`), the same for the API and the web pages. Missing: the
 * day up to `now`, 600 buckets. A value that is not a whole number, a start after the end or a
 * bucket count outside 1…MAX_SUMMARY_BUCKETS is a 400 naming its parameter.
 */
export function summaryRangeOf(
  get: (name: string) => string | null,
  now: number,
): { start: number; end: number; buckets: number } {
  const integer = (name: string, min: number, max: number, unit: string): number | null => {
    const raw = get(name);
    if (raw === null || raw.trim() === '') return null;
    const n = /^-?\d{1,15}$/.test(raw.trim()) ? Number(raw) : NaN;
    if (!Number.isSafeInteger(n) || n < min || n > max)
      throw badParameter(
        name,
        `The "${name}" parameter must be a whole number ${unit}; it is "${raw.length > 40 ? `${raw.slice(0, 37)}…` : raw}".`,
      );
    return n;
  };
  const seconds = 'of Unix seconds';
  const end = integer('end', -1e12, 1e12, seconds) ?? now;
  const start = integer('start', -1e12, 1e12, seconds) ?? end - DEFAULT_SUMMARY_SPAN;
  if (start > end)
    throw badParameter('start', `The "start" parameter (${start}) is after "end" (${end}): the range is empty.`);
  const buckets =
    integer('buckets', 1, MAX_SUMMARY_BUCKETS, `from 1 to ${MAX_SUMMARY_BUCKETS}`) ?? DEFAULT_SUMMARY_BUCKETS;
  return { start, end, buckets };
}
