/**
 * Spreadsheets in and out of the web interface (issue 42 §4), in the formats the API already
 * speaks: a list view (its filters, sort and columns) as the API's export writes a collection
 * (jsonapi/export.ts: CSV with quantities' values, GeoJSON, KML; streamed in batches by the keyset
 * cursor, so memory stays flat), and a CSV of a bundle read back as `tilth import csv` reads one
 * (jsonapi/csv-read.ts). The import is two steps: a preview of the first rows as they will be
 * stored, with every row's mistakes named by line and column, then "import", which stores every
 * row or none. Both run the rows through the create command in one transaction (the person's
 * right to create, the API's reading and checks, defaults, farm behaviour, revisions); the
 * preview's transaction is rolled back. The file is bounded (SHEET_MAX_BYTES), received to a
 * temporary file before its CSRF token is checked, as uploads.ts receives files.
 */
import { createReadStream } from 'node:fs';
import { Readable } from 'node:stream';
import express, { type NextFunction, type Request, type RequestHandler, type Response, type Router } from 'express';
import type { Knex } from 'knex';
import type { AppContext } from '../context.ts';
import type { ResourceType } from '../model/registry.ts';
import type { BundleUi } from '../model/ui.ts';
import type { FieldDescriptor } from '../model/descriptor.ts';
import { assertMayOnType, mayOnType } from '../access/policy.ts';
import type { Principal } from '../access/principal.ts';
import { ApiError } from '../errors.ts';
import { UploadRefused } from '../files/storage.ts';
import { write } from '../storage/transactions.ts';
import type { JsonApiServices } from '../jsonapi/handlers/services.ts';
import { sendExport, type ExportFormat } from '../jsonapi/export.ts';
import { CsvFileError, readCsv, type CsvProblem } from '../jsonapi/csv-read.ts';
import { errorObjects } from '../jsonapi/errors.ts';
import { html, type Html } from './html.ts';
import { M } from './messages.ts';
import { page, sendPage } from './layout.ts';
import { attributeValue, relationshipValue, type Resource } from './format.ts';
import type { WebReads } from './reads.ts';
import { webState, type Form, type WebSessions } from './session.ts';
import { EXPORT_PARAM, type ListPages } from './lists.ts';
import type { ListView } from './list-view.ts';
import { ApiQuery } from './api-query.ts';

/** The largest CSV the import reads. */
export const SHEET_MAX_BYTES = 2 * 1024 * 1024;
/** Rows the preview shows as they will be stored (every row is checked). */
export const PREVIEW_ROWS = 10;
/** The formats a list view downloads as. */
export const FORMATS: readonly ExportFormat[] = ['csv', 'geojson', 'kml'];
/** Room for the form's other parts beside the file. */
const FORM_OVERHEAD_BYTES = 64 * 1024;
/** Entity types whose bundles import from CSV: accounts (passwords) and files (bytes) do not. */
const NOT_IMPORTED = new Set(['user', 'file']);
/** Geometry fields a map file needs, whatever the list's columns. */
const GEOMETRY = ['geometry', 'intrinsic_geometry'];

/** Thrown to roll a preview's transaction back. */
class DryRun extends Error {}

export class SheetPages {
  constructor(
    private readonly ctx: AppContext,
    private readonly services: JsonApiServices,
    private readonly reads: WebReads,
    private readonly sessions: WebSessions,
    private readonly lists: ListPages,
  ) {}

  private send(res: Response, status: number, title: string, body: Html): void {
    const state = webState(res);
    sendPage(res, status, page(title, this.sessions.chrome(state, this.lists.nav(state.principal)), body));
  }

  /** `format` as an export format, or a 400 naming the choices. */
  private format(format: string): ExportFormat {
    if (!(FORMATS as readonly string[]).includes(format)) throw new ApiError(400, M.bulk.badFormat);
    return format as ExportFormat;
  }

