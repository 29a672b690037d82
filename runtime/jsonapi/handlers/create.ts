/** POST to a collection: create a resource (a client-supplied UUID is kept). */
import type { RouteHandler } from '../router.ts';
import type { JsonApiServices } from './services.ts';
import { principalOf } from '../../access/principal.ts';
import { assertMayOnType } from '../../access/policy.ts';
import { forbidden } from '../../errors.ts';
import { readSecrets } from '../input.ts';
import { versionOf } from '../../storage/change-feed.ts';
import { entityTag } from './etags.ts';

export function createHandler(s: JsonApiServices): RouteHandler {
  return async (req, res, route) => {
    const principal = principalOf(res);
    const rt = route.resourceType;
    const query = s.requests.query(req, rt);
    assertMayOnType(principal, rt.entityType, 'create', `${rt.type} resources`);
    if (rt.entityType.access === 'file') {
      // As in Drupal, a file comes into being only with its bytes.
      throw forbidden('Files cannot be created with a JSON document: POST the bytes (Content-Type: application/octet-stream) to /api/<entity_type>/<bundle>/<file field>, then reference the file.', { pointer: '/data' });
    }
    s.requests.requireJsonApiBody(req);
    // Passwords are hashed before the transaction opens: argon2 takes its time.
    const hashed = await s.entities.hashSecrets(s.knex, rt, readSecrets(rt, req.body), principal, null);
    const { doc, location, version } = await s.knex.transaction(async (trx) => {
      const input = await s.input.read(trx, rt, req.body);
      const { id, uuid } = await s.entities.create(trx, rt, input, principal, hashed);
      const [record] = await s.loader.load(trx, rt.entityType.entityType, [id], null, undefined, [rt.bundle.bundle]);
      const location = `${s.ctx.config.baseUrl}/api/${rt.entityType.entityType}/${rt.bundle.bundle}/${uuid}`;
      const version = await versionOf(trx, rt.entityType.entityType, id);
      return { doc: await s.documents.document(trx, record!, principal, query, { self: { href: location } }), location, version };
    });
    res.setHeader('Location', location);
    if (version !== null) res.setHeader('ETag', entityTag(version, req));
    s.documents.send(res, 201, doc);
  };
}
