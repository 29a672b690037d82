/**
 * Rate limiting of the token endpoint, the revocation endpoint and the login form, per client
 * address and per user name (config.rateLimit):
 * - every request counts against its address (default 300 a minute: scripts and the client
 *   libraries' test suites never get near it);
 * - failed password checks count against the user name (default 20 a minute), and a success
 *   clears the count, so guessing one account's password stalls after a few tries while its
 *   owner, who types it right, is not held back.
 *
 * Counters are fixed windows kept in this process's memory for now: with several server
 * processes each counts on its own (the effective limit is multiplied by the process count), and a
 * restart forgets them. Moving them into the database or a shared cache is the way to make the
 * limit exact across processes.
 */
import type { Request } from 'express';
import { OAuthError } from '../errors.ts';

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

/** The two limiters of the authorization server. */
export interface Limiters {
  addresses: RateLimiter;
  usernames: RateLimiter;
  trustProxy: number;
}

/** The limiters configured by config.rateLimit and config.trustProxy. */
export function createLimiters(config: { rateLimit: { windowSeconds: number; perAddress: number; perUsername: number }; trustProxy: number }): Limiters {
  return {
    addresses: new RateLimiter(config.rateLimit.perAddress, config.rateLimit.windowSeconds),
    usernames: new RateLimiter(config.rateLimit.perUsername, config.rateLimit.windowSeconds),
    trustProxy: config.trustProxy,
  };
}

/**
 * The client's address: the socket's peer, or with `trustProxy` = N > 0 the N-th address from the
 * right of X-Forwarded-For (each trusted proxy appends the address it received from). Entries a
 * client put there itself lie further left and are never used.
 */
export function clientAddress(req: Request, trustProxy: number): string {
  const peer = req.socket.remoteAddress ?? 'unknown';
  if (trustProxy <= 0) return peer;
  const header = req.headers['x-forwarded-for'];
  const hops = (Array.isArray(header) ? header.join(',') : (header ?? ''))
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  return hops[hops.length - trustProxy] ?? hops[0] ?? peer;
}

/** The key a user name is counted under: case and surrounding spaces do not make a new name. */
export function usernameKey(username: string): string {
  return username.trim().toLowerCase();
}

/** Middleware: counts the request against its client address; over the limit, a 429 OAuth error with Retry-After. */
export function limitAddresses(limiters: Limiters) {
  return (req: Request, _res: unknown, next: (err?: unknown) => void): void => {
    const wait = limiters.addresses.hit(clientAddress(req, limiters.trustProxy));
    if (wait) next(new OAuthError('slow_down', `Too many requests from this address; try again in ${wait} seconds.`, { headers: { 'Retry-After': String(wait) } }));
    else next();
  };
}