  /**
   * The list's columns as sparse fieldsets (and, for a map file, the geometry): the export writes
   * `id`, `type` and these, with related records' names and UUIDs.
   */
  private fieldsets(q: ApiQuery, listView: ListView, format: ExportFormat): void {
    for (const rt of listView.types) {
      const names = listView.columns.flatMap((c) =>
        c.field && rt.fieldsByName.has(c.field.name) ? [c.field.name] : [],
      );
      if (format !== 'csv') names.push(...GEOMETRY.filter((g) => rt.fieldsByName.has(g)));
      q.set(`fields[${rt.type}]`, [...new Set([listView.labelField, ...names])].join(','));
    }
  }

  /** GET a list with `_format=csv|geojson|kml`: the whole view, streamed as the API's export writes it. */
  async export(res: Response, listView: ListView, view: URLSearchParams, format: string): Promise<void> {
    const chosen = this.format(format);
    const { q } = this.lists.viewQuery(listView, view);
    this.fieldsets(q, listView, chosen);
    await this.stream(res, listView, q, chosen);
  }

  /** The records `uuids` name, in the list's order, as a file (the bulk action "export"). */
  async exportRecords(
    res: Response,
    listView: ListView,
    view: URLSearchParams,
    uuids: readonly string[],
    format: string,
  ): Promise<void> {
    const chosen = this.format(format);
    const { q } = this.lists.viewQuery(
      listView,
      new URLSearchParams(view.has('sort') ? { sort: view.get('sort')! } : {}),
    );
    q.condition('id', 'IN', [...uuids]);
    this.fieldsets(q, listView, chosen);
    await this.stream(res, listView, q, chosen);
  }

  private async stream(res: Response, listView: ListView, q: ApiQuery, format: ExportFormat): Promise<void> {
    const { principal } = webState(res);
    if (!listView.types.length) throw new ApiError(404, M.errors.notFoundText);
    const query = this.reads.query(listView.types[0]!, q.toString());
    assertMayOnType(principal, listView.types[0]!.entityType, 'view', `${listView.types[0]!.type} resources`);
    await sendExport(this.services, this.reads.compiler, res, listView.types, query, principal, format);
  }

  /** The view's download links, and a bundle's import, for whoever may create its records. */
  links(res: Response, listView: ListView, view: URLSearchParams): Html {
    const { principal } = webState(res);
    const at = (format: string) => {
      const next = new URLSearchParams(view);
      for (const k of ['offset', 'cursor', 'deleted', 'imported']) next.delete(k);
      next.set(EXPORT_PARAM, format);
      return `${listView.path}?${next}`;
    };
    const rt = listView.bundles[0]!.rt;
    const importable =
      !listView.all && !NOT_IMPORTED.has(rt.entityType.access) && !NOT_IMPORTED.has(rt.entityType.entityType);
    const mayImport = importable && mayOnType(principal, rt.entityType, 'create');
    return html`<p class="actions sheets"><span>${M.sheets.download}:</span> ${FORMATS.map((f) => html`<a class="button secondary" href="${at(f)}" download>${M.sheets[f]}</a>`)}${
      mayImport
        ? html` <a class="button secondary" href="${listView.path}/import">${M.sheets.import(listView.title)}</a>`
        : ''
    }</p>`;
  }

  /** The import's routes, each for a bundle whose records the person may create. */
  routes(signedIn: RequestHandler, refuseWrites: RequestHandler): Router {
    const router = express.Router();
    const bundle =
      (handler: (req: Request, res: Response, rt: ResourceType, ui: BundleUi) => Promise<void>): RequestHandler =>
      (req, res, next) => {
        const rt = this.ctx.registry.get(
          this.ctx.registry.typeName(String(req.params.entityType), String(req.params.bundle)),
        );
        const ui = rt ? this.ctx.generated.ui.get(rt.type) : undefined;
        if (!rt || !ui || NOT_IMPORTED.has(rt.entityType.access) || NOT_IMPORTED.has(rt.entityType.entityType))
          return next();
        handler(req, res, rt, ui).catch(next);
      };
    router.get(
      '/farm/:entityType/:bundle/import',
      signedIn,
      bundle(async (_req, res, rt, ui) => this.form(res, rt, ui)),
    );
    router.get(
      '/farm/:entityType/:bundle/import/template.csv',
      signedIn,
      bundle(async (_req, res, rt) => this.template(res, rt)),
    );
    router.post(
      '/farm/:entityType/:bundle/import',
      signedIn,
      refuseWrites,
      bundle((req, res, rt, ui) => this.upload(req, res, rt, ui)),
    );
    return router;
  }

