/** Small shared pieces of JSON:API documents, and their size budget. */
import type { Response } from 'express';
import { ApiError, JSONAPI_VERSION } from '../errors.ts';

export const JSONAPI_MEDIA_TYPE = 'application/vnd.api+json';

export { JSONAPI_VERSION };

/**
 * The JSON text of a document, built resource by resource so that one over `maxBytes` is refused
 * (413) before it is ever held whole: a page of 50 records of megabytes each, say. The text is
 * exactly JSON.stringify's.
 */
export function documentText(body: unknown, maxBytes = Infinity): string {
  if (!Number.isFinite(maxBytes) || body === null || typeof body !== 'object' || Array.isArray(body))
    return JSON.stringify(body);
  const budget = new ByteBudget(maxBytes); // counts the braces
  const parts: string[] = [];
  for (const [key, value] of Object.entries(body)) {
    if (value === undefined) continue;
    const name = JSON.stringify(key);
    budget.add(name, parts.length ? 2 : 1); // the comma before it, the colon after it
    let text: string;
    if (Array.isArray(value)) {
      const items: string[] = [];
      budget.add('', 2); // the brackets
      for (const item of value) {
        const t = JSON.stringify(item) ?? 'null';
        budget.add(t, items.length ? 1 : 0);
        items.push(t);
      }
      text = `[${items.join(',')}]`;
    } else {
      text = JSON.stringify(value);
      budget.add(text, 0);
    }
    parts.push(`${name}:${text}`);
  }
  return `{${parts.join(',')}}`;
}

/**
 * The UTF-8 size of a document's parts, counted only when it could matter: a UTF-16 code unit is
 * at most 3 bytes, so while three times the length of everything so far fits, the exact size is
 * not needed (Buffer.byteLength is a full pass over a 200 KB page otherwise).
 */
class ByteBudget {
  private bound = 2;
  private exact: number | null = null;
  private readonly seen: string[] = [];
  private seenOverhead = 0;

  constructor(private readonly maxBytes: number) {}

  add(text: string, overhead: number): void {
    if (this.exact === null) {
      this.bound += 3 * text.length + overhead;
      if (this.bound <= this.maxBytes) {
        this.seen.push(text);
        this.seenOverhead += overhead;
        return;
      }
      // Over the rough bound: count what came before exactly, once, and everything after.
      this.exact = 2 + this.seenOverhead;
      for (const t of this.seen) this.exact += Buffer.byteLength(t);
      this.seen.length = 0;
    }
    this.exact += Buffer.byteLength(text) + overhead;
    if (this.exact > this.maxBytes) {
      throw new ApiError(
        413,
        `The response would be larger than ${this.maxBytes} bytes (TILTH_RESPONSE_MAX_BYTES): ask for fewer resources (page[limit]), fewer fields (fields[TYPE]=…) or fewer includes.`,
      );
    }
  }
}

export function sendDocument(res: Response, status: number, body: unknown, maxBytes = Infinity): void {
  const text = documentText(body, maxBytes);
  res.status(status).type(JSONAPI_MEDIA_TYPE).send(text);
}

/**
 * A document's JSON text kept as the pieces it was written in, its UTF-8 size counted as it grows,
 * and made into bytes once at the end without a joined copy of the text: at its peak an answer
 * holds its pieces and its bytes, about twice its size (a string joined, then encoded, is more).
 */
export class DocumentPieces {
  private readonly pieces: string[] = [];
  bytes = 0;

  /** `bytes`: the text's UTF-8 size, when the caller has counted it already. */
  push(text: string, bytes = Buffer.byteLength(text)): void {
    this.pieces.push(text);
    this.bytes += bytes;
  }

  /** The bytes of the whole text; the pieces are let go. */
  toBuffer(): Buffer {
    const out = Buffer.allocUnsafe(this.bytes);
    let at = 0;
    for (const piece of this.pieces) at += out.write(piece, at);
    this.pieces.length = 0;
    return out;
  }
}

/**
 * A 200 answer of text or bytes kept ready, with its full Content-Type. Spelled out because
 * Express adds the charset to a string's type but not to a Buffer's.
 */
export function sendBytes(res: Response, contentType: string, body: string | Buffer): void {
  res.status(200).set('Content-Type', contentType).send(body);
}
