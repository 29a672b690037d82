/** TEMPORARY: `POST /subrequests` is replaced by the real implementation. */
import type { Request, Response } from 'express';
import type express from 'express';
import type { AppContext } from '../context.ts';
import { ApiError } from '../errors.ts';

export function createSubrequestHandler(_ctx: AppContext, _app: express.Express) {
  return (_req: Request, _res: Response) => {
    throw new ApiError(501, 'Subrequests are not implemented yet.');
  };
}
