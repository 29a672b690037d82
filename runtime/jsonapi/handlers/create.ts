/** POST to a collection: create a resource (a client-supplied UUID is kept). */
import type { RouteHandler } from '../router.ts';
import type { JsonApiServices } from './services.ts';
import { principalOf } from '../../access/principal.ts';
import { readSecrets } from '../input.ts';
import { entityTag } from './etags.ts';

export function createHandler(s: JsonApiServices): RouteHandler {
  return async (req, res, route) => {
    const principal = principalOf(res);
    const rt = route.resourceType;
    const query = s.requests.query(req, rt);
    // Before the body is read (its media type, its passwords hashed): the command checks again.
    s.commands.assertMayCreate(principal, rt);
    s.requests.requireJsonApiBody(req);
    // Passwords are hashed before the transaction opens: argon2 takes its time.
    const hashed = await s.entities.hashSecrets(s.knex, rt, readSecrets(rt, req.body), principal, null);
    const shape = s.shape(res);
    const location = (uuid: string) => `${shape.base}/api/${rt.entityType.entityType}/${rt.bundle.bundle}/${uuid}`;
    const { record, version, shown } = await s.commands.create(principal, rt, {
      hashed,
      read: (trx) => s.input.read(trx, rt, req.body, undefined, shape.name),
      present: (trx, created) =>
        s.documents.document(trx, created, principal, query, { self: { href: location(created.uuid) } }, { shape }),
    });
    res.setHeader('Location', location(record.uuid));
    if (version !== null) res.setHeader('ETag', entityTag(version, req));
    s.documents.send(res, 201, shown);
  };
}
