/** What the parts of the authorization server share: the application context and the rate limiters. */
import type { AppContext } from '../context.ts';
import type { Limiters } from './rate-limit.ts';

export interface OAuthDeps {
  ctx: AppContext;
  limiters: Limiters;
}
