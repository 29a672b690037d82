/**
 * Changes that come with time. Some computed fields show something else once a moment passes,
 * with no write then: an asset moved by a done movement log dated in the future is in its new
 * place from that moment (farm/placements.ts), and an adjustment of a future-dated done log counts
 * in the inventory from then (farm/inventory.ts). The record's version (its change-feed row, also
 * its ETag) must change at that moment too, or an offline client keeps what it showed before and
 * a GET with the old ETag is a 304.
 *
 * So a save that makes such a moment records it here (`tilth_due_changes`, core migration 0013),
 * in its own transaction; each process keeps a timer for the earliest moment it knows of, and
 * when one passes gives the records due a new feed row and deletes their due rows. A process also
 * looks every POLL_MS for moments another process recorded, and at start for those that passed
 * while it was stopped. Processes that do it together write a record's feed row twice: harmless.
 */
import type { Knex } from 'knex';
import { recordChangedIds } from './change-feed.ts';
import { chunks, lockRows, type Db } from './records.ts';
import { write } from './transactions.ts';

export const DUE_TABLE = 'tilth_due_changes';

/** How often a process looks for moments it was not told of (another process's saves). */
const POLL_MS = 60_000;
/** After the moment: a timer that fires a little early must not find the change not yet due. */
const MARGIN_MS = 50;
/**
 * A save wakes the timer before it commits: a moment closer than this is looked at this long after
 * the save, not at once, so that the save's row is there to be read.
 */
const AFTER_SAVE_MS = 1_000;
/** After a pass that failed (a deadlock with a save on PostgreSQL, say): the next try. */
const RETRY_MS = 5_000;

/** The running processes' timers in this Node process: a save that records a moment wakes them for it. */
const wakers = new Set<(at: number) => void>();

/** A record whose computed fields change at `at` (seconds since the epoch). */
export interface DueChange {
  id: number;
  at: number;
}

/** Record the moments still to come at which these records change (inside the save's transaction). */
export async function recordDueChanges(db: Db, entityType: string, changes: readonly DueChange[]): Promise<void> {
  const now = Date.now() / 1000;
  const rows = [
    ...new Map(
      changes
        .filter((c) => c.at > now)
        .map((c) => [`${c.id}:${c.at}`, { entity_type: entityType, entity_id: c.id, due_ts: c.at }]),
    ).values(),
  ];
  if (!rows.length) return;
  for (const part of chunks(rows, 500))
    await db(DUE_TABLE).insert(part).onConflict(['entity_type', 'entity_id', 'due_ts']).ignore();
  let first = Infinity;
  for (const r of rows) first = Math.min(first, r.due_ts);
  for (const wake of wakers) wake(Math.max(first, (Date.now() + AFTER_SAVE_MS) / 1000));
}

/** One process's timer over the due changes of its database. */
export class DueChanges {
  private timer: NodeJS.Timeout | null = null;
  /** When the timer fires (ms since the epoch). */
  private firesAt = Infinity;
  private running: Promise<void> | null = null;
  private stopped = false;
  private readonly wake = (at: number) => this.schedule(at * 1000);

  /** `tables`: each entity type's table, whose rows the feed reads the UUID and bundle from. */
  constructor(
    private readonly knex: Knex,
    private readonly tables: ReadonlyMap<string, string>,
    private readonly onError: (error: unknown) => void,
  ) {}

  /** Start: what came due while no process ran is recorded at once. */
  start(): void {
    wakers.add(this.wake);
    this.schedule(Date.now());
  }

  async stop(): Promise<void> {
    this.stopped = true;
    wakers.delete(this.wake);
    if (this.timer) clearTimeout(this.timer);
    await this.running;
  }

  /** Fire at `atMs` (or at the next poll, if that is sooner), unless the timer fires sooner already. */
  private schedule(atMs: number): void {
    if (this.stopped) return;
    const when = Math.min(Math.max(atMs + MARGIN_MS, Date.now()), Date.now() + POLL_MS);
    if (this.timer && when >= this.firesAt) return;
    if (this.timer) clearTimeout(this.timer);
    this.firesAt = when;
    this.timer = setTimeout(() => void this.fire(), when - Date.now()).unref();
  }

  private async fire(): Promise<void> {
    this.timer = null;
    this.firesAt = Infinity;
    await this.running;
    if (this.stopped) return;
    let next = Date.now() + POLL_MS;
    this.running = this.recordDue()
      .then((earliest) => void (earliest !== null && (next = Math.min(next, earliest * 1000))))
      .catch((error: unknown) => {
        next = Date.now() + RETRY_MS;
        this.onError(error);
      })
      .finally(() => (this.running = null));
    await this.running;
    this.schedule(next);
  }

  /** Give every record whose moment has passed a new feed row; the earliest moment still to come, or null. */
  async recordDue(): Promise<number | null> {
    for (;;) {
      const now = Math.floor(Date.now() / 1000);
      const rows = (await this.knex(DUE_TABLE)
        .where('due_ts', '<=', now)
        .orderBy('due_ts')
        .limit(500)
        .select('entity_type', 'entity_id')) as Array<{ entity_type: string; entity_id: number }>;
      if (!rows.length) break;
      const byType = new Map<string, number[]>();
      for (const r of rows) byType.set(r.entity_type, [...(byType.get(r.entity_type) ?? []), Number(r.entity_id)]);
      await write(this.knex, async (trx) => {
        for (const [entityType, ids] of byType) {
          const table = this.tables.get(entityType);
          // Its row first, then its feed row, as every save of the record takes them.
          if (table) {
            await lockRows(trx, table, ids);
            await recordChangedIds(trx, entityType, table, ids);
          }
          await trx(DUE_TABLE)
            .where('entity_type', entityType)
            .whereIn('entity_id', ids)
            .where('due_ts', '<=', now)
            .delete();
        }
      });
      if (rows.length < 500) break;
    }
    const next = (await this.knex(DUE_TABLE).min('due_ts as at').first()) as { at: number | string | null } | undefined;
    return next?.at === null || next?.at === undefined ? null : Number(next.at);
  }
}
