/**
 * Fixed-window counters of attempts per key (a client address, an account), used by the token
 * endpoint, the sign-in form and password confirmations. `Limiter` is what they call; on SQLite
 * it is `RateLimiter`, kept in this process's memory (one process serves a SQLite file, and a
 * restart forgets the counts); on PostgreSQL it is access/shared-rate-limiter.ts, in the database,
 * so that the limits hold across every process that serves it. `limiterFor` picks.
 */
import type { Database } from '../storage/database.ts';
import { SharedRateLimiter } from './shared-rate-limiter.ts';

/**
 * Counting attempts against a limit. `hit` counts at once, before it returns or yields (a caller
 * that hits, then awaits, has reserved its attempt); it answers the seconds to wait when this
 * attempt is over the limit, else 0.
 */
export interface Limiter {
  hit(key: string): number | Promise<number>;
  /** Give back one attempt counted by `hit` that did not happen after all. */
  release(key: string): void | Promise<void>;
  /** Forget `key`'s count (after a successful login). */
  reset(key: string): void | Promise<void>;
}

/** The limiter for this database: in memory on SQLite, shared through the database on PostgreSQL. `name` keeps limiters' keys apart. */
export function limiterFor(db: Database, name: string, limit: number, windowSeconds: number): Limiter {
  return db.dialect === 'postgres'
    ? new SharedRateLimiter(db.knex, name, limit, windowSeconds)
    : new RateLimiter(limit, windowSeconds);
}
interface Window {
  count: number;
  /** Unix milliseconds when the window ends. */
  resetAt: number;
}

/** Most keys tracked at once; beyond it, finished windows are dropped, then the oldest. */
const MAX_KEYS = 100_000;

export class RateLimiter implements Limiter {
  private readonly windows = new Map<string, Window>();

  constructor(
    private readonly limit: number,
    private readonly windowSeconds: number,
  ) {}

  /** Seconds until `key` may try again, or 0 when it is under its limit. Does not count. */
  retryAfter(key: string, at = Date.now()): number {
    const w = this.windows.get(key);
    if (!w || w.resetAt <= at || w.count < this.limit) return 0;
    return Math.ceil((w.resetAt - at) / 1000);
  }

  /** Count one attempt; returns the seconds to wait (and counts nothing) when it is over the limit, else 0. */
  hit(key: string, at = Date.now()): number {
    let w = this.windows.get(key);
    if (!w || w.resetAt <= at) {
      this.makeRoom(at);
      w = { count: 0, resetAt: at + this.windowSeconds * 1000 };
      this.windows.set(key, w);
    }
    // An attempt turned away is not counted: the count is of the attempts let through, so that
    // one given back (release) frees a try even after a burst past the limit was turned away.
    if (w.count >= this.limit) return Math.max(1, Math.ceil((w.resetAt - at) / 1000));
    w.count += 1;
    return 0;
  }

  /** Give back one attempt counted by `hit` that did not happen after all (e.g. the server was too busy to make it). */
  release(key: string): void {
    const w = this.windows.get(key);
    if (w && w.count > 0) w.count -= 1;
  }

  /** Forget `key`'s count (after a successful login). */
  reset(key: string): void {
    this.windows.delete(key);
  }

  private makeRoom(at: number): void {
    if (this.windows.size < MAX_KEYS) return;
    for (const [key, w] of this.windows) if (w.resetAt <= at) this.windows.delete(key);
    // Still full: drop the oldest entries (Map keeps insertion order).
    for (const key of this.windows.keys()) {
      if (this.windows.size < MAX_KEYS) break;
      this.windows.delete(key);
    }
  }
}
