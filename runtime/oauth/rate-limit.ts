/**
 * Rate limiting of the token endpoint, the revocation endpoint and the login form per client
 * address (config.rateLimit): every request counts against its address (default 300 a minute:
 * scripts and the client libraries' test suites never get near it). Failed passwords are counted
 * per account by accounts/password-guard.ts, wherever a password is checked.
 *
 * Counters are fixed windows: in this process's memory on SQLite, in the database on PostgreSQL,
 * where several processes may serve one farm and must count together (access/rate-limiter.ts).
 */
import type { Request } from 'express';
import { OAuthError } from '../errors.ts';
import { limiterFor, type Limiter } from '../access/rate-limiter.ts';
import type { Database } from '../storage/database.ts';
import { clientAddress } from '../access/client-address.ts';

/** The address limiter of the authorization server. */
export interface Limiters {
  addresses: Limiter;
  trustProxy: number;
}

/** The limiters configured by config.rateLimit and config.trustProxy. */
export function createLimiters(
  db: Database,
  config: { rateLimit: { windowSeconds: number; perAddress: number }; trustProxy: number },
): Limiters {
  return {
    addresses: limiterFor(db, 'address', config.rateLimit.perAddress, config.rateLimit.windowSeconds),
    trustProxy: config.trustProxy,
  };
}

/** Middleware: counts the request against its client address; over the limit, a 429 OAuth error with Retry-After. */
export function limitAddresses(limiters: Limiters) {
  return (req: Request, _res: unknown, next: (err?: unknown) => void): void => {
    Promise.resolve(limiters.addresses.hit(clientAddress(req, limiters.trustProxy))).then((wait) => {
      if (wait)
        next(
          new OAuthError('slow_down', `Too many requests from this address; try again in ${wait} seconds.`, {
            headers: { 'Retry-After': String(wait) },
          }),
        );
      else next();
    }, next);
  };
}
