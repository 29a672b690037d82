/**
 * Which API shape a request is answered in (README, "farmOS versions"), chosen once per request
 * before any route: the farmOS 4.x shape for a request that came in on TILTH_API4_PORT or named a
 * host of TILTH_API4_HOSTS, the farmOS 2.x shape otherwise. No client sends a version, and
 * farmOS.py 2.0 cannot use a base URL with a path (it joins `links.next`'s path onto its own base
 * path again), so a 4.x base is a port or a host name, never a path prefix.
 */
import type { IncomingMessage } from 'node:http';
import type { NextFunction, Request, Response } from 'express';
import type { Config } from '../config.ts';
import { apiShape, defaultShape, setShape, type ApiShape } from '../jsonapi/shape.ts';
import { loopbackCallHost } from '../jsonapi/loopback.ts';

/** Requests the TILTH_API4_PORT server received (runtime/server.ts marks them before Express sees them). */
const viaApi4Port = new WeakSet<IncomingMessage>();

export function markApi4Port(req: IncomingMessage): void {
  viaApi4Port.add(req);
}

/**
 * The host a request named: its Host header, or for this process's own sub-request the host its
 * call named (jsonapi/loopback.ts; fetch sends the loopback address as Host).
 */
function namedHost(req: Request): string | undefined {
  return loopbackCallHost(req.headers) ?? req.headers.host;
}

export function shapeChoice(config: Pick<Config, 'baseUrl' | 'api4BaseUrl' | 'api4Hosts'>) {
  const main = defaultShape(config.baseUrl);
  const onPort = config.api4BaseUrl ? apiShape('farmos4', config.api4BaseUrl) : null;
  const hosts = new Set(config.api4Hosts);
  const base = new URL(config.baseUrl);
  const basePath = base.pathname.replace(/\/+$/, '');
  // One shape per listed host, made once: the links keep the port the Host header named.
  const byHost = new Map<string, ApiShape>();
  return (req: Request, res: Response, next: NextFunction): void => {
    let shape = main;
    if (onPort && viaApi4Port.has(req)) shape = onPort;
    else if (hosts.size) {
      const host = namedHost(req)?.toLowerCase();
      // The name without its port, as TILTH_API4_HOSTS lists it.
      if (host && hosts.has(host.replace(/:\d+$/, ''))) {
        shape = byHost.get(host) ?? { ...apiShape('farmos4', `${base.protocol}//${host}${basePath}`), host };
        if (byHost.size < hosts.size * 4) byHost.set(host, shape);
      }
    }
    setShape(res, shape);
    next();
  };
}
