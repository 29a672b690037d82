/**
 * The load generator, in a process of its own (pinned to the core the server is not on): one
 * autocannon run described by a JSON spec on stdin, its summary as JSON on stdout. Requests that
 * change per request (a random log, a fresh refresh token) are made here by autocannon's
 * setupRequest from lists the spec names, so nothing but the request itself is timed.
 */
import { readFileSync } from 'node:fs';
import autocannon from 'autocannon';

export interface LoadSpec {
  url: string;
  seconds: number;
  connections: number;
  /** Requests per second over all connections (a fixed-rate run), or closed loop when absent. */
  rate?: number;
  method?: string;
  headers?: Record<string, string>;
  body?: string;
  /** How each request is made: the same one every time, or varied from `list`. */
  mode?: 'plain' | 'randomPath' | 'patchLog' | 'postLog' | 'refresh';
  /** A JSON file: paths (randomPath), log paths (patchLog), refresh tokens (refresh), or POST bodies (postLog). */
  list?: string;
  /** patchLog: asset references to set, as JSON:API identifiers. */
  assets?: Array<{ type: string; id: string }>;
  /** refresh: the client's form fields besides grant_type and refresh_token. */
  form?: Record<string, string>;
}

export interface LoadResult {
  rps: number;
  p50: number;
  p99: number;
  requests: number;
  errors: number;
  non2xx: number;
}

async function main(): Promise<void> {
  const spec = JSON.parse(readFileSync(0, 'utf8')) as LoadSpec;
  const list = spec.list ? (JSON.parse(readFileSync(spec.list, 'utf8')) as string[]) : [];
  let n = 0;
  // A cheap seeded pick: the same sequence of "random" logs every run.
  let seed = 12345;
  const next = () => {
    seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
    return seed / 4294967296;
  };
  const pick = () => list[Math.floor(next() * list.length)]!;
  type Req = { method?: string; path?: string; body?: string | Buffer; headers?: Record<string, string> };
  let requests: autocannon.Request[] | undefined;
  switch (spec.mode ?? 'plain') {
    case 'randomPath':
      requests = [{ setupRequest: (req: Req) => ({ ...req, path: pick() }) } as autocannon.Request];
      break;
    case 'patchLog':
      requests = [{
        setupRequest: (req: Req) => {
          const path = pick();
          const id = path.slice(path.lastIndexOf('/') + 1);
          const asset = spec.assets![n++ % spec.assets!.length]!;
          const body = { data: { type: 'log--activity', id, attributes: { name: `Renamed ${n}` }, relationships: { asset: { data: [asset] } } } };
          return { ...req, method: 'PATCH', path, body: JSON.stringify(body) };
        },
      } as autocannon.Request];
      break;
    case 'postLog':
      requests = [{ setupRequest: (req: Req) => ({ ...req, method: 'POST', body: list[n++ % list.length] }) } as autocannon.Request];
      break;
    case 'refresh': {
      // Each refresh token is good once (rotation; a replay revokes the chain), so each response's
      // new token goes back in the pool for the next request. (autocannon's per-connection
      // context is reset after every pass over the request list, so it cannot carry the chain.)
      const pool = [...list];
      requests = [{
        setupRequest: (req: Req) => ({ ...req, method: 'POST', body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: pool.shift() ?? '', ...spec.form }).toString() }),
        onResponse: (status: number, body: string) => {
          if (status === 200) pool.push((JSON.parse(body) as { refresh_token: string }).refresh_token);
        },
      } as unknown as autocannon.Request];
      break;
    }
  }
  const opts: autocannon.Options = {
    url: spec.url,
    connections: spec.connections,
    duration: spec.seconds,
    method: (spec.method ?? 'GET') as autocannon.Options['method'],
    headers: spec.headers ?? {},
    ...(spec.body !== undefined ? { body: spec.body } : {}),
    ...(spec.rate ? { overallRate: spec.rate } : {}),
    ...(requests ? { requests } : {}),
  };
  const r = await autocannon(opts);
  const result: LoadResult = {
    rps: Math.round(r.requests.average),
    p50: r.latency.p50,
    p99: r.latency.p99,
    requests: r.requests.total,
    errors: r.errors + r.timeouts,
    non2xx: r.non2xx,
  };
  process.stdout.write(JSON.stringify(result));
}

await main();
