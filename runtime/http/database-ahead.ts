/**
 * A process whose database was migrated past its code: another process of a newer release (or of
 * the farm's changed site definitions) ran `tilth migrate` beside it (README, "Scaling out"). Its
 * rules may no longer be the database's (a renamed allowed value that it would still store), so it
 * refuses every write until it is restarted with that code; reads go on, as do sign-ins.
 *
 * Asking the migrations table on every write would cost a query per request: the answer is kept
 * for a second, one check at a time, and every full check (`/health`, the error handler) refreshes it.
 */
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import type { AppContext } from '../context.ts';
import { ApiError } from '../errors.ts';
import { databaseAhead } from '../storage/migrations.ts';

/** How long a check of the migrations table is trusted before the next write asks again. */
const CHECK_EVERY_MS = 1000;

/** Methods that change nothing: never refused. */
const READS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** Every path a write can reach records by: the API (uploads included), subrequests and the sensor listeners. */
export const WRITE_PATHS = {
  prefixes: ['/api/', '/subrequests', '/asset/', '/farm/sensor/listener/'],
  exact: ['/api'],
};

export class AheadWatch {
  private ahead = false;
  private checkedAt = -Infinity;
  private checking: Promise<boolean> | null = null;

  constructor(private readonly ctx: AppContext) {}

  /** What a full check of the migrations table found just now. */
  record(ahead: boolean): void {
    this.ahead = ahead;
    this.checkedAt = Date.now();
  }

  /** Whether the database is ahead of this code, as last checked (at most a second ago). */
  async isAhead(): Promise<boolean> {
    return Date.now() - this.checkedAt < CHECK_EVERY_MS ? this.ahead : this.checkNow();
  }

  /** Ask the migrations table now (one question at a time, shared by whoever asks meanwhile). */
  checkNow(): Promise<boolean> {
    this.checking ??= databaseAhead(this.ctx.db.knex, this.ctx.generated.migrations)
      .then((ahead) => {
        this.record(ahead);
        return ahead;
      })
      .finally(() => (this.checking = null));
    return this.checking;
  }

  /** Refuses writes, before their bodies are read, while the database is ahead. */
  refuseWrites(): RequestHandler {
    return (req: Request, _res: Response, next: NextFunction) => {
      if (READS.has(req.method)) return next();
      this.isAhead().then((ahead) => next(ahead ? databaseAheadError('write') : undefined), next);
    };
  }
}

/** The answer of a process whose code is older than the database's migrations. */
export function databaseAheadError(refused: 'write' | 'answer'): ApiError {
  return new ApiError(
    503,
    `The database was migrated by newer code than this process runs (a newer release of Tilth, or the farm's changed definitions in TILTH_SITE_DIR), ` +
      (refused === 'write' ? 'so it refuses writes, whose rules may have changed' : 'so it cannot answer') +
      `: retry the request (another process may take it). This process must be restarted with the code that migrated the database.`,
    { headers: { 'Retry-After': '5' } },
  );
}
