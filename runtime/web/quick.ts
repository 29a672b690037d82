/**
 * Quick forms (issue 42 §2): the forms written in YAML (runtime/model/quick.ts, generated/quick/),
 * listed for the person who may use them and each on a page of its own:
 *
 *   GET  /farm/quick            the quick forms this person may use
 *   GET  /farm/quick/<name>     the form, with its defaults
 *   POST /farm/quick/<name>     made: every record in one transaction (usecases/quick-forms.ts), or
 *                               the form again with what was typed and each message at its field
 *
 * A field is drawn and read as the field it is `like` (widgets.ts, reference-options.ts, the record
 * forms' reference resolution), so a quick form accepts what the record's own form accepts. Each
 * record's values are built as a JSON:API resource object and read by the API's input reader, so
 * the records are the API's own. Templated values are text: stored as values, escaped when shown.
 */
import { createReadStream } from 'node:fs';
import { Readable } from 'node:stream';
import express, { type Request, type RequestHandler, type Response, type Router } from 'express';
import type { AppContext } from '../context.ts';
import type { Principal } from '../access/principal.ts';
import type { ResourceType } from '../model/registry.ts';
import type { UiField } from '../model/ui.ts';
import {
  parseTemplate,
  renderTemplate,
  templatePaths,
  wholePath,
  type QuickField,
  type QuickFormDescriptor,
  type QuickRecord,
  type QuickValue,
} from '../model/quick.ts';
import { ApiError } from '../errors.ts';
import { errorObjects } from '../jsonapi/errors.ts';
import type { JsonApiServices } from '../jsonapi/handlers/services.ts';
import { assertMayOnRecord } from '../usecases/access.ts';
import { FileCommands, type ReceivedFile } from '../usecases/files.ts';
import { QuickFormCommands, QuickRecordError, type PlannedRecord } from '../usecases/quick-forms.ts';
import { ALLOWED_EXTENSIONS } from '../files/storage.ts';
import { assertAllowedName, assertImageContent } from '../jsonapi/handlers/files.ts';
import type { Db } from '../storage/records.ts';
import { html, type Html } from './html.ts';
import { M } from './messages.ts';
import { page, sendPage } from './layout.ts';
import { labelOf, recordPath, type Formats } from './format.ts';
import type { WebReads } from './reads.ts';
import { webState, type Form, type WebSessions } from './session.ts';
import type { ListPages } from './lists.ts';
import { ReferenceProblem, type RecordPages } from './records.ts';
import { ReferenceOptionReader, type ReferenceOptions } from './reference-options.ts';
import { MapPages } from './map.ts';
import { applyRowAction, control, fieldId, FORM_ACTION, formAction, sentValues, type FormState } from './widgets.ts';

export const QUICK_PATH = '/farm/quick';

/** Room for the form's other parts beside a photo (as uploads.ts allows). */
const FORM_OVERHEAD_BYTES = 64 * 1024;

/** A resolved reference: what the record's field gets, and its name for templates. */
interface Ref {
  type: string;
  id: string;
  label: string;
}

/** What a path of the form holds once read: its words (templates) and its values (a record's field). */
interface Slot {
  words: string;
  values: unknown[];
}

/** A form the runtime can run: its record types enabled, its fields' targets narrowed to enabled bundles. */
interface Runnable {
  form: QuickFormDescriptor;
  types: ResourceType[];
}

/** Files received with a multipart submission, by input name. */
const receivedFiles = new WeakMap<Request, Map<string, ReceivedFile>>();

export class QuickFormPages {
  private readonly commands: QuickFormCommands;
  private readonly files: FileCommands;
  /** Every form this farm can run, by name, built once. */
  private readonly runnable = new Map<string, Runnable>();

  constructor(
    private readonly ctx: AppContext,
    private readonly services: JsonApiServices,
    private readonly reads: WebReads,
    private readonly sessions: WebSessions,
    private readonly lists: ListPages,
    private readonly formats: Formats,
    private readonly records: RecordPages,
  ) {
    this.commands = new QuickFormCommands(services.commands);
    this.files = new FileCommands(ctx.registry, services.commands, services.entities, ctx.services.files);
    const enabled = new Set(ctx.registry.modules);
    for (const form of ctx.generated.quick.values()) {
      if (form.module && !enabled.has(form.module)) continue;
      const types = form.records.map((r) => ctx.registry.get(r.type));
      if (types.some((t) => !t)) continue;
      // A copy whose references point only at bundles that are switched on (as the registry's own fields do).
      const copy = structuredClone(form);
      const narrow = (fields: QuickField[]) => {
        for (const f of fields) {
          if (f.group) narrow(f.group);
          const target = f.field?.target;
          if (target?.bundles)
            target.bundles = target.bundles.filter((b) =>
              ctx.registry.get(ctx.registry.typeName(target.entityType, b)),
            );
        }
      };
      narrow(copy.fields);
      this.runnable.set(form.name, { form: copy, types: types as ResourceType[] });
    }
  }

