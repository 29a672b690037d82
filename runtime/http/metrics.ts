/**
 * Prometheus metrics at `/metrics` (prom-client): requests by route and status, their latencies,
 * the database pool, uptime, and Node's own process metrics. Who may read them is a setting
 * (TILTH_METRICS): `token` (default) asks for a bearer token of an account administrator or
 * administrator, `public` serves them to anyone (for a scraper on a private network), `off`
 * turns the route off.
 *
 * Route labels are templates (`/api/log/activity/{id}`), never raw paths, so that the number of
 * series stays bounded whatever clients request.
 */
import type { NextFunction, Request, Response } from 'express';
import { Counter, Gauge, Registry, collectDefaultMetrics, type Metric } from 'prom-client';
import type { AppContext } from '../context.ts';
import { principalOf } from '../access/principal.ts';
import { forbidden, notFound } from '../errors.ts';
import { isAccountAdmin, requireAuthenticated } from '../access/policy.ts';
import { KEPT_SQL_CHARS, keptStatements, queuedWrites, walSyncStats } from '../storage/database.ts';
import { isPostgres } from '../storage/sql.ts';

const UUID_SEGMENT = /\/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}(?=\/|$)/gi;
const KNOWN_PREFIXES = ['/api', '/oauth', '/subrequests', '/.well-known', '/health', '/metrics'];

/** The label of a request's route: the path with UUIDs as {id}; files, unknown and unmatched paths collapsed. */
export function routeLabel(path: string, status: number): string {
  if (status === 404) return 'unmatched';
  if (path.startsWith('/system/files/')) return '/system/files/*';
  const templated = path.replace(UUID_SEGMENT, '/{id}').replace(/\/+$/, '') || '/';
  if (templated === '/' || KNOWN_PREFIXES.some((p) => templated === p || templated.startsWith(`${p}/`)))
    return templated.split('/').slice(0, 7).join('/');
  return 'other';
}

/** Distinct route labels kept; more than any farm's route templates, few enough to scrape. */
const MAX_ROUTES = 1000;
/** Longest path whose label is memoised (a route with a UUID and a relationship is under 120). */
const MAX_MEMO_PATH = 200;

export interface Metrics {
  /** Middleware counting and timing every request. */
  observe(req: Request, res: Response, next: NextFunction): void;
  /** The `/metrics` route. */
  handler(req: Request, res: Response): Promise<void>;
}

export function createMetrics(ctx: AppContext): Metrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const requests = new RequestStats();
  for (const metric of requests.metrics()) registry.registerMetric(metric);
  const pool = (ctx.db.knex.client as { pool?: { numUsed(): number; numFree(): number; numPendingAcquires(): number } })
    .pool;
  new Gauge({
    name: 'tilth_db_pool_connections',
    help: 'Database connections by state: in use, free, and requests waiting for one.',
    labelNames: ['state'],
    registers: [registry],
    collect() {
      if (!pool) return;
      this.set({ state: 'used' }, pool.numUsed());
      this.set({ state: 'free' }, pool.numFree());
      // Writes queued for SQLite's group commit wait for the connection too.
      this.set({ state: 'pending' }, pool.numPendingAcquires() + queuedWrites(ctx.db.knex));
    },
  });
  new Gauge({
    name: 'tilth_request_body_reserved_bytes',
    help: 'Bytes reserved by the request bodies being read into memory now (TILTH_BODY_BUDGET_MB caps it).',
    registers: [registry],
    collect() {
      this.set(ctx.bodies.reservedBytes);
    },
  });
  // SQLite's log synced to disk before writes are acknowledged, and checkpointed, beside the
  // server (storage/wal-sync.ts): how often, and the time the disk took. A slow or failing disk
  // shows here first.
  const wal = walSyncStats(ctx.db.knex);
  if (wal) {
    const counters: Array<[name: string, help: string, read: () => number]> = [
      [
        'tilth_sqlite_log_syncs_total',
        "Syncs of SQLite's write-ahead log to disk; each covers every commit before it.",
        () => wal.count,
      ],
      [
        'tilth_sqlite_log_sync_seconds_total',
        "Seconds spent syncing SQLite's write-ahead log to disk (off the event loop).",
        () => wal.seconds,
      ],
      [
        'tilth_sqlite_checkpoints_total',
        'Checkpoints made beside the server that copied the whole log into the database file.',
        () => wal.checkpoints,
      ],
      [
        'tilth_sqlite_checkpoint_failures_total',
        "Checkpoints beside the server that failed (the log is then left to SQLite's own, in a COMMIT).",
        () => wal.checkpointFailures,
      ],
    ];
    for (const [name, help, read] of counters) {
      new Counter({
        name,
        help,
        registers: [registry],
        collect() {
          this.reset();
          this.inc(read());
        },
      });
    }
  }
  // SQLite's prepared statements kept for reuse (storage/database.ts), bounded by count and by
  // their SQL text: what they hold is native memory, outside the JavaScript heap.
  if (!isPostgres(ctx.db.knex)) {
    new Gauge({
      name: 'tilth_sqlite_statements_kept',
      help: "SQLite statements kept prepared for reuse, over the server's connections.",
      registers: [registry],
      collect() {
        this.set(keptStatements(ctx.db.knex)?.statements ?? 0);
      },
    });
    new Gauge({
      name: 'tilth_sqlite_statements_kept_sql_chars',
      help: `The SQL text of the statements kept, in characters (at most ${KEPT_SQL_CHARS} a connection).`,
      registers: [registry],
      collect() {
        this.set(keptStatements(ctx.db.knex)?.sqlChars ?? 0);
      },
    });
  }
  const started = Date.now();
  new Gauge({
    name: 'tilth_uptime_seconds',
    help: 'Seconds since this server started.',
    registers: [registry],
    collect() {
      this.set((Date.now() - started) / 1000);
    },
  });

  // Route labels are templates, but a request answered before any route (an OPTIONS preflight,
  // a refused token) is labelled by its path, which the client makes up: past MAX_ROUTES routes,
  // new ones are counted as "other", so series stay bounded.
  const routes = new Set<string>();
  const bounded = (path: string) =>
    routes.has(path) || (routes.size < MAX_ROUTES && routes.add(path)) ? path : 'other';
  // The labels of paths seen lately (the regular expressions of routeLabel, once per path); long
  // paths, which only clients making them up send, are labelled afresh and not kept.
  const labels = new Map<string, string>();
  const labelOf = (path: string, status: number) => {
    if (status === 404) return 'unmatched';
    if (path.length > MAX_MEMO_PATH) return routeLabel(path, status);
    let label = labels.get(path);
    if (label === undefined) {
      if (labels.size >= MAX_ROUTES) labels.clear();
      labels.set(path, (label = routeLabel(path, status)));
    }
    return label;
  };

  return {
    observe(req, res, next) {
      const started = performance.now();
      res.on('finish', () => {
        // The matched resource route's template when there is one (no pattern to run over the
        // path); otherwise the path, templated. originalUrl: routers mounted at /api rewrite req.url.
        const route =
          res.locals.route && res.statusCode !== 404
            ? res.locals.route
            : labelOf(req.originalUrl.split('?')[0]!, res.statusCode);
        requests.record(req.method, bounded(route), res.statusCode, (performance.now() - started) / 1000);
      });
      next();
    },
    async handler(_req, res) {
      const mode = ctx.config.metrics;
      if (mode === 'off') throw notFound('Metrics are switched off (TILTH_METRICS=off).');
      if (mode === 'token') {
        const principal = principalOf(res);
        requireAuthenticated(principal);
        if (!isAccountAdmin(principal))
          throw forbidden(
            'Metrics need a token of an account administrator or administrator (or TILTH_METRICS=public).',
          );
      }
      res
        .set('Content-Type', registry.contentType)
        .set('Cache-Control', 'no-store')
        .send(await registry.metrics());
    },
  };
}

