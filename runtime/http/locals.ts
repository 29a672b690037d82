/**
 * What a request's `res.locals` holds, typed for every handler (Express leaves it `any`): set by
 * the middleware named beside each, read downstream. Type declarations only; nothing runs here.
 */
import type { RequestLog } from './logging.ts';
import type { Principal } from '../access/principal.ts';
import type { Client } from '../oauth/clients.ts';

declare global {
  // eslint-disable-next-line @typescript-eslint/no-namespace
  namespace Express {
    interface Locals {
      /** http/logging.ts: the request's id, echoed as X-Request-Id. */
      requestId?: string;
      /** http/logging.ts: a logger that stamps the request id on every line. */
      log?: RequestLog;
      /** access/principal.ts setPrincipal (bearer authentication): who is asking, with which scopes. */
      principal?: Principal;
      /** oauth/client-auth.ts: the OAuth client that authenticated at /oauth/token or /oauth/revoke. */
      client?: Client;
      /** jsonapi/router.ts: the template of the resource route that matched (`/api/log/activity/{id}`), the metrics' label. */
      route?: string;
      /** oauth/authorize.ts: the form-action sources of the consent page's Content-Security-Policy. */
      formActionSources?: string;
      /** web/index.ts: the web pages' Content-Security-Policy when it differs from layout.ts PAGE_CSP (the map's tile server). */
      pageCsp?: string;
    }
  }
}

export {};
