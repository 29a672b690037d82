/**
 * File uploads (spec "Files"; farmos-behaviour.md §5): `POST /api/<e>/<b>/<field>` stores a file
 * to be referenced later; `POST /api/<e>/<b>/<uuid>/<field>` stores it and adds it to that record's
 * field. Bodies are raw bytes (application/octet-stream), streamed to disk before any transaction
 * opens (files/storage.ts), image fields' contents checked with file-type; and
 * `GET /system/files/<path>` downloads a file with the same bearer token.
 */
import express, { type Request, type Router } from 'express';
import type { RouteHandler, MatchedRoute } from '../router.ts';
import type { JsonApiServices } from './services.ts';
import { principalOf, type Principal } from '../../access/principal.ts';
import { assertMayOnType, requireAuthenticated, mayOnType } from '../../access/policy.ts';
import { ALLOWED_EXTENSIONS, FileStore, filenameFromDisposition, mimeOf, mimeTypeOr } from '../../files/storage.ts';
import { ApiError, forbidden, notFound, unsupportedMediaType, ValidationError } from '../../errors.ts';
import type { Db, ItemValue, Reference } from '../../storage/records.ts';
import { extname } from 'node:path';
import { fileTypeFromFile } from 'file-type';
import { versionOf } from '../../storage/change-feed.ts';
import { checkIfMatch, entityTag } from './etags.ts';