  /** The columns a bundle's CSV may have, as the export names them: `type`, then every field one may set. */
  private columns(rt: ResourceType): string[] {
    const out = ['type'];
    for (const f of rt.bundle.fields) {
      if (!importable(f)) continue;
      if (f.kind === 'attribute') out.push(f.name);
      else out.push(f.name, `${f.name}.id`);
    }
    return out;
  }

  /** GET …/import/template.csv: the header row a file for this bundle has. */
  private template(res: Response, rt: ResourceType): void {
    assertMayOnType(webState(res).principal, rt.entityType, 'create', `${rt.type} resources`);
    res
      .status(200)
      .type('text/csv; charset=utf-8')
      .set('Content-Disposition', `attachment; filename="${rt.entityType.entityType}-${rt.bundle.bundle}-template.csv"`)
      .set('Cache-Control', 'private, no-store')
      .send(`\uFEFF${this.columns(rt).join(',')}\r\n`);
  }

  /** GET …/import: the upload form. */
  private form(res: Response, rt: ResourceType, ui: BundleUi, problem?: string, status = 200): void {
    const { csrfToken, principal } = webState(res);
    assertMayOnType(principal, rt.entityType, 'create', `${rt.type} resources`);
    const path = `/farm/${rt.entityType.entityType}/${rt.bundle.bundle}`;
    const body = html`${problem ? html`<div class="error" role="alert"><p>${problem}</p></div>` : ''}<form class="card" method="post" enctype="multipart/form-data" action="${path}/import">
<input type="hidden" name="csrf_token" value="${csrfToken}">
<label for="sheet-file">${M.sheets.file}</label><input type="file" id="sheet-file" name="file" accept=".csv,text/csv" aria-describedby="sheet-file-help">
<p class="help" id="sheet-file-help">${M.sheets.fileHelp(megabytes(SHEET_MAX_BYTES))} <a href="${path}/import/template.csv" download>${M.sheets.template}</a></p>
<div class="actions"><button class="primary" type="submit" name="step" value="preview">${M.sheets.preview}</button><a class="button secondary" href="${path}">${M.bulk.cancel}</a></div></form>`;
    this.send(res, status, M.sheets.importTitle(ui.label), body);
  }

