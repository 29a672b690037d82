/**
 * The headers a baseline answers with: Tilth's own, recorded from Tilth's answer to the same
 * request, so that a baseline sends the same response and not only the same body. Ten of Tilth's
 * headers are helmet's, and they are part of what a farm's server must send: on this machine a bare
 * node:http server sending them (and a request id) answered 0.69–0.78× as many requests a second
 * as the same server sending only Content-Type and Content-Length.
 *
 * What a server makes afresh for each response is not copied: the date and the connection's own
 * headers (Node adds them), the length (a baseline sets its own), and the request id (a baseline
 * makes a new one per response, as Tilth does).
 */
import { randomUUID } from 'node:crypto';
import type { ServerResponse } from 'node:http';

/** Headers made per response rather than recorded. */
const PER_RESPONSE = new Set([
  'date',
  'connection',
  'keep-alive',
  'content-length',
  'transfer-encoding',
  'x-request-id',
]);

/** A response's headers as name, value pairs (names lower case, as fetch gives them). */
export type HeaderList = Array<[string, string]>;

/** The headers of one of Tilth's answers that a baseline repeats. */
export function recordHeaders(headers: Headers): HeaderList {
  return [...headers].filter(([name]) => !PER_RESPONSE.has(name));
}

/** A function answering with `headers` (flattened once), a fresh request id and the body's length. */
export function answerWith(headers: HeaderList): (res: ServerResponse, status: number, body: Buffer | string) => void {
  const flat = headers.flat();
  return (res, status, body) => {
    res.writeHead(status, [
      ...flat,
      'x-request-id',
      randomUUID(),
      'content-length',
      String(typeof body === 'string' ? Buffer.byteLength(body) : body.length),
    ]);
    res.end(body);
  };
}

/** The differences between two answers' headers, apart from those made per response; empty when they match. */
export function headerDifferences(tilth: Headers, baseline: Headers): string[] {
  const a = new Map(recordHeaders(tilth));
  const b = new Map(recordHeaders(baseline));
  const out: string[] = [];
  for (const [name, value] of a)
    if (b.get(name) !== value)
      out.push(`${name}: Tilth ${JSON.stringify(value)}, baseline ${JSON.stringify(b.get(name) ?? null)}`);
  for (const [name, value] of b) if (!a.has(name)) out.push(`${name}: Tilth none, baseline ${JSON.stringify(value)}`);
  for (const name of ['x-request-id', 'content-length'])
    if (tilth.has(name) !== baseline.has(name))
      out.push(`${name}: ${tilth.has(name) ? 'only Tilth' : 'only the baseline'} sends it`);
  return out;
}
