/** Small shared pieces of JSON:API documents. */
import type { Response } from 'express';
import { JSONAPI_VERSION } from '../errors.ts';

export const JSONAPI_MEDIA_TYPE = 'application/vnd.api+json';

export { JSONAPI_VERSION };

export function sendDocument(res: Response, status: number, body: unknown): void {
  res.status(status).type(JSONAPI_MEDIA_TYPE).send(JSON.stringify(body));
}
