/**
 * Rate-limit counters in PostgreSQL (table tilth_rate_limits, core migration 0007), for several
 * server processes over one database: each attempt is one statement that counts it, whichever
 * process it reached, so an address or an account gets its limit once, not once per process.
 * Windows are timed by the database's clock (processes' clocks may differ). The row's lock makes
 * attempts on one key count one after another; rows whose window ended are deleted now and then.
 */
import type { Knex } from 'knex';
import type { Limiter } from './rate-limiter.ts';

/** How often, at most, a process deletes ended windows: once a window, or a minute if windows are longer. */
const CLEAN_AT_MOST_EVERY_MS = 60_000;

/**
 * Count an attempt unless the key's window is full. The row comes back only when the attempt was
 * counted: one turned away leaves the count as it was (the count is of the attempts let through,
 * so one given back with `release` frees a try even after a burst past the limit).
 */
const HIT = `
INSERT INTO tilth_rate_limits AS r (key, count, reset_at) VALUES (?, 1, now() + make_interval(secs => ?))
ON CONFLICT (key) DO UPDATE SET
  count = CASE WHEN r.reset_at <= now() THEN 1 ELSE r.count + 1 END,
  reset_at = CASE WHEN r.reset_at <= now() THEN EXCLUDED.reset_at ELSE r.reset_at END
WHERE r.reset_at <= now() OR r.count < ?
RETURNING count`;

const WAIT = 'SELECT ceil(extract(epoch FROM reset_at - now()))::int AS wait FROM tilth_rate_limits WHERE key = ?';

export class SharedRateLimiter implements Limiter {
  private lastCleaned = 0;

  constructor(
    private readonly knex: Knex,
    /** Prefixes the keys of this limiter ("address", "password"): limiters share the table. */
    private readonly name: string,
    private readonly limit: number,
    private readonly windowSeconds: number,
  ) {}

  async hit(key: string): Promise<number> {
    this.cleanNowAndThen();
    const result = await this.knex.raw(HIT, [`${this.name}:${key}`, this.windowSeconds, this.limit]);
    if (result.rows.length > 0) return 0;
    // Turned away. The wait is read after (the window may have ended in between: then 1 s).
    const wait = (await this.knex.raw(WAIT, [`${this.name}:${key}`])).rows[0] as { wait: number } | undefined;
    return Math.max(1, wait?.wait ?? 1);
  }

  async release(key: string): Promise<void> {
    await this.knex.raw(
      'UPDATE tilth_rate_limits SET count = count - 1 WHERE key = ? AND count > 0 AND reset_at > now()',
      [`${this.name}:${key}`],
    );
  }

  async reset(key: string): Promise<void> {
    await this.knex.raw('DELETE FROM tilth_rate_limits WHERE key = ?', [`${this.name}:${key}`]);
  }

  /** Delete the rows whose window ended, now and then, on a hit, without holding it up. */
  private cleanNowAndThen(at = Date.now()): void {
    if (at - this.lastCleaned < Math.min(CLEAN_AT_MOST_EVERY_MS, this.windowSeconds * 1000)) return;
    this.lastCleaned = at;
    this.knex.raw('DELETE FROM tilth_rate_limits WHERE reset_at < now()').catch(() => {
      // Cleaning is housekeeping: the next one tries again.
    });
  }
}