  /** The quick forms `principal` may use: its roles or permission, and the right to create every record it makes. */
  offered(principal: Principal): QuickFormDescriptor[] {
    return [...this.runnable.values()].filter((r) => this.mayUse(principal, r)).map((r) => r.form);
  }

  private mayUse(principal: Principal, { form, types }: Runnable): boolean {
    const { roles, permission } = form.access;
    const byRole = roles
      ? roles.some((r) => principal.roles.includes(r)) || principal.roles.includes('administrator')
      : true;
    const byPermission = permission ? principal.permissions.has(permission as never) : true;
    return byRole && byPermission && this.commands.mayCreateAll(principal, types);
  }

  /** The named form for this person, or a 404 (no such form) or 403 (not theirs to use). */
  private find(req: Request, res: Response): Runnable {
    const found = this.runnable.get(String(req.params.name));
    if (!found) throw new ApiError(404, 'There is no such quick form.');
    if (!this.mayUse(webState(res).principal, found)) throw new ApiError(403, 'You may not use this quick form.');
    return found;
  }

  routes(signedIn: RequestHandler, refuseWrites: RequestHandler): Router {
    const router = express.Router();
    const run =
      (handler: (req: Request, res: Response) => Promise<unknown>): RequestHandler =>
      (req, res, next) =>
        handler(req, res).catch(next);
    router.get(
      QUICK_PATH,
      signedIn,
      run(async (_req, res) => this.index(res)),
    );
    router.get(
      `${QUICK_PATH}/:name`,
      signedIn,
      run(async (req, res) => {
        const { form } = this.find(req, res);
        await this.render(res, 200, form, {
          values: this.prefilled(form, req),
          errors: new Map(),
          general: [],
          version: '',
        });
      }),
    );
    router.post(
      `${QUICK_PATH}/:name`,
      signedIn,
      refuseWrites,
      // Who may use the form is checked before a byte of the body is read.
      (req, res, next) => {
        try {
          this.find(req, res);
          next();
        } catch (error) {
          next(error);
        }
      },
      (req, res, next) => {
        this.readBody(req, res).then(() => next(), next);
      },
      this.sessions.checkCsrf,
      run(async (req, res) => this.submit(req, res)),
    );
    return router;
  }

  /** GET /farm/quick. */
  private index(res: Response): void {
    const { principal } = webState(res);
    const forms = this.offered(principal);
    const body = forms.length
      ? html`<ul class="plain quick-list">${forms.map(
          (f) =>
            html`<li><a href="${QUICK_PATH}/${f.name}">${f.title}</a>${f.description ? html`<p class="help">${f.description}</p>` : ''}</li>`,
        )}</ul>`
      : html`<p class="muted">${M.quick.none}</p>`;
    this.send(res, 200, M.quick.title, html`<section class="card">${body}</section>`);
  }

  /** Links to the forms this person may use (the dashboard's block and the navigation). */
  links(principal: Principal): Array<{ href: string; label: string }> {
    return this.offered(principal).map((f) => ({ href: `${QUICK_PATH}/${f.name}`, label: f.title }));
  }

  private send(res: Response, status: number, title: string, body: Html, assets: string[] = []): void {
    const state = webState(res);
    sendPage(res, status, page(title, this.sessions.chrome(state, this.lists.nav(state.principal)), body, { assets }));
  }

  /** The values a form opens with: its fields' defaults (now and today in the farm's time zone). */
  private defaults(form: QuickFormDescriptor): Map<string, string[]> {
    const values = new Map<string, string[]>();
    for (const f of form.fields) {
      if (!f.group) this.putDefault(values, f, f.name);
      else if (f.repeat) {
        const rows = Math.max(1, f.repeat.min);
        values.set(rowsKey(f.name), [String(rows)]);
        for (let i = 0; i < rows; i++) this.putRowDefaults(values, f, i);
      } else {
        if (f.optional) values.set(switchKey(f.name), f.optional.default ? ['1'] : []);
        for (const g of f.group) this.putDefault(values, g, `${f.name}.${g.name}`);
      }
    }
    return values;
  }

  /**
   * The values a form opens with: its defaults, and a field of the form given in the address
   * (`/farm/quick/movement?asset=<uuid>&asset=<uuid>`), as farmOS's quick forms take `asset`.
   */
  private prefilled(form: QuickFormDescriptor, req: Request): Map<string, string[]> {
    const values = this.defaults(form);
    const query = new URL(req.originalUrl, 'http://x').searchParams;
    for (const f of form.fields) {
      if (f.group || f.field?.type === 'file' || f.field?.type === 'image') continue;
      const given = query.getAll(f.name).filter((v) => v.trim() !== '');
      if (given.length) values.set(f.name, f.field?.multiple ? given : given.slice(0, 1));
    }
    return values;
  }

