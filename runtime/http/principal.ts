/** Where the authenticated principal of a request is kept between middleware and handlers. */
import type { Response } from 'express';
import { ANONYMOUS, type Principal } from '../access/principal.ts';

export function principalOf(res: Response): Principal {
  return (res.locals.principal as Principal | undefined) ?? ANONYMOUS;
}

export function setPrincipal(res: Response, principal: Principal): void {
  res.locals.principal = principal;
}
