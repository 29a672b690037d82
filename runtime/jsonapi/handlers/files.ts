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
import { principalOf } from '../../access/principal.ts';
import { requireAuthenticated, mayOnType } from '../../access/policy.ts';
import { ALLOWED_EXTENSIONS, FileStore, filenameFromDisposition, mimeTypeOr } from '../../files/storage.ts';
import { forbidden, notFound, unsupportedMediaType, ValidationError } from '../../errors.ts';
import type { Reference } from '../../storage/records.ts';
import type { FieldDescriptor } from '../../model/descriptor.ts';
import { extname } from 'node:path';
import { fileTypeFromFile } from 'file-type';
import { entityTag, ifMatchOf } from './etags.ts';
import type { ReceivedFile } from '../../usecases/files.ts';
import { farmCommands } from '../../usecases/commands.ts';

function requireOctetStream(req: Request): void {
  const type = (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
  if (type !== 'application/octet-stream')
    throw unsupportedMediaType(
      `File uploads need "Content-Type: application/octet-stream"${type ? `, not "${type}"` : ''}.`,
    );
}

/** What an image's first bytes must say, by the extensions farmOS allows on image fields. */
const IMAGE_TYPES: Record<string, string> = {
  png: 'image/png',
  gif: 'image/gif',
  jpg: 'image/jpeg',
  jpeg: 'image/jpeg',
};

/** A file's name checked against its field's extensions, before any byte is read (the API's and the web's uploads). */
export function assertAllowedName(field: FieldDescriptor, filename: string): void {
  const allowed = ALLOWED_EXTENSIONS[field.type as 'file' | 'image'];
  const ext = extname(filename).slice(1).toLowerCase();
  if (!allowed.includes(ext)) {
    throw new ValidationError([
      {
        pointer: '/data',
        detail: `${field.name}: file validation failed: only files with the extensions ${allowed.join(' ')} are allowed, not "${filename}".`,
      },
    ]);
  }
}

/** An image field's file must be the image its name says (file-type reads its first bytes); otherwise it is discarded and refused. */
export async function assertImageContent(
  files: FileStore,
  field: FieldDescriptor,
  received: ReceivedFile,
): Promise<void> {
  if (field.type !== 'image') return;
  const expected = IMAGE_TYPES[extname(received.filename).slice(1).toLowerCase()];
  const found = await fileTypeFromFile(received.tmp).catch(() => undefined);
  if (!found || found.mime !== expected) {
    files.discard(received.tmp);
    throw new ValidationError([
      {
        pointer: '/data',
        detail: `${field.name}: file validation failed: "${received.filename}" is ${found ? `a ${found.mime} file` : 'not an image'}, not the ${expected} its name says.`,
      },
    ]);
  }
}

export function fileHandlers(s: JsonApiServices, files: FileStore): { uploadNew: RouteHandler; upload: RouteHandler } {
  const commands = farmCommands(s.ctx).files;

  /** The file name of an upload, checked against the field's extensions before any byte is read. */
  function checkedName(req: Request, route: MatchedRoute): string {
    const filename = filenameFromDisposition(req.headers['content-disposition'] as string | undefined);
    assertAllowedName(route.field!, filename);
    return filename;
  }

  /**
   * Receive the bytes with no transaction open (a slow client holds up nobody), and check an
   * image's content. The command attaches the result in a short transaction, then discards it.
   */
  async function receive(req: Request, route: MatchedRoute, filename: string): Promise<ReceivedFile> {
    const received = { ...(await files.receive(req)), filename };
    await assertImageContent(files, route.field!, received);
    return received;
  }

  return {
    async uploadNew(req, res, route) {
      const principal = principalOf(res);
      const rt = route.resourceType;
      commands.assertMayUpload(principal, rt);
      requireOctetStream(req);
      const received = await receive(req, route, checkedName(req, route));
      const { version, shown } = await commands.upload(principal, rt, received, (trx, record) =>
        s.documents.document(
          trx,
          record,
          principal,
          { ...s.requests.query(req), include: [] },
          { self: { href: `${s.shape(res).base}/api/file/file/${record.uuid}` } },
          { shape: s.shape(res) },
        ),
      );
      // The created file's ETag (RFC 9110 §15.3.2: a 201's validators are the new resource's).
      if (version !== null) res.setHeader('ETag', entityTag(version, req));
      s.documents.send(res, 201, shown);
    },

    async upload(req, res, route) {
      const principal = principalOf(res);
      const rt = route.resourceType;
      const field = route.field!;
      requireOctetStream(req);
      // An upload into a field is a write of the record, as a relationship's POST is: If-Match
      // names the record's version. Access and If-Match are checked before the bytes are read,
      // and again in the transaction that attaches them, with the record locked.
      const ifMatch = ifMatchOf(req);
      await commands.assertMayAttach(principal, rt, route.id, ifMatch);
      const received = await receive(req, route, checkedName(req, route));
      // Tagged with the record's new version, as a relationship's write answers: what the next
      // write of the record sends in If-Match.
      const { version, shown } = await commands.attach(principal, rt, route.id, field, received, {
        ifMatch,
        present: async (trx, updated) => {
          const refs = (
            (field.multiple ? updated.values.get(field.name) : [updated.values.get(field.name)]) as Reference[]
          ).filter(Boolean);
          const records = await s.loader.load(
            trx,
            'file',
            refs.map((r) => r.targetId),
            null,
          );
          const base = `${s.shape(res).base}/api/${rt.entityType.entityType}/${rt.bundle.bundle}/${updated.uuid}/${field.name}`;
          const one = field.multiple ? null : (records[0] ?? null);
          return s.documents.document(
            trx,
            field.multiple ? records : one,
            principal,
            { ...s.requests.query(req), include: [] },
            { self: { href: base } },
            { shape: s.shape(res) },
          );
        },
      });
      if (version !== null) res.setHeader('ETag', entityTag(version, req));
      s.documents.send(res, 200, shown);
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
    res.setHeader(
      'Content-Disposition',
      `attachment; filename="${fallback}"; filename*=UTF-8''${encodeURIComponent(name).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)}`,
    );
    res.setHeader('X-Content-Type-Options', 'nosniff');
    // Private files: no shared cache (a proxy, a CDN) may keep a copy, nor the browser's disk.
    res.setHeader('Cache-Control', 'private, no-store');
    await new Promise<void>((resolve, reject) =>
      res.sendFile(full, { dotfiles: 'allow' }, (err) =>
        err ? reject(notFound('There is no such file.')) : resolve(),
      ),
    );
  });
  return router;
}
