/**
 * `GET /fieldkit/js/<name>/index.js`: a field module's script, as farmOS's farm_fieldkit serves it
 * (FieldModuleController): public, no token (Field Kit loads it with a <script type="module"
 * crossorigin="anonymous"> tag, so CORS for Field Kit's origin comes from the middleware before
 * it), as JavaScript. Cached by its hash: `ETag`, `Cache-Control: no-cache` (a browser keeps it
 * and asks again each time, answered with a 304 until the module is replaced).
 */
import express, { type Router } from 'express';
import type { AppContext } from '../context.ts';
import { FIELD_MODULE_NAME, fieldModuleScript } from '../storage/field-modules.ts';

export const FIELD_MODULE_SCRIPT_PATHS = ['/fieldkit/js/'];

export function fieldModuleRoutes(ctx: AppContext): Router {
  const router = express.Router();
  router.get('/fieldkit/js/:name/index.js', async (req, res) => {
    const name = String(req.params.name);
    const found = FIELD_MODULE_NAME.test(name) ? await fieldModuleScript(ctx.db.knex, name) : null;
    if (!found) {
      res
        .status(404)
        .type('text/plain')
        .send(`There is no field module "${name.slice(0, 64)}".`);
      return;
    }
    const etag = `"${found.hash}"`;
    res.setHeader('ETag', etag);
    res.setHeader('Cache-Control', 'public, no-cache');
    const sent = req.get('If-None-Match');
    if (sent && sent.split(',').some((t) => t.trim().replace(/^W\//, '') === etag)) {
      res.status(304).end();
      return;
    }
    res.status(200).set('Content-Type', 'application/javascript; charset=utf-8').send(found.script);
  });
  return router;
}
