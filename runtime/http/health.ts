/**
 * `GET /health` for load balancers, container health checks and people: the process answers, the
 * database answers, and its migrations match this code. 200 when all hold, 503 otherwise. No
 * token is needed and nothing secret is shown (no paths, no URLs, no error texts).
 */
import type { Request, Response } from 'express';
import type { AppContext } from '../context.ts';
import { migrationStatus } from '../storage/migrations.ts';
import { TILTH_VERSION } from '../version.ts';
import type { AheadWatch } from './database-ahead.ts';

/** Each check also tells `ahead` what it found, so writes are refused from the health check on. */
export function healthHandler(ctx: AppContext, ahead: AheadWatch) {
  return async (_req: Request, res: Response): Promise<void> => {
    let database: 'ok' | 'unreachable' = 'ok';
    let migrations: 'current' | 'behind' | 'ahead' | 'unknown' = 'unknown';
    try {
      const status = await migrationStatus(ctx.db.knex, ctx.generated.migrations);
      migrations = status.unknown.length ? 'ahead' : status.pending.length ? 'behind' : 'current';
      ahead.record(migrations === 'ahead');
    } catch {
      database = 'unreachable';
    }
    const ok = database === 'ok' && migrations === 'current';
    res
      .status(ok ? 200 : 503)
      .set('Cache-Control', 'no-store')
      .json({
        status: ok ? 'ok' : 'failing',
        version: TILTH_VERSION,
        uptime_seconds: Math.round(process.uptime()),
        database,
        migrations,
      });
  };
}