  /** A field's default as its input holds it. */
  private putDefault(values: Map<string, string[]>, f: QuickField, name: string): void {
    if (f.default === undefined) return;
    if (f.default === 'now' || f.default === 'today') {
      const now = this.formats.inputDateTime(new Date().toISOString());
      values.set(name, [f.default === 'today' ? `${now.slice(0, 10)}T00:00` : now.slice(0, 16)]);
    } else if (f.widget === 'checkbox') values.set(name, f.default === true ? ['1'] : []);
    else values.set(name, [String(f.default)]);
  }

  /** A repeating group's row `i` as it opens (a row added on the page too): its fields' defaults. */
  private putRowDefaults(values: Map<string, string[]>, group: QuickField, i: number): void {
    for (const g of group.group!) this.putDefault(values, g, `${group.name}.${i}.${g.name}`);
  }

  /** The body: a urlencoded form (session.ts formBody), or multipart when the form asks a photo. */
  private async readBody(req: Request, res: Response): Promise<void> {
    const type = String(req.headers['content-type'] ?? '');
    if (!/^multipart\/form-data\s*;/i.test(type)) {
      await new Promise<void>((resolve, reject) =>
        this.sessions.formBody(req, res, (error?: unknown) => (error ? reject(error) : resolve())),
      );
      return;
    }
    const store = this.ctx.services.files;
    const body = await store.receive(req, {
      maxBytes: this.ctx.config.uploadMaxBytes + FORM_OVERHEAD_BYTES,
      stallMs: this.ctx.config.bodyTimeoutSeconds * 1000,
    });
    let parsed: FormData;
    try {
      parsed = await new globalThis.Response(Readable.toWeb(createReadStream(body.tmp)) as ReadableStream, {
        headers: { 'content-type': type },
      }).formData();
    } catch {
      throw new ApiError(400, 'The form could not be read.');
    } finally {
      store.discard(body.tmp);
    }
    const form: Form = new Map();
    const files = new Map<string, ReceivedFile>();
    for (const [name, value] of parsed) {
      if (typeof value === 'string') form.set(name, [...(form.get(name) ?? []), value.replace(/\r\n?/g, '\n')]);
      else if (value.name && value.size > 0) {
        const received = await store.receive(
          Readable.fromWeb(value.stream() as import('node:stream/web').ReadableStream),
        );
        // One file per field: a second part of the same name is let go, its spool file with it.
        if (files.has(name)) store.discard(received.tmp);
        else files.set(name, { ...received, filename: value.name.split(/[\\/]/).pop()! });
      }
    }
    req.body = form;
    receivedFiles.set(req, files);
  }

  /** POST /farm/quick/<name> (after the CSRF check). */
  private async submit(req: Request, res: Response): Promise<void> {
    const files = receivedFiles.get(req) ?? new Map<string, ReceivedFile>();
    try {
      await this.submitForm(req, res, files);
    } finally {
      for (const received of files.values()) this.ctx.services.files.discard(received.tmp);
    }
  }

