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
  if (!Number.isFinite(maxBytes) || body === null || typeof body !== 'object' || Array.isArray(body)) return JSON.stringify(body);
  let size = 2;
  const tooLarge = () =>
    new ApiError(413, `The response would be larger than ${maxBytes} bytes (TILTH_RESPONSE_MAX_BYTES): ask for fewer resources (page[limit]), fewer fields (fields[TYPE]=…) or fewer includes.`);
  const parts: string[] = [];
  for (const [key, value] of Object.entries(body)) {
    if (value === undefined) continue;
    let text: string;
    if (Array.isArray(value)) {
      const items: string[] = [];
      for (const item of value) {
        const t = JSON.stringify(item) ?? 'null';
        size += Buffer.byteLength(t) + 1;
        if (size > maxBytes) throw tooLarge();
        items.push(t);
      }
      text = `[${items.join(',')}]`;
    } else text = JSON.stringify(value);
    size += key.length + Buffer.byteLength(text) + 4;
    if (size > maxBytes) throw tooLarge();
    parts.push(`${JSON.stringify(key)}:${text}`);
  }
  return `{${parts.join(',')}}`;
}

export function sendDocument(res: Response, status: number, body: unknown, maxBytes = Infinity): void {
  const text = documentText(body, maxBytes);
  res.status(status).type(JSONAPI_MEDIA_TYPE).send(text);
}
