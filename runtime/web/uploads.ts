/**
 * File and image uploads from the web (issue 38 screen 5): on a record's edit page, a form of its
 * own per file or image field (a browser sends a file only in a multipart/form-data body), which
 * adds the file to the field as the API's `POST /api/<e>/<b>/<uuid>/<field>` does, through the same
 * FileCommands (usecases/files.ts) and the same checks (jsonapi/handlers/files.ts: the field's
 * extensions, an image's content, TILTH_UPLOAD_MAX_BYTES). Whether the person may write the record
 * is checked before a byte is read; the body is received to a temporary file with no transaction
 * open, its CSRF token checked, the file taken out of it, and attached in one short transaction.
 */
import { createReadStream } from 'node:fs';
import { Readable } from 'node:stream';
import type { NextFunction, Request, Response } from 'express';
import type { AppContext } from '../context.ts';
import type { ResourceType } from '../model/registry.ts';
import type { BundleUi } from '../model/ui.ts';
import type { FieldDescriptor } from '../model/descriptor.ts';
import { ApiError, ValidationError } from '../errors.ts';
import { ALLOWED_EXTENSIONS } from '../files/storage.ts';
import { FileCommands } from '../usecases/files.ts';
import { assertAllowedName, assertImageContent } from '../jsonapi/handlers/files.ts';
import type { JsonApiServices } from '../jsonapi/handlers/services.ts';
import { html, type Html } from './html.ts';
import { M } from './messages.ts';
import { recordPath } from './format.ts';
import { webState, type Form, type WebSessions } from './session.ts';
import { fieldId } from './widgets.ts';

/** Room for the form's other parts (its token, the part headers) beside the file itself. */
const FORM_OVERHEAD_BYTES = 64 * 1024;

/** The file input's name in an upload form. */
const FILE_INPUT = 'file';

export class UploadPages {
  private readonly commands: FileCommands;

  constructor(
    private readonly ctx: AppContext,
    services: JsonApiServices,
    private readonly sessions: WebSessions,
  ) {
    this.commands = new FileCommands(ctx.registry, services.commands, services.entities, ctx.services.files);
  }

  /** The file and image fields of a bundle's form, each with its own upload. */
  fields(rt: ResourceType, ui: BundleUi): Array<{ label: string; d: FieldDescriptor }> {
    return ui.fields
      .filter((f) => f.widget === 'file')
      .flatMap((f) => {
        const d = rt.fieldsByName.get(f.name);
        return d ? [{ label: f.label, d }] : [];
      });
  }

  /** An edit page's upload forms, one per file or image field (none on a create form: the record must exist first). */
  forms(res: Response, rt: ResourceType, ui: BundleUi, uuid: string): Html {
    const { csrfToken } = webState(res);
    return html`${this.fields(rt, ui).map(({ label, d }) => {
      const id = `${fieldId(d.name)}-upload`;
      const extensions = ALLOWED_EXTENSIONS[d.type as 'file' | 'image'] ?? [];
      return html`<form class="upload card" method="post" enctype="multipart/form-data" action="${recordPath({ type: rt.type, id: uuid })}/files/${d.name}">
<input type="hidden" name="csrf_token" value="${csrfToken}">
<label for="${id}">${M.widgets.upload(label)}</label><input type="file" id="${id}" name="${FILE_INPUT}" accept="${extensions.map((e) => `.${e}`).join(',')}" aria-describedby="${id}-help">
<p class="help" id="${id}-help">${M.widgets.uploadHelp(extensions.join(', '))}</p>
<div class="actions"><button class="primary" type="submit">${M.widgets.upload(label)}</button></div></form>`;
    })}`;
  }

  /**
   * POST /farm/<type>/<bundle>/<uuid>/files/<field> (signed in, writes not refused): the file added
   * to the field; back to the record's page, which lists it.
   */
  async upload(req: Request, res: Response, rt: ResourceType, uuid: string, fieldName: string): Promise<void> {
    const { principal } = webState(res);
    const field = rt.fieldsByName.get(fieldName);
    if (!field || (field.type !== 'file' && field.type !== 'image'))
      throw new ApiError(404, `There is no file field ${fieldName}.`);
    const type = String(req.headers['content-type'] ?? '');
    if (!/^multipart\/form-data\s*;/i.test(type)) throw new ApiError(415, 'An upload is sent as multipart/form-data.');
    // Access first, as the API's upload checks it before reading the bytes.
    await this.commands.assertMayAttach(principal, rt, uuid, undefined);
    const files = this.ctx.services.files;
    const body = await files.receive(req, {
      maxBytes: this.ctx.config.uploadMaxBytes + FORM_OVERHEAD_BYTES,
      stallMs: this.ctx.config.bodyTimeoutSeconds * 1000,
    });
    let parsed: FormData;
    try {
      parsed = await new globalThis.Response(Readable.toWeb(createReadStream(body.tmp)) as ReadableStream, {
        headers: { 'content-type': type },
      }).formData();
    } catch {
      throw new ApiError(400, 'The upload form could not be read.');
    } finally {
      files.discard(body.tmp);
    }
    // The CSRF token, as every form's (session.ts checkCsrf).
    const form: Form = new Map();
    const token = parsed.get('csrf_token');
    if (typeof token === 'string') form.set('csrf_token', [token]);
    req.body = form;
    const csrfPassed = await new Promise<boolean>((resolve) => {
      const next: NextFunction = () => resolve(true);
      void Promise.resolve(this.sessions.checkCsrf(req, res, next)).then(() => resolve(false));
    });
    if (!csrfPassed) return;
    const file = parsed.get(FILE_INPUT);
    if (!file || typeof file === 'string' || !file.name)
      throw new ValidationError([{ field: null, detail: `${field.name}: choose a file to upload.` }]);
    const filename = file.name.split(/[\\/]/).pop()!;
    assertAllowedName(field, filename);
    const received = {
      ...(await files.receive(Readable.fromWeb(file.stream() as import('node:stream/web').ReadableStream))),
      filename,
    };
    await assertImageContent(files, field, received);
    await this.commands.attach(principal, rt, uuid, field, received, { present: async () => null });
    res.redirect(303, `${recordPath({ type: rt.type, id: uuid })}?saved=uploaded`);
  }
}
