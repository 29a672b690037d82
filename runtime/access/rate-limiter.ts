/**
 * Fixed-window counters of attempts per key (a client address, an account), kept in this
 * process's memory: with several server processes each counts on its own, and a restart forgets
 * them. Used by the token endpoint, the sign-in form and password confirmations.
 */
interface Window {
  count: number;
  /** Unix milliseconds when the window ends. */
  resetAt: number;
}

/** Most keys tracked at once; beyond it, finished windows are dropped, then the oldest. */
const MAX_KEYS = 100_000;

export class RateLimiter {
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

  /** Count one attempt; returns the seconds to wait when this attempt is over the limit, else 0. */
  hit(key: string, at = Date.now()): number {
    let w = this.windows.get(key);
    if (!w || w.resetAt <= at) {
      this.makeRoom(at);
      w = { count: 0, resetAt: at + this.windowSeconds * 1000 };
      this.windows.set(key, w);
    }
    w.count += 1;
    return w.count > this.limit ? Math.ceil((w.resetAt - at) / 1000) : 0;
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