  private async submitForm(req: Request, res: Response, files: Map<string, ReceivedFile>): Promise<void> {
    const { principal } = webState(res);
    const { form } = this.find(req, res);
    const sent = req.body as Form;
    const values = new Map(sent);
    values.delete('csrf_token');
    const state: FormState = { values, errors: new Map(), general: [], version: '' };

    // A button that changes the form: rows added or removed, records found; nothing is saved.
    const action = formAction(sent);
    if (action) {
      const group = form.fields.find((f) => f.name === action.name && f.repeat);
      if (group && action.kind === 'add') {
        const rows = rowCount(values, group);
        if (rows < group.repeat!.max) {
          values.set(rowsKey(group.name), [String(rows + 1)]);
          this.putRowDefaults(values, group, rows);
        }
      } else if (group && action.kind === 'remove') {
        removeRow(values, group, action.index);
      } else if (action.kind !== 'find') applyRowAction(values, action);
      return this.render(res, 200, form, state, action.kind === 'find' ? action.name : null);
    }

    // Asked fields: required ones filled, repeating groups within their bounds.
    const check = (f: QuickField, name: string) => {
      if (f.field?.type === 'file' || f.field?.type === 'image') {
        if (f.required && !files.has(name)) state.errors.set(name, [M.quick.required]);
        return;
      }
      if (f.required && !this.typed(f, values.get(name) ?? []).length) state.errors.set(name, [M.quick.required]);
    };
    for (const f of form.fields) {
      if (!f.group) check(f, f.name);
      else if (!f.repeat) {
        if (switchedOn(values, f)) for (const g of f.group) check(g, `${f.name}.${g.name}`);
      } else {
        const rows = rowCount(values, f);
        if (rows < f.repeat.min || rows > f.repeat.max)
          state.general.push(M.quick.rows(f.label, f.repeat.min, f.repeat.max));
        for (let i = 0; i < rows; i++) for (const g of f.group) check(g, `${f.name}.${i}.${g.name}`);
      }
    }
    for (const [name, received] of files) {
      const f = this.fieldAt(form, name);
      // A file sent for what takes none (a crafted post: a date, a name) is not the form's: let go.
      if (f?.field?.type !== 'file' && f?.field?.type !== 'image') {
        this.ctx.services.files.discard(received.tmp);
        files.delete(name);
        continue;
      }
      try {
        assertAllowedName(f.field, received.filename);
        await assertImageContent(this.ctx.services.files, f.field, received);
      } catch (error) {
        if (!(error instanceof ApiError)) throw error;
        state.errors.set(name, [error.message]);
      }
    }
    // A field filled that needs another (Movement's geometry, its location), as farmOS's forms refuse it.
    const needs = (f: QuickField, name: string, row: number | null) => {
      if (!f.needs || !this.typed(f, values.get(name) ?? []).length) return;
      const other = this.fieldAt(form, inputName(form, f.needs, row));
      if (!this.filled(form, values, f.needs, row, files))
        state.errors.set(name, [M.quick.needs(other?.label ?? f.needs)]);
    };
    for (const f of form.fields) {
      if (!f.group) needs(f, f.name, null);
      else if (!f.repeat) {
        if (switchedOn(values, f)) for (const g of f.group) needs(g, `${f.name}.${g.name}`, null);
      } else
        for (let i = 0; i < rowCount(values, f); i++) for (const g of f.group) needs(g, `${f.name}.${i}.${g.name}`, i);
    }
    if (state.errors.size || state.general.length) return this.render(res, 422, form, state);

    // The plan: each record once, or once per row of its repeating group, when its `when` holds.
    const slots = new Map<string, Slot>();
    const refs = new Map<string, Ref[]>();
    const related = new Map<string, Slot>();
    const placed: string[] = [];
    const slot = (path: string, row: number | null): Slot => this.slot(form, values, refs, related, slots, path, row);
    const sources = new Map<number, Map<string, string>>();
    const plan: Array<PlannedRecord & { label: string }> = [];
    // The fields the planned records read: only their references are resolved (a unit left at its default makes no term).
    const used = new Set<string>();
    const planRecords = (has: (path: string, row: number | null) => boolean) => {
      for (const record of form.records) {
        const rt = this.ctx.registry.get(record.type)!;
        const group = record.forEach ? form.fields.find((f) => f.name === record.forEach) : undefined;
        const rows: Array<number | null> = group ? [...Array(rowCount(values, group)).keys()] : [null];
        for (const row of rows) {
          if (record.when && !has(record.when, row)) continue;
          const index = plan.length;
          const fieldSources = new Map<string, string>();
          sources.set(index, fieldSources);
          for (const path of valuePaths(record)) used.add(path.split('.')[0]!);
          plan.push({
            key: record.id,
            ...(row !== null ? { rowKey: `${record.id}#${row}` } : {}),
            rt,
            label: rt.bundle.label,
            read: async (trx, made) => {
              // `{ record: <id> }` in a record made per row: the row's own when <id> is made per row of the same group.
              const recordsOf = (id: string) =>
                row !== null && form.records.find((r) => r.id === id)?.forEach === record.forEach
                  ? (made.get(`${id}#${row}`) ?? [])
                  : (made.get(id) ?? []);
              const doc = this.resource(
                rt,
                record.values,
                (path) => slot(path, row),
                recordsOf,
                (field, path) => fieldSources.set(field, inputName(form, path, row)),
              );
              return this.services.input.read(trx, rt, { data: { type: rt.type, ...doc } });
            },
          });
        }
      }
    };
    // A record's `when` reads what was typed (references are resolved in the transaction).
    planRecords((path, row) => this.filled(form, values, path, row, files));
    let made: Awaited<ReturnType<QuickFormCommands['submit']>>;
    try {
      made = await this.commands.submit(principal, plan, async (trx) => {
        slots.clear();
        await this.resolveAll(trx, form, values, principal, refs, used);
        await this.readRelated(form, refs, related, principal);
        for (const [name, received] of files) {
          const f = this.fieldAt(form, name);
          if (!f?.field) continue;
          const rt = this.ctx.registry.get(f.from ?? '') ?? this.ctx.registry.get(form.records[0]!.type)!;
          refs.set(name, [
            { ...(await this.files.placeIn(trx, principal, rt, received, placed)), label: received.filename },
          ]);
        }
        slots.clear();
      });
    } catch (error) {
      this.files.removePlaced(placed);
      if (error instanceof ReferenceProblem) {
        state.errors.set(error.field, [error.message]);
        return this.render(res, 422, form, state);
      }
      if (error instanceof QuickRecordError) {
        const planned = plan[error.index];
        for (const object of errorObjects(error.error)) {
          const name = /^\/data\/(?:attributes|relationships)\/([^/]+)/.exec(object.source?.pointer ?? '')?.[1];
          const input = name ? sources.get(error.index)?.get(name) : undefined;
          if (input) state.errors.set(input, [...(state.errors.get(input) ?? []), object.detail]);
          else state.general.push(M.quick.recordProblem(planned?.label ?? '', object.detail));
        }
        return this.render(res, 422, form, state);
      }
      throw error;
    }
    // To the page of the last record made (the log, as farmOS's quick forms end on it).
    const last = plan[plan.length - 1];
    const shown = last ? made.get(last.key)?.at(-1) : undefined;
    res.redirect(303, shown ? `${recordPath(shown)}?saved=created` : `${QUICK_PATH}/${form.name}`);
  }