function requireOctetStream(req: Request): void {
  const type = (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
  if (type !== 'application/octet-stream') throw unsupportedMediaType(`File uploads need "Content-Type: application/octet-stream"${type ? `, not "${type}"` : ''}.`);
}

/** What an image's first bytes must say, by the extensions farmOS allows on image fields. */
const IMAGE_TYPES: Record<string, string> = { png: 'image/png', gif: 'image/gif', jpg: 'image/jpeg', jpeg: 'image/jpeg' };

export function fileHandlers(s: JsonApiServices, files: FileStore): { uploadNew: RouteHandler; upload: RouteHandler } {
  const fileType = () => {
    const rt = s.ctx.registry.get('file--file');
    if (!rt) throw new ApiError(404, 'Files are not available.');
    return rt;
  };

  /** The file name of an upload, checked against the field's extensions before any byte is read. */
  function checkedName(req: Request, route: MatchedRoute): string {
    const field = route.field!;
    const filename = filenameFromDisposition(req.headers['content-disposition'] as string | undefined);
    const allowed = ALLOWED_EXTENSIONS[field.type as 'file' | 'image'];
    const ext = extname(filename).slice(1).toLowerCase();
    if (!allowed.includes(ext)) {
      throw new ValidationError([{ pointer: '/data', detail: `${field.name}: file validation failed: only files with the extensions ${allowed.join(' ')} are allowed, not "${filename}".` }]);
    }
    return filename;
  }

  /**
   * Receive the bytes with no transaction open (a slow client holds up nobody), and check an
   * image's content. The caller attaches the result in a short transaction, then discards it.
   */
  async function receive(req: Request, route: MatchedRoute, filename: string): Promise<{ tmp: string; size: number }> {
    const received = await files.receive(req);
    const field = route.field!;
    if (field.type === 'image') {
      const expected = IMAGE_TYPES[extname(filename).slice(1).toLowerCase()];
      const found = await fileTypeFromFile(received.tmp).catch(() => undefined);
      if (!found || found.mime !== expected) {
        files.discard(received.tmp);
        throw new ValidationError([{ pointer: '/data', detail: `${field.name}: file validation failed: "${filename}" is ${found ? `a ${found.mime} file` : 'not an image'}, not the ${expected} its name says.` }]);
      }
    }
    return received;
  }

  /** Place a received file and create its record inside `trx`; the placed file goes if the transaction fails. */
  async function attach(trx: Db, received: { tmp: string; size: number }, route: MatchedRoute, filename: string, permanent: boolean, principal: Principal, placed: string[]): Promise<number> {
    const path = files.place(received.tmp, route.resourceType.entityType.entityType, filename);
    placed.push(path);
    // Drupal names the file after where it was stored (renamed when the name was taken).
    const stored = path.slice(path.lastIndexOf('/') + 1);
    const values = new Map<string, ItemValue | ItemValue[]>([
      ['filename', stored],
      ['filemime', mimeOf(filename)],
      ['filesize', received.size],
      ['status', permanent],
      ['path', path],
    ]);
    const { id } = await s.entities.create(trx, fileType(), { values, secrets: new Map() }, principal);
    return id;
  }

  /** Run `work` in a transaction; on failure, remove what it placed on disk; always drop the temporary file. */
  async function inTransaction<T>(received: { tmp: string }, work: (trx: Db, placed: string[]) => Promise<T>): Promise<T> {
    const placed: string[] = [];
    try {
      return await s.knex.transaction((trx) => work(trx, placed));
    } catch (error) {
      for (const path of placed) files.remove(path);
      throw error;
    } finally {
      files.discard(received.tmp);
    }
  }

  return {
    async uploadNew(req, res, route) {
      const principal = principalOf(res);
      const rt = route.resourceType;
      assertMayOnType(principal, rt.entityType, 'create', `files for ${rt.type}`);
      requireOctetStream(req);
      const filename = checkedName(req, route);
      const received = await receive(req, route, filename);
      const { doc, version } = await inTransaction(received, async (trx, placed) => {
        const id = await attach(trx, received, route, filename, false, principal, placed);
        const [record] = await s.loader.load(trx, 'file', [id], null);
        const version = await versionOf(trx, 'file', id);
        return { version, doc: await s.documents.document(trx, record!, principal, { ...s.requests.query(req), include: [] }, { self: { href: `${s.ctx.config.baseUrl}/api/file/file/${record!.uuid}` } }) };
      });
      // The created file's ETag (RFC 9110 §15.3.2: a 201's validators are the new resource's).
      if (version !== null) res.setHeader('ETag', entityTag(version, req));
      s.documents.send(res, 201, doc);
    },

    async upload(req, res, route) {
      const principal = principalOf(res);
      const rt = route.resourceType;
      const field = route.field!;
      requireOctetStream(req);
      // Access is checked before the bytes are read, and again in the transaction that attaches them.
      const mayAttach = (host: Awaited<ReturnType<typeof s.records.find>>) => {
        assertMayOnType(principal, rt.entityType, 'update', 'this resource');
        s.records.assertMayOnRecord(principal, host, 'update');
      };
      // An upload into a field is a write of the record, as a relationship's POST is: If-Match
      // names the record's version (checked before the bytes are read, and again when it is locked).
      const before = await s.records.find(s.knex, rt, route.id, principal);
      mayAttach(before);
      const stale = await checkIfMatch(s.knex, req, before);
      if (stale) throw stale;
      const filename = checkedName(req, route);
      const received = await receive(req, route, filename);
      const { doc, version } = await inTransaction(received, async (trx, placed) => {
        // Locked: concurrent uploads to one record each add to what the one before them saved.
        const host = await s.records.findForUpdate(trx, rt, route.id, principal);
        const changed = await checkIfMatch(trx, req, host);
        mayAttach(host);
        if (changed) throw changed;
        const id = await attach(trx, received, route, filename, true, principal, placed);
        const ref: Reference = { targetId: id, meta: {} };
        const current = host.values.get(field.name);
        const next = field.multiple ? [...((current as ItemValue[] | undefined) ?? []), ref] : ref;
        await s.entities.update(trx, host, { values: new Map([[field.name, next]]), secrets: new Map() }, principal);
        const [updated] = await s.loader.load(trx, rt.entityType.entityType, [host.id], null);
        const refs = ((field.multiple ? updated!.values.get(field.name) : [updated!.values.get(field.name)]) as Reference[]).filter(Boolean);
        const records = await s.loader.load(trx, 'file', refs.map((r) => r.targetId), null);
        const base = `${s.ctx.config.baseUrl}/api/${rt.entityType.entityType}/${rt.bundle.bundle}/${host.uuid}/${field.name}`;
        const one = field.multiple ? null : (records[0] ?? null);
        // Tagged with the record's new version, as a relationship's write answers: what the next
        // write of the record sends in If-Match.
        const version = await versionOf(trx, rt.entityType.entityType, host.id);
        return { version, doc: await s.documents.document(trx, field.multiple ? records : one, principal, { ...s.requests.query(req), include: [] }, { self: { href: base } }) };
      });
      if (version !== null) res.setHeader('ETag', entityTag(version, req));
      s.documents.send(res, 200, doc);
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
    // A stored type that is not one (an import from an older Tilth took the source's as it was) is the name's, never a failed header.
    res.setHeader('Content-Type', mimeTypeOr(row.filemime, String(row.filename)));
    // RFC 6266: an ASCII fallback, and the real name as UTF-8 (a raw non-ASCII header value is refused by Node).
    const name = String(row.filename);
    const fallback = name.replace(/[^\x20-\x7e]|["\\]/g, '_');
    res.setHeader('Content-Disposition', `attachment; filename="${fallback}"; filename*=UTF-8''${encodeURIComponent(name).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)}`);
    res.setHeader('X-Content-Type-Options', 'nosniff');
    // Private files: no shared cache (a proxy, a CDN) may keep a copy, nor the browser's disk.
    res.setHeader('Cache-Control', 'private, no-store');
    await new Promise<void>((resolve, reject) => res.sendFile(full, { dotfiles: 'allow' }, (err) => (err ? reject(notFound('There is no such file.')) : resolve())));
  });
  return router;
}
