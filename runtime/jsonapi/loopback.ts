/**
 * Sub-requests go to this same server over loopback HTTP (subrequests.ts), and Node's fetch sends
 * a Host header of its own (the loopback address), never the caller's. A call that came in through
 * a host name of TILTH_API4_HOSTS would then have its sub-requests answered in the 2.x shape. So a
 * sub-request names the host its call came in on in a header of its own, with this process's
 * loopback key beside it: a random value made at start that never leaves the process, so a client
 * cannot claim a host by sending the header itself (without the key it is ignored).
 */
import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';

const KEY = randomBytes(24).toString('base64url');
const KEY_HEADER = 'x-tilth-loopback';
const HOST_HEADER = 'x-tilth-call-host';

function sameKey(key: string): boolean {
  const given = Buffer.from(key);
  const own = Buffer.from(KEY);
  return given.length === own.length && timingSafeEqual(given, own);
}

/** The headers a sub-request carries to say which host its call named. */
export function loopbackHostHeaders(host: string | undefined): Array<[string, string]> {
  return host
    ? [
        [KEY_HEADER, KEY],
        [HOST_HEADER, host],
      ]
    : [];
}

/** The host a sub-request's call named, when the request is this process's own sub-request; else null. */
export function loopbackCallHost(headers: IncomingHttpHeaders): string | null {
  const key = headers[KEY_HEADER];
  const host = headers[HOST_HEADER];
  if (typeof key !== 'string' || typeof host !== 'string' || !sameKey(key)) return null;
  return host;
}

/** Whether a client-supplied header name is one of these (a blueprint may not send them). */
export function isLoopbackHeader(name: string): boolean {
  const lower = name.toLowerCase();
  return lower === KEY_HEADER || lower === HOST_HEADER;
}
