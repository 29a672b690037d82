/**
 * File uploads (spec "Files"; farmos-behaviour.md §5): `POST /api/<e>/<b>/<field>` stores a file
 * to be referenced later; `POST /api/<e>/<b>/<uuid>/<field>` stores it and adds it to that record's
 * field. Bodies are raw bytes (application/octet-stream), streamed to disk; and
 * `GET /system/files/<path>` downloads a file with the same bearer token.
 */
import express, { type Request, type Router } from 'express';
import type { Principal } from '../../access/principal.ts';
import type { RouteHandler, MatchedRoute } from '../router.ts';
import type { JsonApiServices } from './services.ts';
import { principalOf } from '../../http/principal.ts';
import { assertMayOnType, requireAuthenticated, mayOnType } from '../../access/policy.ts';
import { ALLOWED_EXTENSIONS, FileStore, filenameFromDisposition, mimeOf } from '../../files/storage.ts';
import { ApiError, forbidden, notFound, unsupportedMediaType, ValidationError } from '../../errors.ts';
import type { Db, ItemValue, Reference } from '../../storage/records.ts';
import { extname } from 'node:path';

function requireOctetStream(req: Request): void {
  const type = (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
  if (type !== 'application/octet-stream') throw unsupportedMediaType(`File uploads need "Content-Type: application/octet-stream"${type ? `, not "${type}"` : ''}.`);
}

export function fileHandlers(s: JsonApiServices, files: FileStore): { uploadNew: RouteHandler; upload: RouteHandler } {
  const fileType = () => {
    const rt = s.ctx.registry.get('file--file');
    if (!rt) throw new ApiError(404, 'Files are not available.');
    return rt;
  };

  /** Check the request, stream the bytes to disk, and create the file record inside `trx`. */
  async function store(trx: Db, req: Request, route: MatchedRoute, permanent: boolean, principal: Principal): Promise<{ id: number; path: string }> {
    const field = route.field!;
    const filename = filenameFromDisposition(req.headers['content-disposition'] as string | undefined);
    const allowed = ALLOWED_EXTENSIONS[field.type as 'file' | 'image'];
    const ext = extname(filename).slice(1).toLowerCase();
    if (!allowed.includes(ext)) {
      throw new ValidationError([{ pointer: '/data', detail: `${field.name}: file validation failed: only files with the extensions ${allowed.join(' ')} are allowed, not "${filename}".` }]);
    }
    const saved = await files.save(req, route.resourceType.entityType.entityType, filename);
    try {
      // Drupal names the file after where it was stored (renamed when the name was taken).
      const stored = saved.path.slice(saved.path.lastIndexOf('/') + 1);
      const values = new Map<string, ItemValue | ItemValue[]>([
        ['filename', stored],
        ['filemime', mimeOf(filename)],
        ['filesize', saved.size],
        ['status', permanent],
        ['path', saved.path],
      ]);
      const { id } = await s.entities.create(trx, fileType(), { values, secrets: new Map() }, principal);
      return { id, path: saved.path };
    } catch (error) {
      files.remove(saved.path);
      throw error;
    }
  }

  return {
    async uploadNew(req, res, route) {
      const principal = principalOf(res);
      const rt = route.resourceType;
      assertMayOnType(principal, rt.entityType, 'create', `files for ${rt.type}`);
      requireOctetStream(req);
      const doc = await s.knex.transaction(async (trx) => {
        const { id } = await store(trx, req, route, false, principal);
        const [record] = await s.loader.load(trx, 'file', [id], null, principal);
        return s.document(trx, record!, principal, { ...s.query(req), include: [] }, { self: { href: `${s.ctx.config.baseUrl}/api/file/file/${record!.uuid}` } });
      });
      s.send(res, 201, doc);
    },

    async upload(req, res, route) {
      const principal = principalOf(res);
      const rt = route.resourceType;
      const field = route.field!;
      requireOctetStream(req);
      const doc = await s.knex.transaction(async (trx) => {
        const host = await s.find(trx, rt, route.id, principal);
        assertMayOnType(principal, rt.entityType, 'update', 'this resource');
        s.assertMayOnRecord(principal, host, 'update');
        const { id } = await store(trx, req, route, true, principal);
        const ref: Reference = { targetId: id, meta: {} };
        const current = host.values.get(field.name);
        const next = field.multiple ? [...((current as ItemValue[] | undefined) ?? []), ref] : ref;
        await s.entities.update(trx, host, { values: new Map([[field.name, next]]), secrets: new Map() }, principal);
        const [updated] = await s.loader.load(trx, rt.entityType.entityType, [host.id], null, principal);
        const refs = ((field.multiple ? updated!.values.get(field.name) : [updated!.values.get(field.name)]) as Reference[]).filter(Boolean);
        const records = await s.loader.load(trx, 'file', refs.map((r) => r.targetId), null, principal);
        const base = `${s.ctx.config.baseUrl}/api/${rt.entityType.entityType}/${rt.bundle.bundle}/${host.uuid}/${field.name}`;
        return s.document(trx, field.multiple ? records : (records[0] ?? null), principal, { ...s.query(req), include: [] }, { self: { href: base } });
      });
      s.send(res, 200, doc);
    },
  };
}

/** `GET /system/files/<path>`: the bytes of a stored file, for callers who may view files. */
export function fileDownloadRoutes(s: JsonApiServices, files: FileStore): Router {
  const router = express.Router();
  router.get(/^\/system\/files\/(.+)$/, async (req, res) => {
    const principal = principalOf(res);
    requireAuthenticated(principal);
    const fileEt = s.ctx.registry.model.entityTypes.file!;
    if (!mayOnType(principal, fileEt, 'view')) throw forbidden('The current user is not allowed to download files.');
    const path = decodeURIComponent(req.path.slice('/system/files/'.length));
    const row = await s.knex(fileEt.table).where('path', path).first('filemime', 'filename');
    const full = row ? files.absolute(path) : null;
    if (!row || !full) throw notFound('There is no such file.');
    res.setHeader('Content-Type', row.filemime ?? 'application/octet-stream');
    res.setHeader('Content-Disposition', `attachment; filename="${String(row.filename).replace(/["\\\r\n]/g, '_')}"`);
    res.setHeader('X-Content-Type-Options', 'nosniff');
    await new Promise<void>((resolve, reject) => res.sendFile(full, { dotfiles: 'allow' }, (err) => (err ? reject(notFound('There is no such file.')) : resolve())));
  });
  return router;
}