  /**
   * POST …/import (multipart): the file (or, from the preview, its text again) read, checked and
   * run through the create command; `step=import` keeps the records when no row has a mistake.
   */
  private async upload(req: Request, res: Response, rt: ResourceType, ui: BundleUi): Promise<void> {
    const { principal } = webState(res);
    // The right to create first, before a byte is read.
    assertMayOnType(principal, rt.entityType, 'create', `${rt.type} resources`);
    const type = String(req.headers['content-type'] ?? '');
    if (!/^multipart\/form-data\s*;/i.test(type)) throw new ApiError(415, 'An import is sent as multipart/form-data.');
    const files = this.ctx.services.files;
    let body: { tmp: string; size?: number };
    try {
      body = await files.receive(req, {
        maxBytes: SHEET_MAX_BYTES + FORM_OVERHEAD_BYTES,
        stallMs: this.ctx.config.bodyTimeoutSeconds * 1000,
      });
    } catch (error) {
      if (error instanceof UploadRefused && error.kind === 'too-large')
        return this.form(res, rt, ui, M.sheets.tooBig(megabytes(SHEET_MAX_BYTES)), 413);
      throw error;
    }
    let parsed: FormData;
    try {
      parsed = await new globalThis.Response(Readable.toWeb(createReadStream(body.tmp)) as ReadableStream, {
        headers: { 'content-type': type },
      }).formData();
    } catch {
      throw new ApiError(400, 'The import form could not be read.');
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
    const file = parsed.get('file');
    const carried = parsed.get('csv');
    const text =
      file && typeof file !== 'string' && file.size > 0
        ? await file.text()
        : typeof carried === 'string' && carried
          ? carried
          : null;
    if (text === null) return this.form(res, rt, ui, M.sheets.noFile, 400);
    if (Buffer.byteLength(text) > SHEET_MAX_BYTES)
      return this.form(res, rt, ui, M.sheets.tooBig(megabytes(SHEET_MAX_BYTES)), 413);
    const keep = parsed.get('step') === 'import';
    let reading;
    try {
      reading = await readCsv(text, this.ctx.registry, this.services.knex, {
        entityType: rt.entityType.entityType,
        bundle: rt,
      });
    } catch (error) {
      if (error instanceof CsvFileError) return this.form(res, rt, ui, M.sheets.notCsv(error.message), 400);
      throw error;
    }
    if (!reading.records.length && !reading.problems.length) return this.form(res, rt, ui, M.sheets.empty, 400);
    const problems: CsvProblem[] = [...reading.problems];
    let shown: { resources: Resource[]; included: Map<string, Resource> } = { resources: [], included: new Map() };
    let created = 0;
    const commands = this.services.commands;
    try {
      await write(this.services.knex, async (trx) => {
        const ids: number[] = [];
        for (const record of reading.records) {
          try {
            const input = await this.services.input.read(trx, rt, record.document);
            ids.push((await commands.createIn(trx, principal, rt, input)).id);
          } catch (error) {
            if (!(error instanceof ApiError) || error.status >= 500) throw error;
            for (const object of errorObjects(error))
              problems.push({
                row: record.row,
                line: record.line,
                column: columnOf(object.source?.pointer, reading.header),
                detail: object.detail,
              });
            // The rows after it are tried too, whatever the refusal (a UUID taken is a 409): an
            // ApiError is the service's own, which leaves the transaction usable on both databases
            // (what the row wrote goes with the preview's rollback, or the import's with mistakes).
            // A failure of the database itself is no ApiError, and ends the import above.
          }
        }
        created = ids.length;
        if (!keep || problems.length) {
          shown = await this.stored(trx, rt, ids.slice(0, PREVIEW_ROWS), reading.header, principal);
          throw new DryRun();
        }
      });
    } catch (error) {
      if (!(error instanceof DryRun)) throw error;
    }
    problems.sort((a, b) => a.row - b.row);
    if (keep && !problems.length) return this.done(res, rt, ui, created);
    this.preview(
      res,
      rt,
      ui,
      text,
      reading.records.length + new Set(reading.problems.map((p) => p.row)).size,
      reading.header,
      shown,
      problems,
    );
  }

  /** The first records as stored (in the preview's transaction, before it is rolled back), with the records they name. */
  private async stored(
    trx: Knex.Transaction,
    rt: ResourceType,
    ids: number[],
    header: string[],
    principal: Principal,
  ): Promise<{ resources: Resource[]; included: Map<string, Resource> }> {
    if (!ids.length) return { resources: [], included: new Map() };
    const records = await this.services.loader.load(trx, rt.entityType.entityType, ids, null, undefined, [
      rt.bundle.bundle,
    ]);
    const include = header.filter((h) => rt.fieldsByName.get(h)?.kind === 'relationship');
    const query = this.reads.query(rt, include.length ? `include=${include.join(',')}` : '');
    const doc = (await this.services.documents.document(trx, records, principal, query, {})) as {
      data: Resource[];
      included?: Resource[];
    };
    return { resources: doc.data, included: new Map((doc.included ?? []).map((r) => [`${r.type}:${r.id}`, r])) };
  }

  private preview(
    res: Response,
    rt: ResourceType,
    ui: BundleUi,
    text: string,
    rows: number,
    header: string[],
    shown: { resources: Resource[]; included: Map<string, Resource> },
    problems: CsvProblem[],
  ): void {
    const { csrfToken } = webState(res);
    const path = `/farm/${rt.entityType.entityType}/${rt.bundle.bundle}`;
    const fields = [
      ...new Set(
        header.flatMap((h) => {
          const f = rt.fieldsByName.get(h.replace(/\.id$/, ''));
          return f ? [f] : [];
        }),
      ),
    ];
    const label = rt.fieldsByName.get(rt.entityType.labelField);
    if (label && !fields.includes(label)) fields.unshift(label);
    const ctx = this.lists.renderContext(shown.included);
    const cell = (f: FieldDescriptor, r: Resource) =>
      f.kind === 'relationship'
        ? relationshipValue(r.relationships?.[f.name]?.data, ctx)
        : attributeValue(f, r.attributes?.[f.name], ctx);
    const table = shown.resources.length
      ? html`<div class="table-wrap"><table><caption>${M.sheets.previewIntro(rows, shown.resources.length)}</caption><thead><tr>${fields.map((f) => html`<th scope="col">${f.label}</th>`)}</tr></thead><tbody>${shown.resources.map(
          (r) => html`<tr>${fields.map((f) => html`<td>${cell(f, r)}</td>`)}</tr>`,
        )}</tbody></table></div>`
      : '';
    const mistakes = problems.length
      ? html`<div class="error" role="alert"><p>${M.sheets.problems(problems.length)}</p></div><div class="table-wrap"><table class="problems"><thead><tr><th scope="col">${M.sheets.line}</th><th scope="col">${M.sheets.row}</th><th scope="col">${M.sheets.column}</th><th scope="col">${M.sheets.detail}</th></tr></thead><tbody>${problems.map(
          (p) =>
            html`<tr><td>${String(p.line)}</td><td>${String(p.row)}</td><td>${p.column || M.sheets.whole}</td><td>${p.detail}</td></tr>`,
        )}</tbody></table></div>`
      : '';
    const proceed = problems.length
      ? html`<p class="actions"><a class="button" href="${path}/import">${M.sheets.again}</a><a class="button secondary" href="${path}">${M.bulk.cancel}</a></p>`
      : html`<form class="card" method="post" enctype="multipart/form-data" action="${path}/import">
<input type="hidden" name="csrf_token" value="${csrfToken}"><input type="hidden" name="csv" value="${text}">
<div class="actions"><button class="primary" type="submit" name="step" value="import">${M.sheets.importAll(rows)}</button><a class="button secondary" href="${path}/import">${M.sheets.again}</a></div></form>`;
    this.send(res, problems.length ? 422 : 200, M.sheets.previewTitle(ui.label), html`${mistakes}${table}${proceed}`);
  }

  private done(res: Response, rt: ResourceType, ui: BundleUi, created: number): void {
    const path = `/farm/${rt.entityType.entityType}/${rt.bundle.bundle}`;
    this.send(
      res,
      200,
      M.sheets.importTitle(ui.label),
      html`<p class="notice" role="status">${M.sheets.imported(created, ui.label)}</p><p class="actions"><a class="button" href="${path}">${M.bulk.back}</a></p>`,
    );
  }
}

/** A field a CSV row may set: what a client could send, but files (uploaded on their own) and quantities (records of their own). */
function importable(f: FieldDescriptor): boolean {
  if (f.readOnly || f.internal || f.computed || f.auto || f.type === 'password') return false;
  if (f.type === 'file' || f.type === 'image' || f.storage.kind === 'none') return false;
  if (f.target?.entityType === 'quantity') return false;
  return ![
    'revision_log_message',
    'langcode',
    'default_langcode',
    'revision_default',
    'revision_translation_affected',
  ].includes(f.name);
}

/** The CSV column a JSON:API error's pointer names (`/data/relationships/asset/data/0`: `asset`, or `asset.id` when only that is in the file). */
function columnOf(pointer: string | undefined, header: string[]): string {
  const name = /^\/data\/(?:attributes|relationships)\/([^/]+)/.exec(pointer ?? '')?.[1];
  if (!name) return pointer === '/data/id' ? 'id' : '';
  return header.includes(name) || !header.includes(`${name}.id`) ? name : `${name}.id`;
}

function megabytes(bytes: number): string {
  return `${bytes / (1024 * 1024)} MB`;
}