/** Upper bounds of the request duration histogram's buckets, in seconds. */
const DURATION_BUCKETS = [0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];

/** The requests of one label set: how many, their total time, and how many fell in each bucket. */
interface Series {
  labels: { method: string; route: string; status: string };
  count: number;
  sum: number;
  /** Per bucket of DURATION_BUCKETS (not cumulative), and one more for the slower ones. */
  buckets: Float64Array;
}

/**
 * Request counts and durations kept as plain numbers per label set, and served to prom-client's
 * registry as a counter and a histogram when scraped. prom-client's own Counter and Histogram
 * sort, check and hash the labels on every observation, even through a child: that was about a
 * fifth of a small request's time (GET /api without a token: +23 % without them). The exposition
 * is the same.
 */
class RequestStats {
  private readonly series = new Map<string, Series>();

  record(method: string, route: string, status: number, seconds: number): void {
    const key = `${method} ${status} ${route}`;
    let s = this.series.get(key);
    if (!s)
      this.series.set(
        key,
        (s = {
          labels: { method, route, status: String(status) },
          count: 0,
          sum: 0,
          buckets: new Float64Array(DURATION_BUCKETS.length + 1),
        }),
      );
    s.count++;
    s.sum += seconds;
    let i = 0;
    while (i < DURATION_BUCKETS.length && seconds > DURATION_BUCKETS[i]!) i++;
    s.buckets[i]!++;
  }

  /** `tilth_http_requests_total` and `tilth_http_request_duration_seconds`, read when scraped. */
  metrics(): Metric[] {
    const all = () => [...this.series.values()];
    const metric = (name: string, help: string, type: 'counter' | 'histogram', values: () => object[]) => {
      const get = async () => ({ name, help, type, aggregator: 'sum', values: values() });
      return { name, help, type, aggregator: 'sum', get } as unknown as Metric;
    };
    const histogram = 'tilth_http_request_duration_seconds';
    return [
      metric(
        'tilth_http_requests_total',
        'HTTP requests answered, by method, route template and status.',
        'counter',
        () => all().map((s) => ({ labels: { ...s.labels }, value: s.count })),
      ),
      metric(histogram, 'Time to answer HTTP requests, by method, route template and status.', 'histogram', () =>
        all().flatMap((s) => {
          let below = 0;
          const buckets = DURATION_BUCKETS.map((le, i) => ({
            metricName: `${histogram}_bucket`,
            labels: { le },
            sharedLabels: s.labels,
            value: (below += s.buckets[i]!),
          }));
          return [
            ...buckets,
            { metricName: `${histogram}_bucket`, labels: { le: '+Inf' }, sharedLabels: s.labels, value: s.count },
            { metricName: `${histogram}_sum`, labels: {}, sharedLabels: s.labels, value: s.sum },
            { metricName: `${histogram}_count`, labels: {}, sharedLabels: s.labels, value: s.count },
          ];
        }),
      ),
    ];
  }
}
