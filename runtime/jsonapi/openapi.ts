/**
 * `GET /api/openapi.json`: the OpenAPI 3.1 document the generator emitted (generated/openapi.json),
 * with this server's base URL and without the bundles of modules that are switched off; and
 * `GET /api/docs`: Swagger UI (swagger-ui-dist from npm, served from here, nothing from a CDN)
 * showing it. Both are public, as `/api/schema` is. The document is prepared once, at start.
 */
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import express, { type NextFunction, type Request, type Response, type Router } from 'express';
import { notFound } from '../errors.ts';
import type { AppContext } from '../context.ts';

type Json = Record<string, unknown>;

/** The served document: placeholders filled in, switched-off modules left out. */
export function servedOpenApi(ctx: AppContext): string | null {
  const file = join(ctx.generated.dir, 'openapi.json');
  if (!existsSync(file)) return null;
  type Doc = Json & { paths: Record<string, Json>; components: { schemas: Record<string, Json> } };
  const read = (path: string) =>
    JSON.parse(readFileSync(path, 'utf8').replaceAll('{base_url}', ctx.config.baseUrl)) as Doc;
  const doc = read(file);
  // The site's bundles have a document of their own beside them (generated apart from Tilth's).
  const siteFile = ctx.generated.siteGeneratedDir ? join(ctx.generated.siteGeneratedDir, 'openapi.json') : null;
  if (siteFile && existsSync(siteFile)) {
    const site = read(siteFile);
    doc.paths = { ...doc.paths, ...site.paths };
    doc.components.schemas = { ...doc.components.schemas, ...site.components.schemas };
  }
  const enabled = (node: Json) =>
    typeof node['x-tilth-module'] !== 'string' || ctx.registry.modules.includes(node['x-tilth-module'] as string);
  doc.paths = Object.fromEntries(Object.entries(doc.paths).filter(([, item]) => enabled(item)));
  doc.components.schemas = Object.fromEntries(
    Object.entries(doc.components.schemas).filter(([, schema]) => enabled(schema)),
  );
  delete doc.$comment;
  return JSON.stringify(doc);
}

const DOCS_PAGE = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>API documentation · Tilth</title>
<link rel="stylesheet" href="/api/docs/assets/swagger-ui.css">
</head>
<body>
<div id="docs"></div>
<script src="/api/docs/assets/swagger-ui-bundle.js"></script>
<script src="/api/docs/init.js"></script>
</body>
</html>
`;

const DOCS_INIT = `window.ui = SwaggerUIBundle({ url: '/api/openapi.json', dom_id: '#docs', deepLinking: true, defaultModelsExpandDepth: 0, docExpansion: 'none' });\n`;

/** Where openApiRoutes answers: every path of its routes starts with one of these (app.ts scopes it to them). */
/**
 * The docs page runs only this server's scripts. Swagger UI sets style attributes and draws some
 * icons as data: images, so those are allowed; nothing may frame the page.
 */
const DOCS_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

export const OPENAPI_PATHS = ['/api/openapi.json', '/api/docs', '/favicon.ico'];

export function openApiRoutes(ctx: AppContext): Router {
  const router = express.Router();
  const document = servedOpenApi(ctx);
  const assets = dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));
  router.get('/api/openapi.json', (_req: Request, res: Response, next: NextFunction) => {
    if (!document) return next(notFound('This server was generated without an OpenAPI document.'));
    res.type('application/vnd.oai.openapi+json').set('Cache-Control', 'no-cache').send(document);
  });
  router.get(['/api/docs', '/api/docs/'], (_req: Request, res: Response) => {
    res.type('html').set('Cache-Control', 'no-cache').set('Content-Security-Policy', DOCS_CSP).send(DOCS_PAGE);
  });
  router.get('/api/docs/init.js', (_req: Request, res: Response) => {
    res.type('application/javascript').send(DOCS_INIT);
  });
  router.use('/api/docs/assets', express.static(assets, { index: false, maxAge: '1d' }));
  // Browsers ask every site for one; Swagger UI's leaf will do.
  router.get('/favicon.ico', (_req: Request, res: Response) =>
    res.type('image/png').sendFile(join(assets, 'favicon-32x32.png')),
  );
  return router;
}
