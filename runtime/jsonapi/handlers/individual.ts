/** GET, PATCH and DELETE of one resource: `/api/<entity>/<bundle>/<uuid>`. */
import { clientAddress } from '../../access/client-address.ts';
import type { RouteHandler } from '../router.ts';
import type { JsonApiServices } from './services.ts';
import { principalOf } from '../../access/principal.ts';
import { badRequest } from '../../errors.ts';
import { readDataMember, readSecrets, UUID } from '../input.ts';
import { quoted } from '../coerce.ts';
import { entityTag, ifMatchOf, sentNotModified, setEntityTag } from './etags.ts';

export function individualHandlers(s: JsonApiServices): {
  get: RouteHandler;
  patch: RouteHandler;
  delete: RouteHandler;
} {
  return {
    async get(req, res, route) {
      const { principal, query, record } = await s.records.viewable(req, res, route.resourceType, route.id, {
        fieldsets: true,
        withVersion: true,
      });
      // A past revision has no version of its own to tag. The current one's version came with
      // its row (RecordStore.loadByUuid): one statement fewer than setEntityTag's own lookup.
      let version: number | null = null;
      if (!query.resourceVersion) {
        if (record.version === undefined)
          version = await setEntityTag(s.knex, res, req, record.rt.entityType.entityType, record.id);
        else if ((version = record.version) !== null) res.setHeader('ETag', entityTag(version, req));
      }
      if (sentNotModified(req, res, version)) return;
      s.documents.send(
        res,
        200,
        await s.documents.document(
          s.knex,
          record,
          principal,
          query,
          { self: s.requests.selfLink(req) },
          { shape: s.shape(res) },
        ),
      );
    },

    async patch(req, res, route) {
      const principal = principalOf(res);
      const rt = route.resourceType;
      const query = s.requests.query(req, rt);
      const shape = s.shape(res);
      s.requests.requireJsonApiBody(req);
      // Passwords are checked and hashed before the transaction opens: argon2 takes its time.
      const secrets = readSecrets(rt, req.body);
      // The account whose password changes (only a write with a password needs it looked up first).
      const target =
        secrets.size && route.id && UUID.test(route.id)
          ? await s.loader.store.findByUuid(s.knex, rt.entityType.entityType, route.id.toLowerCase())
          : null;
      const hashed = await s.entities.hashSecrets(
        s.knex,
        rt,
        secrets,
        principal,
        target?.id ?? null,
        clientAddress(req, s.ctx.config.trustProxy),
      );
      const { version, shown } = await s.commands.update(principal, rt, route.id, {
        ifMatch: ifMatchOf(req),
        hashed,
        read: (trx, record) => {
          const data = readDataMember(req.body);
          if (data.id === undefined || data.id === null)
            throw badRequest('The resource object must include an "id" member matching the URL.', {
              pointer: '/data/id',
            });
          if (typeof data.id !== 'string' || data.id.toLowerCase() !== record.uuid) {
            throw badRequest(
              `The selected entity (${record.uuid}) does not match the ID in the payload (${quoted(data.id)}).`,
              { pointer: '/data/id' },
            );
          }
          return s.input.read(trx, rt, req.body, record, shape.name);
        },
        present: (trx, updated) =>
          s.documents.document(
            trx,
            updated,
            principal,
            query,
            { self: { href: `${shape.base}/api/${rt.entityType.entityType}/${rt.bundle.bundle}/${updated.uuid}` } },
            { shape },
          ),
      });
      if (version !== null) res.setHeader('ETag', entityTag(version, req));
      s.documents.send(res, 200, shown);
    },

    async delete(req, res, route) {
      await s.commands.delete(principalOf(res), route.resourceType, route.id, { ifMatch: ifMatchOf(req) });
      res.status(204).end();
    },
  };
}
