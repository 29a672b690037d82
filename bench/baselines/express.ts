/**
 * The *minimal Express* baseline (issue 28, P8): an Express 5 app that answers the fixed
 * documents with the bytes and headers Tilth answered (headers.ts), through the same middleware
 * functions Tilth's app puts before them — Tilth's own request id (http/logging.ts, with a silent
 * logger), helmet's headers (http/security-headers.ts), CORS (oauth/cors.ts) and the JSON body
 * parser with Tilth's options — on the same HTTP server (http/node-server.ts), and one route per
 * document sending the bytes with `res.send`, as Tilth's schema handlers do. What Tilth does beyond
 * it (metrics, the other routers it passes, the schema store) is what P8's ratio prices.
 *
 * Env: PORT, BODIES (as static.ts), DB (the SQLite file, for CORS's origin lookups; none are made
 * without an Origin header).
 */
import { readFileSync } from 'node:fs';
import express from 'express';
import knex from 'knex';
import { createAppServer } from '../../runtime/http/node-server.ts';
import { createLogger, requestLogger } from '../../runtime/http/logging.ts';
import { securityHeaders } from '../../runtime/http/security-headers.ts';
import { corsMiddleware } from '../../runtime/oauth/cors.ts';
import type { HeaderList } from './headers.ts';

const app = express();
app.disable('x-powered-by');
app.set('etag', false);
app.set('query parser', () => ({}));
app.get('/ready', (_req, res) => {
  res.send('{}');
});
app.use(requestLogger(createLogger('silent')));
app.use(securityHeaders());
app.use(
  corsMiddleware(
    knex({
      client: 'better-sqlite3',
      connection: { filename: process.env.DB!, options: { readonly: true } },
      useNullAsDefault: true,
    }),
  ),
);
app.use(
  express.json({
    type: ['application/vnd.api+json', 'application/json', 'application/*+json'],
    limit: 4 * 1024 * 1024,
    strict: false,
  }),
);

// Helmet's headers come from its middleware; the route sets the rest of what Tilth sent.
const helmets = new Set<string>();
securityHeaders()(
  {} as express.Request,
  { setHeader: (name: string) => helmets.add(name.toLowerCase()) } as unknown as express.Response,
  () => {},
);
for (const [path, kept] of Object.entries(
  JSON.parse(readFileSync(process.env.BODIES!, 'utf8')) as Record<string, { file: string; headers: HeaderList }>,
)) {
  if (path.includes('?')) continue;
  const body = readFileSync(kept.file);
  const own = kept.headers.filter(([name]) => !helmets.has(name));
  app.get(path, (_req, res) => {
    for (const [name, value] of own) res.setHeader(name, value);
    res.status(200).send(body);
  });
}

createAppServer(app).listen(Number(process.env.PORT), '127.0.0.1');
