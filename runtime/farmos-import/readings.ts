/**
 * A data stream's readings, a page at a time, never all at once: a stream can hold millions, and
 * neither the copy nor the comparison may hold them in memory whole. Both sides are summed up by
 * an order-free digest (their count and a sum of each reading's hash), so the source's pages
 * (newest first) and this farm's rows (oldest first) compare without sorting either.
 */
import { once } from 'node:events';
import { createReadStream, createWriteStream, rmSync } from 'node:fs';
import type { Db } from '../storage/records.ts';
import { READINGS_TABLE } from '../farm/data-streams.ts';
import { SourceError, type FarmSource } from './source.ts';

/** Readings per request to the source (its data endpoint, offset-paged as farmOS serves it), and per read here. */
export const READINGS_PAGE = 10_000;

/** A reading as [unix seconds, value]. */
export type ReadingRow = [number, number];

/** The source's readings of a stream, a page at a time. */
export async function* sourceReadings(source: FarmSource, uuid: string): AsyncGenerator<ReadingRow[]> {
  for (let offset = 0; ; offset += READINGS_PAGE) {
    const rows = await source.getJson(`/api/data_stream/${uuid}/data?limit=${READINGS_PAGE}&offset=${offset}`);
    if (!Array.isArray(rows)) throw new SourceError(`/api/data_stream/${uuid}/data did not answer a list of readings.`);
    const page = (rows as Array<Record<string, unknown>>).map((row): ReadingRow => [
      Number(row.timestamp),
      Number(Object.entries(row).find(([k]) => k !== 'timestamp')?.[1]),
    ]);
    if (page.length) yield page;
    if (rows.length < READINGS_PAGE) return;
  }
}

/**
 * This farm's readings of a stream, oldest first, a page at a time: keyset on the timestamp (the
 * index's second column), each page closed at a whole second so that readings sharing one are
 * never split between two pages.
 */
export async function* storedReadings(db: Db, streamId: number): AsyncGenerator<ReadingRow[]> {
  let after: number | null = null;
  for (;;) {
    const q = db(READINGS_TABLE)
      .where('stream_id', streamId)
      .orderBy('timestamp')
      .limit(READINGS_PAGE)
      .select('timestamp', 'value');
    if (after !== null) q.where('timestamp', '>', after);
    const rows = ((await q) as Array<{ timestamp: number | string; value: number | string }>).map((r): ReadingRow => [
      Number(r.timestamp),
      Number(r.value),
    ]);
    if (!rows.length) return;
    if (rows.length < READINGS_PAGE) {
      yield rows;
      return;
    }
    // The last second may go on past the page: its readings are read whole, on their own.
    const last = rows[rows.length - 1]![0];
    const before = rows.filter((r) => r[0] < last);
    const atLast = (
      (await db(READINGS_TABLE).where({ stream_id: streamId, timestamp: last }).select('timestamp', 'value')) as Array<{
        timestamp: number | string;
        value: number | string;
      }>
    ).map((r): ReadingRow => [Number(r.timestamp), Number(r.value)]);
    yield [...before, ...atLast];
    after = last;
  }
}

/**
 * What a set of readings is, whatever their order: how many, and two 32-bit sums of a hash of
 * each (a change detector, not a defence against someone crafting readings).
 */
export class ReadingsDigest {
  private count = 0;
  private a = 0;
  private b = 0;
  private readonly view = new DataView(new ArrayBuffer(16));