  /** Whether a path was filled in (a file sent, a box ticked, text typed), or an optional group ticked: a `when`, a `needs`. */
  private filled(
    form: QuickFormDescriptor,
    values: Map<string, string[]>,
    path: string,
    row: number | null,
    files: ReadonlyMap<string, unknown> = new Map(),
  ): boolean {
    const [head, sub] = path.split('.');
    const top = form.fields.find((f) => f.name === head);
    if (top?.optional && (!sub || !switchedOn(values, top))) return switchedOn(values, top);
    const name = inputName(form, path.split('.').slice(0, 2).join('.'), row);
    return (
      files.has(name) || this.typed(this.fieldAt(form, name) ?? form.fields[0]!, values.get(name) ?? []).length > 0
    );
  }

  /** The asked field an input name belongs to (`quantity.value`, `children.2.name`). */
  private fieldAt(form: QuickFormDescriptor, name: string): QuickField | undefined {
    const [head, a, b] = name.split('.');
    const top = form.fields.find((f) => f.name === head);
    if (!top?.group) return top;
    return top.group.find((g) => g.name === (top.repeat ? b : a));
  }

  /** What was typed in a field's input(s), blank rows left out. */
  private typed(f: QuickField, sent: string[]): string[] {
    return f.field ? sentValues(f.field, uiField(f, ''), sent) : sent.filter((v) => v.trim() !== '');
  }

  /** Every reference typed, resolved as the record forms resolve it, each checked as one the person may see. */
  private async resolveAll(
    trx: Db,
    form: QuickFormDescriptor,
    values: Map<string, string[]>,
    principal: Principal,
    refs: Map<string, Ref[]>,
    used: ReadonlySet<string>,
  ): Promise<void> {
    const one = async (f: QuickField, name: string) => {
      const d = f.field;
      if (!d || d.kind !== 'relationship' || d.type === 'file' || d.type === 'image') return;
      const list: Ref[] = [];
      for (const typed of this.typed(f, values.get(name) ?? [])) {
        const ref = await this.records.resolveReference(trx, d, typed, principal, name);
        const [entityType, bundle] = ref.type.split('--') as [string, string];
        const record = await this.services.loader.loadByUuid(trx, entityType, ref.id, bundle, null);
        if (!record) throw new ReferenceProblem(name, M.form.notFoundReference(typed));
        assertMayOnRecord(principal, record, 'view');
        const labelField = this.ctx.registry.model.entityTypes[entityType]?.labelField ?? 'name';
        list.push({ ...ref, label: String(record.values.get(labelField) ?? '') });
      }
      refs.set(name, list);
    };
    for (const f of form.fields) {
      if (!used.has(f.name)) continue;
      if (!f.group) await one(f, f.name);
      else if (!f.repeat) {
        if (switchedOn(values, f)) for (const g of f.group) await one(g, `${f.name}.${g.name}`);
      } else
        for (let i = 0; i < rowCount(values, f); i++) for (const g of f.group) await one(g, `${f.name}.${i}.${g.name}`);
    }
  }

  /**
   * What a path holds: an asked field's values (references resolved), a group's row, a
   * reference's name, or a field of the record a reference names (read as the API shows it to
   * this person). `row`: the repeating group's row of the record being made.
   */
  private slot(
    form: QuickFormDescriptor,
    values: Map<string, string[]>,
    refs: Map<string, Ref[]>,
    related: Map<string, Slot>,
    memo: Map<string, Slot>,
    path: string,
    row: number | null,
  ): Slot {
    const key = `${row ?? ''}|${path}`;
    const known = memo.get(key);
    if (known) return known;
    const parts = path.split('.');
    const top = form.fields.find((f) => f.name === parts[0])!;
    let leaf = top;
    let name = top.name;
    let rest = parts.slice(1);
    if (top.group) {
      if (!rest.length) {
        const rows = top.repeat ? rowCount(values, top) : switchedOn(values, top) ? 1 : 0;
        const found: Slot = { words: rows ? String(rows) : '', values: [] };
        memo.set(key, found);
        return found;
      }
      if (!switchedOn(values, top)) {
        // An optional group left unticked: its fields read as empty, whatever was typed in them.
        const none: Slot = { words: '', values: [] };
        memo.set(key, none);
        return none;
      }
      if (top.repeat && row === null) {
        // Every row's, outside a record made per row: "Birth: Daisy, Clover".
        const each = [...Array(rowCount(values, top)).keys()].map((i) =>
          this.slot(form, values, refs, related, memo, path, i),
        );
        const all: Slot = {
          words: each
            .map((x) => x.words)
            .filter(Boolean)
            .join(', '),
          values: each.flatMap((x) => x.values),
        };
        memo.set(key, all);
        return all;
      }
      leaf = top.group.find((g) => g.name === rest[0])!;
      name = top.repeat ? `${top.name}.${row ?? 0}.${leaf.name}` : `${top.name}.${leaf.name}`;
      rest = rest.slice(1);
    }
    let found: Slot;
    const d = leaf.field!;
    if (d.kind === 'relationship' || d.type === 'file' || d.type === 'image') {
      const list = refs.get(name) ?? [];
      if (rest.length && !['name', 'label'].includes(rest[0]!)) {
        // A field of the referenced record: its cached read (loaded before the transaction's templates run).
        found = related.get(`${list[0]?.id ?? ''}|${rest[0]}`) ?? { words: '', values: [] };
      } else
        found = {
          words: list.map((r) => r.label).join(', '),
          values: rest.length ? list.map((r) => r.label) : list.map((r) => ({ type: r.type, id: r.id })),
        };
    } else {
      const typed = this.typed(leaf, values.get(name) ?? []);
      const attribute = typed.map((t) => this.attribute(leaf, t)).filter((v) => v !== null);
      if (leaf.widget === 'checkbox') {
        const on = (values.get(name) ?? []).includes('1');
        found = { words: on ? '1' : '', values: [on] };
      } else found = { words: typed.join(', '), values: attribute };
    }
    memo.set(key, found);
    return found;
  }

