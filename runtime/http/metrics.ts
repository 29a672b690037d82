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
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { AppContext } from '../context.ts';
import { principalOf } from '../access/principal.ts';
import { forbidden, notFound } from '../errors.ts';
import { isAccountAdmin, requireAuthenticated } from '../access/policy.ts';
import { queuedWrites } from '../storage/database.ts';

const UUID_SEGMENT = /\/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}(?=\/|$)/gi;
const KNOWN_PREFIXES = ['/api', '/oauth', '/subrequests', '/.well-known', '/health', '/metrics'];

/** The label of a request's route: the path with UUIDs as {id}; files, unknown and unmatched paths collapsed. */
export function routeLabel(path: string, status: number): string {
  if (status === 404) return 'unmatched';
  if (path.startsWith('/system/files/')) return '/system/files/*';
  const templated = path.replace(UUID_SEGMENT, '/{id}').replace(/\/+$/, '') || '/';
  if (templated === '/' || KNOWN_PREFIXES.some((p) => templated === p || templated.startsWith(`${p}/`))) return templated.split('/').slice(0, 7).join('/');
  return 'other';
}

/** Distinct route labels kept; more than any farm's route templates, few enough to scrape. */
const MAX_ROUTES = 1000;

export interface Metrics {
  /** Middleware counting and timing every request. */
  observe(req: Request, res: Response, next: NextFunction): void;
  /** The `/metrics` route. */
  handler(req: Request, res: Response): Promise<void>;
}

export function createMetrics(ctx: AppContext): Metrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const labelNames = ['method', 'route', 'status'] as const;
  const requests = new Counter({ name: 'tilth_http_requests_total', help: 'HTTP requests answered, by method, route template and status.', labelNames, registers: [registry] });
  const durations = new Histogram({
    name: 'tilth_http_request_duration_seconds',
    help: 'Time to answer HTTP requests, by method, route template and status.',
    labelNames,
    buckets: [0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [registry],
  });
  const pool = (ctx.db.knex.client as { pool?: { numUsed(): number; numFree(): number; numPendingAcquires(): number } }).pool;
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
  const started = Date.now();
  new Gauge({
    name: 'tilth_uptime_seconds',
    help: 'Seconds since this server started.',
    registers: [registry],
    collect() {
      this.set((Date.now() - started) / 1000);
    },
  });

  // The counter and histogram children of each label set, looked up once: prom-client hashes the
  // labels on every call otherwise. Route labels are templates, but a request answered before any
  // route (an OPTIONS preflight, a refused token) is labelled by its path, which the client
  // makes up: past MAX_ROUTES routes, new ones are counted as "other", so series stay bounded.
  const children = new Map<string, { observe(seconds: number): void }>();
  const routes = new Set<string>();
  const series = (method: string, path: string, status: number) => {
    const route = routes.has(path) || (routes.size < MAX_ROUTES && routes.add(path)) ? path : 'other';
    const key = `${method} ${status} ${route}`;
    let child = children.get(key);
    if (!child) {
      const labels = { method, route, status: String(status) };
      const count = requests.labels(labels);
      const time = durations.labels(labels);
      child = {
        observe(seconds: number) {
          count.inc();
          time.observe(seconds);
        },
      };
      children.set(key, child);
    }
    return child;
  };

  return {
    observe(req, res, next) {
      const started = performance.now();
      res.on('finish', () => {
        // The matched resource route's template when there is one (no pattern to run over the
        // path); otherwise the path, templated. originalUrl: routers mounted at /api rewrite req.url.
        const route = res.locals.route && res.statusCode !== 404 ? res.locals.route : routeLabel(req.originalUrl.split('?')[0]!, res.statusCode);
        series(req.method, route, res.statusCode).observe((performance.now() - started) / 1000);
      });
      next();
    },
    async handler(_req, res) {
      const mode = ctx.config.metrics;
      if (mode === 'off') throw notFound('Metrics are switched off (TILTH_METRICS=off).');
      if (mode === 'token') {
        const principal = principalOf(res);
        requireAuthenticated(principal);
        if (!isAccountAdmin(principal)) throw forbidden('Metrics need a token of an account administrator or administrator (or TILTH_METRICS=public).');
      }
      res.set('Content-Type', registry.contentType).set('Cache-Control', 'no-store').send(await registry.metrics());
    },
  };
}
