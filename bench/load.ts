/**
 * The load generator, in a process of its own (pinned to the core the server is not on): one run
 * described by a JSON spec on stdin, its summary as JSON on stdout. Requests that change per
 * request (a random log, a fresh refresh token) are made here from lists the spec names, so
 * nothing but the request itself is timed.
 *
 * Closed loop is autocannon. A fixed rate is not: autocannon's `overallRate` lets each connection
 * send its whole quota for the second back to back and then waits for the next second, so "100
 * req/s" arrives as a burst of 16 concurrent requests every second, and its p99 measures that
 * burst's queue. Here a fixed rate is an open loop: request i is due at start + i / rate and is
 * sent then, whatever the answers so far, on one of `connections` keep-alive sockets; a request
 * that waits for a free socket is late by that wait (no coordinated omission).
 */
import { readFileSync } from 'node:fs';
import { Agent, request as httpRequest } from 'node:http';
import autocannon from 'autocannon';

export interface LoadSpec {
  url: string;
  seconds: number;
  connections: number;
  /** Requests per second, evenly spaced over `connections` sockets (an open loop), or closed loop when absent. */
  rate?: number;
  method?: string;
  headers?: Record<string, string>;
  body?: string;
  /** How each request is made: the same one every time, or varied from `list`. */
  mode?: 'plain' | 'randomPath' | 'patchLog' | 'postLog' | 'refresh' | 'webEdit';
  /**
   * A JSON file: paths (randomPath), log paths (patchLog), refresh tokens (refresh), POST bodies
   * (postLog), or web edit forms as a browser sends them, `{ path, body }` (webEdit).
   */
  list?: string;
  /** patchLog: asset references to set, as JSON:API identifiers. */
  assets?: Array<{ type: string; id: string }>;
  /** webEdit: what to type in the form's asset field, one per request in turn (an animal's "Name [UUID]"). */
  assetLabels?: string[];
  /**
   * The status a request must get to count as answered, when it is not a 2xx: 303 for a web form,
   * which answers a save by sending the browser to the record's page (not followed).
   */
  okStatus?: number;
  /** refresh: the client's form fields besides grant_type and refresh_token. */
  form?: Record<string, string>;
  /**
   * Seconds of the same requests, closed loop, sent first and not counted: a server's first
   * requests of a kind run while V8 is still compiling that code. On a server that had never
   * written, the first 6 s of POSTs ran at 877 req/s while V8's compiler threads took a fifth of
   * the core, and the next 6 s at 1,109 req/s with them idle.
   */
  warmup?: number;
}

export interface LoadResult {
  rps: number;
  p50: number;
  /** Fixed rate only (autocannon's closed loop has no 95th percentile). */
  p95?: number;
  p99: number;
  requests: number;
  errors: number;
  non2xx: number;
  /** Fixed rate only: how late the load generator itself sent its requests (p99, ms); large means its figures are its own. */
  lateP99?: number;
  /** The warm-up's own figures, when there was one: far below the run's, it was too short. */
  warmup?: { rps: number; p50: number; p99: number; requests: number };
}

/** One request to send: what differs from the spec's own method, path and body. */
interface Outgoing {
  method?: string;
  path?: string;
  body?: string;
}

/** The spec's varying requests, in order, and what reads their answers (null: the spec's own request every time). */
interface RequestMaker {
  next(): Outgoing;
  onResponse?(status: number, body: string): void;
}

function requestMaker(spec: LoadSpec): RequestMaker | null {
  const list = spec.list ? (JSON.parse(readFileSync(spec.list, 'utf8')) as string[]) : [];
  let n = 0;
  // A cheap seeded pick: the same sequence of "random" logs every run.
  let seed = 12345;
  const random = () => {
    seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
    return seed / 4294967296;
  };
  const pick = () => list[Math.floor(random() * list.length)]!;
  switch (spec.mode ?? 'plain') {
    case 'plain':
      return null;
    case 'randomPath':
      return { next: () => ({ path: pick() }) };
    case 'patchLog':
      return {
        next: () => {
          const path = pick();
          const id = path.slice(path.lastIndexOf('/') + 1);
          const asset = spec.assets![n++ % spec.assets!.length]!;
          const body = {
            data: {
              type: 'log--activity',
              id,
              attributes: { name: `Renamed ${n}` },
              relationships: { asset: { data: [asset] } },
            },
          };
          return { method: 'PATCH', path, body: JSON.stringify(body) };
        },
      };
    case 'postLog':
      return { next: () => ({ method: 'POST', body: list[n++ % list.length] }) };
    case 'webEdit': {
      // A log's edit form as the browser sent it, with the name and the asset changed as P5's
      // PATCH changes them.
      const forms = list as unknown as Array<{ path: string; body: string }>;
      return {
        next: () => {
          const form = forms[Math.floor(random() * forms.length)]!;
          const body = new URLSearchParams(form.body);
          body.set('name', `Renamed by the form ${++n}`);
          body.set('asset', spec.assetLabels![n % spec.assetLabels!.length]!);
          return { method: 'POST', path: form.path, body: body.toString() };
        },
      };
    }
    case 'refresh': {
      // Each refresh token is good once (rotation; a replay revokes the chain), so each response's
      // new token goes back in the pool for the next request. (autocannon's per-connection
      // context is reset after every pass over the request list, so it cannot carry the chain.)
      const pool = [...list];
      return {
        next: () => ({
          method: 'POST',
          body: new URLSearchParams({
            grant_type: 'refresh_token',
            refresh_token: pool.shift() ?? '',
            ...spec.form,
          }).toString(),
        }),
        onResponse: (status, body) => {
          if (status === 200) pool.push((JSON.parse(body) as { refresh_token: string }).refresh_token);
        },
      };
    }
  }
}

