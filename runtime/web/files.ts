/**
 * Uploaded files for the pages: `GET /farm/files/<uuid>` downloads one, `GET /farm/files/<uuid>/image`
 * serves an image's own bytes for its thumbnail on a record's page (an `<img>` of the image itself,
 * sized by the page: no second, server-made copy is kept). A browser has a session, not a bearer
 * token, so the API's `/system/files/…` is not open to it; these answer whom the API's download
 * answers (jsonapi/handlers/files.ts: whoever may view files) and no one else.
 *
 * Only PNG, GIF and JPEG, the types an image field accepts (checked by their bytes at upload), are
 * ever served inline, and under a sandboxing CSP: an uploaded HTML or SVG file is a download,
 * never a page of this origin.
 */
import type { Request, Response } from 'express';
import type { AppContext } from '../context.ts';
import { assertMayOnType } from '../access/policy.ts';
import { notFound } from '../errors.ts';
import { mimeTypeOr } from '../files/storage.ts';
import { UUID } from '../jsonapi/input.ts';
import { webState } from './session.ts';

/** The types an image's thumbnail is served as. */
const INLINE_IMAGES = new Set(['image/png', 'image/gif', 'image/jpeg']);

export class FilePages {
  constructor(private readonly ctx: AppContext) {}

  /** GET /farm/files/<uuid> and /farm/files/<uuid>/image. */
  async send(req: Request, res: Response, image: boolean): Promise<void> {
    const { principal } = webState(res);
    const fileEt = this.ctx.registry.model.entityTypes.file;
    if (!fileEt) throw notFound('There is no such file.');
    assertMayOnType(principal, fileEt, 'view', 'files');
    const uuid = String(req.params.uuid).toLowerCase();
    if (!UUID.test(uuid)) throw notFound('There is no such file.');
    const row = await this.ctx.db.knex(fileEt.table).where('uuid', uuid).first('path', 'filemime', 'filename');
    const full = row ? this.ctx.services.files.absolute(String(row.path)) : null;
    if (!row || !full) throw notFound('There is no such file.');
    const name = String(row.filename);
    const type = mimeTypeOr(row.filemime, name);
    if (image && !INLINE_IMAGES.has(type)) throw notFound('There is no such image.');
    res.setHeader('Content-Type', type);
    // RFC 6266, as the API's download: an ASCII fallback and the real name as UTF-8.
    const fallback = name.replace(/[^\x20-\x7e]|["\\]/g, '_');
    const encoded = encodeURIComponent(name).replace(
      /['()*]/g,
      (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
    );
    res.setHeader(
      'Content-Disposition',
      `${image ? 'inline' : 'attachment'}; filename="${fallback}"; filename*=UTF-8''${encoded}`,
    );
    res.setHeader('X-Content-Type-Options', 'nosniff');
    res.setHeader('Content-Security-Policy', "default-src 'none'; sandbox");
    // A farm's private files: kept by no shared cache, nor on the browser's disk.
    res.setHeader('Cache-Control', 'private, no-store');
    await new Promise<void>((resolve, reject) =>
      res.sendFile(full, { dotfiles: 'allow' }, (err) =>
        err ? reject(notFound('There is no such file.')) : resolve(),
      ),
    );
  }
}