  /**
   * Fields of referenced records that the form's values name (`mother.animal_type`), read as the
   * API shows them to this person, keyed `<uuid>|<field>`: a reference's value is the records it
   * names, its words their names.
   */
  private async readRelated(
    form: QuickFormDescriptor,
    refs: Map<string, Ref[]>,
    related: Map<string, Slot>,
    principal: Principal,
  ): Promise<void> {
    const wanted = new Set<string>();
    for (const record of form.records) for (const p of valuePaths(record)) wanted.add(p);
    for (const path of wanted) {
      const parts = path.split('.');
      const top = form.fields.find((f) => f.name === parts[0]);
      if (!top || top.group) continue; // a reference's fields are read for top-level fields
      const field = parts[1];
      if (!field || field === 'name' || field === 'label') continue;
      for (const ref of refs.get(top.name) ?? []) {
        const rt = this.ctx.registry.get(ref.type);
        if (!rt) continue;
        const d = rt.fieldsByName.get(field);
        if (!d) continue;
        const { resource, included } = await this.reads.record(
          rt,
          ref.id,
          principal,
          d.kind === 'relationship' ? [d.name] : [],
        );
        let slot: Slot;
        if (d.kind === 'relationship') {
          const data = resource.relationships?.[d.name]?.data;
          const ids = Array.isArray(data) ? data : data ? [data] : [];
          slot = {
            words: ids
              .map((r) =>
                labelOf(included.get(`${r.type}:${r.id}`), this.ctx.registry.get(r.type)?.entityType.labelField),
              )
              .join(', '),
            values: ids.map((r) => ({ type: r.type, id: r.id })),
          };
        } else {
          const value = resource.attributes?.[d.name];
          const list = Array.isArray(value) ? value : value === null || value === undefined ? [] : [value];
          slot = {
            words: list.map((v) => (typeof v === 'object' ? JSON.stringify(v) : String(v))).join(', '),
            values: list,
          };
        }
        related.set(`${ref.id}|${field}`, slot);
      }
    }
  }

  /** A typed text as the attribute value the API reads (records.ts document does the same for a record's form). */
  private attribute(f: QuickField, text: string): unknown {
    switch (f.widget) {
      case 'number':
        return /^-?\d+$/.test(text.trim()) ? Number(text.trim()) : text;
      case 'datetime':
      case 'date': {
        const at = this.formats.parseInputDateTime(text);
        return at ? at.toISOString().replace(/\.\d{3}Z$/, '+00:00') : text;
      }
      case 'id_tag': {
        const [type, ...rest] = text.split(':');
        return rest.length ? { type: type!.trim(), id: rest.join(':').trim() } : { id: text.trim() };
      }
      default:
        return text;
    }
  }

  /** A record's JSON:API attributes and relationships from its `values`. `source`: which asked path fed each field. */
  private resource(
    rt: ResourceType,
    spec: Record<string, QuickValue>,
    slot: (path: string) => Slot,
    made: (id: string) => ReadonlyArray<{ type: string; id: string }>,
    source: (field: string, path: string) => void,
  ): { attributes: Record<string, unknown>; relationships: Record<string, unknown> } {
    const attributes: Record<string, unknown> = {};
    const relationships: Record<string, unknown> = {};
    for (const [name, value] of Object.entries(spec)) {
      const d = rt.fieldsByName.get(name);
      if (!d) continue;
      const list = this.evaluate(value, slot, made, (path) => source(d.name, path));
      if (d.kind === 'relationship') {
        const ids = list.filter(
          (v): v is { type: string; id: string } => typeof v === 'object' && v !== null && 'id' in v,
        );
        if (d.multiple) relationships[d.name] = { data: ids };
        else if (ids.length) relationships[d.name] = { data: ids[0] };
      } else {
        const kept = list.filter((v) => v !== '' && v !== null && v !== undefined);
        if (d.multiple) attributes[d.name] = kept;
        else if (kept.length) attributes[d.name] = kept[0];
      }
    }
    return { attributes, relationships };
  }