async function closedLoop(spec: LoadSpec, maker: RequestMaker | null): Promise<LoadResult> {
  type Req = { method?: string; path?: string; body?: string | Buffer; headers?: Record<string, string> };
  const requests = maker
    ? [
        {
          setupRequest: (req: Req) => ({ ...req, ...maker.next() }),
          ...(maker.onResponse ? { onResponse: maker.onResponse } : {}),
        } as unknown as autocannon.Request,
      ]
    : undefined;
  const r = await autocannon({
    url: spec.url,
    connections: spec.connections,
    duration: spec.seconds,
    method: (spec.method ?? 'GET') as autocannon.Options['method'],
    headers: spec.headers ?? {},
    ...(spec.body !== undefined ? { body: spec.body } : {}),
    ...(requests ? { requests } : {}),
  });
  // autocannon counts every status outside 2xx as non-2xx; the expected one is taken back out.
  const expected = spec.okStatus ? (r.statusCodeStats?.[`${spec.okStatus}`]?.count ?? 0) : 0;
  return {
    rps: Math.round(r.requests.average),
    p50: r.latency.p50,
    p99: r.latency.p99,
    requests: r.requests.total,
    errors: r.errors + r.timeouts,
    non2xx: r.non2xx - expected,
  };
}

/** A request that has not answered in this long counts as an error (and frees its socket). */
const TIMEOUT_MS = 10_000;

/**
 * Open loop at `spec.rate` requests a second, evenly spaced. Latency counts from when a request
 * was handed to the socket pool: a request waiting there for a socket (the server is behind) is
 * counted, a late timer of this process is not (its lateness is reported as lateP99).
 */
function fixedRate(spec: LoadSpec, maker: RequestMaker | null): Promise<LoadResult> {
  const rate = spec.rate!;
  const url = new URL(spec.url);
  const agent = new Agent({ keepAlive: true, maxSockets: spec.connections });
  const total = Math.max(1, Math.round(rate * spec.seconds));
  const interval = 1000 / rate;
  const latencies: number[] = [];
  const lateness: number[] = [];
  let errors = 0;
  let non2xx = 0;
  let sent = 0;
  let done = 0;
  const start = performance.now() + 20;
  let last = start;
  return new Promise((resolve) => {
    const finish = () => {
      agent.destroy();
      latencies.sort((a, b) => a - b);
      const at = (q: number) =>
        latencies.length ? Math.round(latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))]!) : 0;
      lateness.sort((a, b) => a - b);
      const lateP99 = Math.round(10 * (lateness[Math.floor(0.99 * lateness.length)] ?? 0)) / 10;
      resolve({
        rps: Math.round(latencies.length / Math.max(0.001, (last - start) / 1000)),
        p50: at(0.5),
        p95: at(0.95),
        p99: at(0.99),
        requests: latencies.length,
        errors,
        non2xx,
        lateP99,
      });
    };
    const settled = () => {
      if (++done === total) finish();
    };
    const send = (due: number) => {
      const sentAt = performance.now();
      lateness.push(sentAt - due);
      const out = maker?.next() ?? {};
      const body = out.body ?? spec.body;
      const headers = {
        ...spec.headers,
        ...(body !== undefined ? { 'Content-Length': String(Buffer.byteLength(body)) } : {}),
      };
      const req = httpRequest(
        {
          agent,
          host: url.hostname,
          port: url.port,
          method: out.method ?? spec.method ?? 'GET',
          path: out.path ?? `${url.pathname}${url.search}`,
          headers,
        },
        (res) => {
          // The body is read only when the workload needs it (refresh tokens): a 200 KB page a
          // hundred times a second would otherwise keep this process busy enough to send late.
          const chunks: Buffer[] = [];
          if (maker?.onResponse) res.on('data', (c: Buffer) => chunks.push(c));
          else res.resume();
          res.on('end', () => {
            const status = res.statusCode ?? 0;
            last = performance.now();
            latencies.push(last - sentAt);
            if ((status < 200 || status > 299) && status !== spec.okStatus) non2xx++;
            maker?.onResponse?.(status, Buffer.concat(chunks).toString());
            settled();
          });
        },
      );
      req.setTimeout(TIMEOUT_MS, () => req.destroy(new Error('timeout')));
      req.on('error', () => {
        errors++;
        settled();
      });
      req.end(body);
    };
    const tick = () => {
      const now = performance.now();
      while (sent < total && start + sent * interval <= now) send(start + sent++ * interval);
      if (sent < total) setTimeout(tick, Math.max(0, start + sent * interval - performance.now()));
    };
    setTimeout(tick, 20);
  });
}

async function main(): Promise<void> {
  const spec = JSON.parse(readFileSync(0, 'utf8')) as LoadSpec;
  const maker = requestMaker(spec);
  const warm = spec.warmup ? await closedLoop({ ...spec, seconds: spec.warmup }, maker) : undefined;
  const result: LoadResult = spec.rate ? await fixedRate(spec, maker) : await closedLoop(spec, maker);
  if (warm) result.warmup = { rps: warm.rps, p50: warm.p50, p99: warm.p99, requests: warm.requests };
  process.stdout.write(JSON.stringify(result));
}

await main();
