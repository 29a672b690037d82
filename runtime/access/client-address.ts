/** Who is asking, as the rate limits and the password allowances see it. */
import type { Request } from 'express';

/**
 * The client's address: the socket's peer, or with `trustProxy` = N > 0 the N-th address from the
 * right of X-Forwarded-For (each trusted proxy appends the address it received from). Entries a
 * client put there itself lie further left and are never used.
 */
export function clientAddress(req: Request, trustProxy: number): string {
  const peer = req.socket.remoteAddress ?? 'unknown';
  if (trustProxy <= 0) return peer;
  const header = req.headers['x-forwarded-for'];
  const hops = (Array.isArray(header) ? header.join(',') : (header ?? ''))
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  return hops[hops.length - trustProxy] ?? hops[0] ?? peer;
}
