/**
 * Several Tilth processes over one database and one files folder, behind a small round-robin
 * proxy, as a load balancer would put them (issue 26). Every process is told the proxy's address
 * as its TILTH_BASE_URL: the settings of processes sharing a database must agree.
 */
import { createServer, request as httpRequest, type Server } from 'node:http';
import { startChildServer, type ChildServer } from './child-server.ts';
import { freePort } from './processes.ts';
import { ADMIN, createTestDatabase } from './server.ts';
import { passwordToken } from './http.ts';

/** What the proxy answers when a process reset the connection (killed mid-request): told apart from Tilth's own 5xx. */
export const PROXY_RESET = 'x-test-proxy-reset';

export interface Proxy {
  url: string;
  close(): Promise<void>;
}

/**
 * A round-robin HTTP proxy over `backends()` (asked per request, so a restarted process is used
 * again). A process that refuses the connection (down) is skipped, as a load balancer's passive
 * health check does; one that resets a request it had begun is answered 502 with PROXY_RESET.
 */
export async function startProxy(backends: () => string[]): Promise<Proxy> {
  let next = 0;
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const list = backends();
      const attempt = (tries: number) => {
        const target = new URL(list[next++ % list.length]!);
        const out = httpRequest(
          { host: target.hostname, port: target.port, method: req.method, path: req.url, headers: req.headers },
          (answer) => {
            res.writeHead(answer.statusCode ?? 502, answer.headers);
            answer.pipe(res);
            answer.on('error', () => res.destroy());
          },
        );
        out.on('error', (error: NodeJS.ErrnoException) => {
          if (error.code === 'ECONNREFUSED' && tries + 1 < list.length * 2) return attempt(tries + 1);
          if (!res.headersSent) res.writeHead(502, { [PROXY_RESET]: error.code ?? 'error' }).end();
          else res.destroy();
        });
        out.end(body);
      };
      attempt(0);
    });
  });
  // Longer than the clients keep idle connections, so that none reuses one the proxy just closed (ECONNRESET).
  server.keepAliveTimeout = 65_000;
  const port = await freePort();
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export interface Cluster {
  /** The proxy's address: the one every process believes it serves at. */
  url: string;
  servers: ChildServer[];
  database: Awaited<ReturnType<typeof createTestDatabase>>;
  /** SIGKILL process `i` and start it again on the same database and files. */
  restart(i: number): Promise<void>;
  /** Start one more process with these settings (it may refuse to start). */
  start(env?: Record<string, string>): Promise<ChildServer>;
  close(): Promise<void>;
}

export interface ClusterOptions {
  processes?: number;
  env?: Record<string, string>;
  /** Start the processes at once (the cold-start race) instead of one after the other. */
  together?: boolean;
  /** Work on the fresh database before any process starts (e.g. make it a farm an upgrade left pending work on). */
  prepare?: (database: Awaited<ReturnType<typeof createTestDatabase>>) => Promise<void>;
}

/** `processes` Tilth processes (3 by default) over one fresh database, behind a round-robin proxy. */
export async function startCluster(options: ClusterOptions = {}): Promise<Cluster> {
  const database = await createTestDatabase();
  const servers: ChildServer[] = [];
  const proxy = await startProxy(() => servers.map((s) => s.url));
  const env = { TILTH_BASE_URL: proxy.url, ...options.env };
  const start = (extra: Record<string, string> = {}) => startChildServer(database.env, { ...env, ...extra });
  const close = async () => {
    await Promise.all(servers.map((s) => s.stop()));
    await proxy.close();
    await database.drop();
  };
  try {
    await options.prepare?.(database);
    const n = options.processes ?? 3;
    if (options.together) {
      // Every start is awaited, so that the ones that came up are stopped when another failed
      // (left running, they would keep the test process alive: a hang, not a failure).
      const started = await Promise.allSettled(Array.from({ length: n }, () => start()));
      for (const s of started) if (s.status === 'fulfilled') servers.push(s.value);
      const failed = started.find((s) => s.status === 'rejected');
      if (failed) throw failed.reason;
    } else for (let i = 0; i < n; i++) servers.push(await start());
  } catch (error) {
    await close();
    throw error;
  }
  return {
    url: proxy.url,
    servers,
    database,
    async restart(i) {
      await servers[i]!.kill();
      servers[i] = await start();
    },
    start,
    close,
  };
}

/** An administrator's token, through the proxy. */
export function adminToken(cluster: Cluster): Promise<string> {
  return passwordToken(cluster.url, ADMIN.name, ADMIN.password);
}
