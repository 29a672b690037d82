/**
 * The front door, `GET /`: a small page for a person who opens the server's address in a browser:
 * the farm's name, Tilth's version, whether this browser is signed in, and links to the API root,
 * its documentation and the sign-in page. No inline script: the one script it loads asks
 * `/oauth/session` (where the sign-in cookie is sent) who is signed in.
 */
import { createHash } from 'node:crypto';
import express, { type Request, type Response, type Router } from 'express';
import type { AppContext } from '../context.ts';
import { escape } from '../oauth/pages.ts';
import { TILTH_VERSION, TILTH_API_VERSION } from '../version.ts';
import type { Scope } from './scoped.ts';

const STYLE = `body{font-family:system-ui,sans-serif;background:#f4f1ea;color:#222;margin:0;padding:2rem 1rem}
main{max-width:34rem;margin:0 auto;background:#fff;border-radius:8px;padding:1.5rem 2rem;box-shadow:0 1px 4px rgba(0,0,0,.15)}
h1{font-size:1.5rem;margin-top:0}li{margin:.4rem 0}.muted{color:#666;font-size:.9rem}`;
const STYLE_HASH = `'sha256-${createHash('sha256').update(STYLE).digest('base64')}'`;

/** The browser side: fill in who is signed in. */
const SCRIPT = `fetch('/oauth/session', { credentials: 'same-origin' })
  .then((r) => r.json())
  .then((s) => {
    const status = document.getElementById('session');
    if (s.signed_in) {
      status.textContent = 'Signed in as ' + s.name + '.';
      document.getElementById('sign-in').hidden = true;
    } else status.textContent = 'Not signed in.';
  })
  .catch(() => {});
`;

/** An authorization request with the default client that lands back here, signed in. */
function signInUrl(baseUrl: string): string {
  const query = new URLSearchParams({
    response_type: 'code',
    client_id: 'farm',
    redirect_uri: baseUrl,
    scope: 'user_access',
    state: 'front-door',
  });
  return `/oauth/authorize?${query}`;
}

/** Where frontDoorRoutes answers (app.ts scopes it to these). */
export const FRONT_DOOR_PATHS: Scope = { exact: ['/'], prefixes: ['/assets/front-door.js'] };

export function frontDoorRoutes(ctx: AppContext): Router {
  const { farmName, baseUrl } = ctx.config;
  const page = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escape(farmName)} · Tilth</title>
<style>${STYLE}</style>
<script src="/assets/front-door.js" defer></script>
</head>
<body>
<main>
<h1>${escape(farmName)}</h1>
<p>This is the farm records server of ${escape(farmName)}: Tilth ${escape(TILTH_VERSION)}, speaking the farmOS ${escape(TILTH_API_VERSION)} API.</p>
<p id="session" class="muted">Checking whether you are signed in…</p>
<ul>
<li><a id="sign-in" href="${escape(signInUrl(baseUrl))}">Sign in</a></li>
<li><a href="/api">The API root</a> (JSON:API; clients such as farmOS.js, farmOS.py and Field Kit use it)</li>
<li><a href="/api/docs">The API documentation</a> (every resource type, from <a href="/api/openapi.json">the OpenAPI document</a>)</li>
<li><a href="/health">Health</a></li>
</ul>
</main>
</body>
</html>
`;
  const router = express.Router();
  router.get('/', (req: Request, res: Response): void => {
    // Back from signing in: drop the code from the address bar (this page does not use it).
    const query = new URL(req.originalUrl, 'http://front.door').searchParams;
    if (query.get('state') === 'front-door' || query.has('code')) return res.redirect(303, '/');
    res
      .status(200)
      .set(
        'Content-Security-Policy',
        `default-src 'none'; script-src 'self'; connect-src 'self'; style-src ${STYLE_HASH}; img-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'`,
      )
      .set('Cache-Control', 'no-cache')
      .type('html')
      .send(page);
  });
  router.get('/assets/front-door.js', (_req: Request, res: Response): void => {
    res.type('application/javascript').set('Cache-Control', 'no-cache').send(SCRIPT);
  });
  return router;
}