  /** A value of `values` as a list: literals, a path's values, a template's text, the records made before, a choice. */
  private evaluate(
    value: QuickValue,
    slot: (path: string) => Slot,
    made: (id: string) => ReadonlyArray<{ type: string; id: string }>,
    seen: (path: string) => void,
  ): unknown[] {
    if (Array.isArray(value)) return value.flatMap((v) => this.evaluate(v, slot, made, seen));
    if (typeof value === 'object' && 'if' in value) {
      const chosen = hasValue(slot(value.if)) ? value.then : value.else;
      return chosen === undefined ? [] : this.evaluate(chosen, slot, made, seen);
    }
    if (typeof value === 'object') return [...made(value.record)];
    if (typeof value !== 'string') return [value];
    const whole = wholePath(value);
    if (whole) {
      seen(whole);
      return slot(whole).values;
    }
    const nodes = parseTemplate(value);
    const text = renderTemplate(nodes, (path) => {
      seen(path);
      return slot(path).words;
    });
    return [text.replace(/\s+/g, ' ').trim()];
  }

  /** The form page: its fields (groups as fieldsets, a repeating group's rows each with Remove), the problems, Save. */
  private async render(
    res: Response,
    status: number,
    form: QuickFormDescriptor,
    state: FormState,
    find: string | null = null,
  ): Promise<void> {
    const { csrfToken, principal } = webState(res);
    const reader = new ReferenceOptionReader(this.ctx, this.reads, principal);
    let multipart = false;
    // A geometry field is drawn on the map, as a record's form draws it (map.ts widgetSpec).
    const wkt = (fields: QuickField[]): boolean => fields.some((f) => (f.group ? wkt(f.group) : f.widget === 'wkt'));
    const geometry = wkt(form.fields) ? await MapPages.of(this.ctx).widgetSpec(principal) : undefined;
    const draw = async (f: QuickField, name: string): Promise<Html> => {
      const d = f.field!;
      if (d.type === 'file' || d.type === 'image') {
        multipart = true;
        const id = fieldId(name);
        const errors = state.errors.get(name) ?? [];
        const extensions = ALLOWED_EXTENSIONS[d.type] ?? [];
        return html`<div class="control"><label for="${id}">${f.label}${f.required ? html` <span class="required">(${M.form.required})</span>` : ''}</label><input type="file" id="${id}" name="${name}" accept="${d.type === 'image' ? 'image/*' : extensions.map((e) => `.${e}`).join(',')}" aria-describedby="${id}-help${errors.length ? ` ${id}-error` : ''}"${errors.length ? html` aria-invalid="true"` : ''}><p class="help" id="${id}-help">${f.description ? `${f.description} ` : ''}${M.widgets.uploadHelp(extensions.join(', '))}</p>${errors.length ? html`<p class="field-error" id="${id}-error">${errors.join(' ')}</p>` : ''}</div>`;
      }
      let references: ReferenceOptions | undefined;
      if (d.kind === 'relationship' && (f.widget === 'reference' || f.widget === 'select')) {
        const typed = (state.values.get(name) ?? []).filter((v) => v.trim() !== '');
        const search =
          find === name ? (typed[typed.length - 1] ?? '').replace(/\s*\[[0-9a-fA-F-]{36}\]\s*$/, '') : null;
        references = await reader.options(d, search || null);
      }
      return control(d, uiField(f, name), state, {
        name,
        references,
        createsTerms: d.kind === 'relationship' && this.records.newTermVocabulary(d, principal) !== undefined,
        geometry: f.widget === 'wkt' ? geometry : undefined,
      });
    };
    const parts: Html[] = [];
    for (const f of form.fields) {
      if (!f.group) {
        parts.push(await draw(f, f.name));
        continue;
      }
      if (!f.repeat) {
        const inner: Html[] = [];
        if (f.optional) {
          // Its box first: the group is recorded only when it is ticked.
          const id = fieldId(switchKey(f.name));
          const on = (state.values.get(switchKey(f.name)) ?? []).includes('1');
          inner.push(
            html`<div class="control switch"><label class="choice" for="${id}"><input type="checkbox" id="${id}" name="${switchKey(f.name)}" value="1"${on ? ' checked' : ''}> ${f.optional.label}</label></div>`,
          );
        }
        for (const g of f.group) inner.push(await draw(g, `${f.name}.${g.name}`));
        parts.push(
          html`<fieldset${f.optional ? html` class="optional"` : ''}><legend>${f.label}</legend>${f.description ? html`<p class="help">${f.description}</p>` : ''}${inner}</fieldset>`,
        );
        continue;
      }
      const rows = rowCount(state.values, f);
      const drawn: Html[] = [];
      for (let i = 0; i < rows; i++) {
        const inner: Html[] = [];
        for (const g of f.group) inner.push(await draw(g, `${f.name}.${i}.${g.name}`));
        drawn.push(
          html`<fieldset class="component"><legend>${M.quick.row(f.label, i + 1)}</legend>${inner}${
            rows > Math.max(1, f.repeat.min)
              ? html`<div class="actions"><input class="button secondary" type="submit" name="${FORM_ACTION}remove:${f.name}:${i}" value="${M.widgets.remove}" formnovalidate aria-label="${M.quick.removeRow(f.label, i + 1)}"></div>`
              : ''
          }</fieldset>`,
        );
      }
      parts.push(
        html`<fieldset><legend>${f.label}</legend>${f.description ? html`<p class="help">${f.description}</p>` : ''}<input type="hidden" name="${rowsKey(f.name)}" value="${String(rows)}">${drawn}${
          rows < f.repeat.max
            ? html`<div class="actions"><input class="button secondary" type="submit" name="${FORM_ACTION}add:${f.name}" value="${M.quick.addRow(f.label)}" formnovalidate></div>`
            : ''
        }</fieldset>`,
      );
    }
    const problems =
      state.general.length || state.errors.size
        ? html`<div class="error" role="alert"><p>${M.form.problems}</p>${state.general.map((g) => html`<p>${g}</p>`)}</div>`
        : '';
    const body = html`${problems}${form.description ? html`<p>${form.description}</p>` : ''}<form class="record card" method="post" action="${QUICK_PATH}/${form.name}"${multipart ? html` enctype="multipart/form-data"` : ''} novalidate>
<input class="default-submit" type="submit" tabindex="-1" value="${M.form.save}">
<input type="hidden" name="csrf_token" value="${csrfToken}">
${parts}
<div class="actions"><button class="primary" type="submit">${M.quick.submit}</button><a class="button secondary" href="${QUICK_PATH}">${M.form.cancel}</a></div>
</form>`;
    this.send(res, status, form.title, body, geometry ? ['map'] : []);
  }
}