  add(rows: readonly ReadingRow[]): void {
    for (const [timestamp, value] of rows) {
      this.view.setFloat64(0, timestamp);
      this.view.setFloat64(8, value);
      let h1 = 0x9e3779b9;
      let h2 = 0x85ebca6b;
      for (let i = 0; i < 16; i += 4) {
        const w = this.view.getUint32(i);
        h1 = Math.imul(h1 ^ w, 0xcc9e2d51);
        h1 = (h1 << 13) | (h1 >>> 19);
        h2 = Math.imul(h2 ^ w, 0x1b873593);
        h2 = (h2 << 15) | (h2 >>> 17);
      }
      h1 = Math.imul(h1 ^ (h1 >>> 16), 0x85ebca6b);
      h2 = Math.imul(h2 ^ (h2 >>> 13), 0xc2b2ae35);
      this.a = (this.a + (h1 >>> 0)) >>> 0;
      this.b = (this.b + (h2 >>> 0)) >>> 0;
      this.count++;
    }
  }

  get size(): number {
    return this.count;
  }

  /** As the import map keeps it (`readings:` marks the kind: a digest of the whole list, as kept before, differs). */
  digest(): string {
    return `readings:${this.count}:${this.a.toString(16).padStart(8, '0')}${this.b.toString(16).padStart(8, '0')}`;
  }
}

/** The digest of the source's readings of a stream, read a page at a time. */
export async function sourceDigest(source: FarmSource, uuid: string): Promise<ReadingsDigest> {
  const d = new ReadingsDigest();
  for await (const page of sourceReadings(source, uuid)) d.add(page);
  return d;
}

/** The digest of this farm's readings of a stream, read a page at a time. */
export async function storedDigest(db: Db, streamId: number): Promise<ReadingsDigest> {
  const d = new ReadingsDigest();
  for await (const page of storedReadings(db, streamId)) d.add(page);
  return d;
}

/** Bytes a reading takes in a spool file: its timestamp and value, two little-endian doubles. */
const SPOOLED_READING_BYTES = 16;

/** A stream's readings as read from the source, waiting on disk to be written here. */
export interface SpooledReadings {
  file: string;
  digest: ReadingsDigest;
  /** Remove the file (a no-op once removed). */
  discard(): void;
}

/**
 * Read a stream's readings from the source into a file, with their digest: a transaction then
 * writes them from the file, so that no transaction waits on the source (a slow or stalled source
 * would hold the farm's writes, or the change feed, for as long), and none are held in memory.
 */
export async function spoolSourceReadings(source: FarmSource, uuid: string, file: string): Promise<SpooledReadings> {
  const digest = new ReadingsDigest();
  const out = createWriteStream(file, { flags: 'wx' });
  const discard = () => rmSync(file, { force: true });
  try {
    for await (const page of sourceReadings(source, uuid)) {
      const buffer = Buffer.allocUnsafe(page.length * SPOOLED_READING_BYTES);
      page.forEach(([timestamp, value], i) => {
        buffer.writeDoubleLE(timestamp, i * SPOOLED_READING_BYTES);
        buffer.writeDoubleLE(value, i * SPOOLED_READING_BYTES + 8);
      });
      digest.add(page);
      if (!out.write(buffer)) await once(out, 'drain');
    }
    out.end();
    await once(out, 'finish');
  } catch (error) {
    out.destroy();
    discard();
    throw error;
  }
  return { file, digest, discard };
}

/** The readings of a spool file, a page at a time. */
export async function* spooledReadings(file: string): AsyncGenerator<ReadingRow[]> {
  let rest: Buffer = Buffer.alloc(0);
  let page: ReadingRow[] = [];
  for await (const chunk of createReadStream(file, { highWaterMark: READINGS_PAGE * SPOOLED_READING_BYTES })) {
    const bytes = rest.length ? Buffer.concat([rest, chunk as Buffer]) : (chunk as Buffer);
    const whole = bytes.length - (bytes.length % SPOOLED_READING_BYTES);
    for (let at = 0; at < whole; at += SPOOLED_READING_BYTES)
      page.push([bytes.readDoubleLE(at), bytes.readDoubleLE(at + 8)]);
    rest = bytes.subarray(whole);
    if (page.length >= READINGS_PAGE) {
      yield page;
      page = [];
    }
  }
  if (page.length) yield page;
}