/** The box that switches an optional group on. */
function switchKey(group: string): string {
  return `${group}._on`;
}

/** Whether a group is recorded: always, unless it is optional and its box is not ticked. */
function switchedOn(values: Map<string, string[]>, group: QuickField | undefined): boolean {
  return !group?.optional || (values.get(switchKey(group.name)) ?? []).includes('1');
}

/** Whether a path has a value, as a template's `{{#path}}` reads it. */
function hasValue(slot: Slot): boolean {
  return slot.words !== '' || slot.values.some((v) => typeof v === 'object' && v !== null);
}

/** Every path a record reads: its `when`, its values' paths and templates, and their `if`s. */
function valuePaths(record: QuickRecord): string[] {
  const out: string[] = record.when ? [record.when] : [];
  const collect = (value: QuickValue): void => {
    if (Array.isArray(value)) return value.forEach(collect);
    if (typeof value === 'object' && 'if' in value) {
      out.push(value.if);
      if (value.then !== undefined) collect(value.then);
      if (value.else !== undefined) collect(value.else);
      return;
    }
    if (typeof value !== 'string') return;
    const whole = wholePath(value);
    out.push(...(whole ? [whole] : templatePaths(parseTemplate(value))));
  };
  Object.values(record.values).forEach(collect);
  return out;
}

/** The hidden input holding how many rows a repeating group has. */
function rowsKey(group: string): string {
  return `${group}._rows`;
}

function rowCount(values: Map<string, string[]>, group: QuickField): number {
  const n = Number(values.get(rowsKey(group.name))?.[0] ?? Math.max(1, group.repeat?.min ?? 1));
  return Number.isInteger(n) && n >= 0 ? Math.min(n, group.repeat?.max ?? 1) : 1;
}

/** A repeating group's row removed: the rows below it move up. */
function removeRow(values: Map<string, string[]>, group: QuickField, index: number): void {
  const rows = rowCount(values, group);
  if (index < 0 || index >= rows) return;
  for (let i = index; i < rows - 1; i++)
    for (const g of group.group!)
      values.set(`${group.name}.${i}.${g.name}`, values.get(`${group.name}.${i + 1}.${g.name}`) ?? []);
  for (const g of group.group!) values.delete(`${group.name}.${rows - 1}.${g.name}`);
  values.set(rowsKey(group.name), [String(rows - 1)]);
}

/** The input a path's value was typed in (for a message beside it). */
function inputName(form: QuickFormDescriptor, path: string, row: number | null): string {
  const [head, sub] = path.split('.');
  const top = form.fields.find((f) => f.name === head);
  if (!top?.group || !sub) return head!;
  return top.repeat ? `${head}.${row ?? 0}.${sub}` : `${head}.${sub}`;
}

/** A quick field as the widgets draw it. */
function uiField(f: QuickField, _name: string): UiField {
  return {
    name: f.name,
    label: f.label,
    ...(f.description ? { description: f.description } : {}),
    section: 'main',
    widget: f.widget,
    required: f.required,
    multiple: f.field?.multiple ?? false,
  };
}
