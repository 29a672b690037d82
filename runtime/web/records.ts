/**
 * A record's page and its create and edit forms, for every bundle alike, from its generated UI
 * description. Saving goes through the JSON:API face's input reader and the entity service, in
 * one transaction, as POST and PATCH do (jsonapi/handlers/create.ts, individual.ts): the same
 * coercion, checks, defaults, farm behaviour, revisions and change feed. An edit carries the
 * version the form was opened at and is refused, as If-Match refuses it, when the record changed
 * since; a 422's messages are shown beside their fields with everything typed kept.
 */
// The geometry widget's settings (the farm map, issue 42).
import { MapPages } from './map.ts';
import type { Request, Response } from 'express';
import type { Knex } from 'knex';
import type { AppContext } from '../context.ts';
import type { ResourceType } from '../model/registry.ts';
import type { BundleUi, UiField } from '../model/ui.ts';
import type { FieldDescriptor } from '../model/descriptor.ts';
import { assertMayOnType, mayOnType } from '../access/policy.ts';
import type { Principal } from '../access/principal.ts';
import { ApiError, ValidationError } from '../errors.ts';
import type { EntityRecord } from '../storage/records.ts';
import { StaleVersionError } from '../usecases/if-match.ts';
import { errorObjects } from '../jsonapi/errors.ts';
import { UUID } from '../jsonapi/input.ts';
import type { JsonApiServices } from '../jsonapi/handlers/services.ts';
import { fetchPage } from '../jsonapi/collection/page.ts';
import { html, type Html } from './html.ts';
import { M } from './messages.ts';
import { page, sendPage } from './layout.ts';
import { labelOf, recordPath, type Formats, type Resource } from './format.ts';
import type { WebReads } from './reads.ts';
import { formValue, safeReturn, webState, type Form, type WebSessions } from './session.ts';
import { TASKS, type ListPages } from './lists.ts';
import { dependentsOnDelete } from '../farm/hooks.ts';
import { applyRowAction, control, formAction, sentValues, type FormState } from './widgets.ts';
import { ComponentForms, isComponentField, type ComponentRowState } from './quantities-form.ts';
import { ReferenceOptionReader, type ReferenceOptions } from './reference-options.ts';
import { ComponentCommands, ComponentError, type ComponentRow } from '../usecases/components.ts';
import { UploadPages } from './uploads.ts';

/** A submitted value that names no record the field may point at: a 422 of the form's own. */
export class ReferenceProblem extends Error {
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(message);
  }
}

export class RecordPages {
  /** A log's quantities on its form (quantities-form.ts), saved with it in one transaction (usecases/components.ts). */
  private readonly components: ComponentForms;
  private readonly componentCommands: ComponentCommands;
  /** File and image fields' uploads, on the edit page (uploads.ts). */
  readonly uploads: UploadPages;

  constructor(
    private readonly ctx: AppContext,
    private readonly services: JsonApiServices,
    private readonly reads: WebReads,
    private readonly sessions: WebSessions,
    private readonly lists: ListPages,
    private readonly formats: Formats,
  ) {
    this.components = new ComponentForms(ctx);
    this.componentCommands = new ComponentCommands(services.commands, services.entities, services.loader);
    this.uploads = new UploadPages(ctx, services, sessions);
  }

  private send(res: Response, status: number, title: string, body: Html, assets: string[] = []): void {
    const state = webState(res);
    sendPage(res, status, page(title, this.sessions.chrome(state, this.lists.nav(state.principal)), body, { assets }));
  }

  private field(rt: ResourceType, f: UiField): FieldDescriptor | undefined {
    return rt.fieldsByName.get(f.name);
  }

  /** GET /farm/<type>/<bundle>/new and /<uuid>/edit. */
  async form(
    res: Response,
    rt: ResourceType,
    ui: BundleUi,
    uuid: string | null,
    prefill?: URLSearchParams,
  ): Promise<void> {
    const { principal } = webState(res);
    if (uuid === null) {
      assertMayOnType(principal, rt.entityType, 'create', `${rt.type} resources`);
      const values = new Map<string, string[]>();
      for (const f of ui.fields) {
        const d = this.field(rt, f);
        if (d && f.widget && d.default !== undefined && typeof d.default !== 'object')
          values.set(f.name, [String(d.default)]);
        // A field named in the query string starts with its values there (a link's "record a log
        // here", map.ts): only what a person could type, and checked as typed when saved.
        const given = prefill?.getAll(f.name).filter((v) => v.length <= 1000);
        if (d && f.widget && f.widget !== 'file' && !isComponentField(d) && given?.length)
          values.set(f.name, given.slice(0, 20));
      }
      return this.renderForm(res, 200, rt, ui, null, { values, errors: new Map(), general: [], version: '' });
    }
    const { resource, values, version } = await this.storedForm(principal, rt, ui, uuid);
    await this.renderForm(res, 200, rt, ui, resource, {
      values,
      errors: new Map(),
      general: [],
      version,
      originals: values,
    });
  }

  /** An edit form's values for the record as it is now, and its version; refused to whom may not update it. */
  private async storedForm(
    principal: Principal,
    rt: ResourceType,
    ui: BundleUi,
    uuid: string,
  ): Promise<{ resource: Resource; values: Map<string, string[]>; version: string; record: EntityRecord }> {
    const { resource, included, version } = await this.reads.record(
      rt,
      uuid,
      principal,
      ui.fields
        .filter((f) => f.widget === 'reference' || f.widget === 'select')
        .filter((f) => this.field(rt, f)?.kind === 'relationship')
        .flatMap((f) =>
          isComponentField(this.field(rt, f)) ? this.components.includes(this.field(rt, f)!) : [f.name],
        ),
    );
    const record = await this.services.commands.view(principal, rt, uuid);
    this.services.commands.assertMayWrite(principal, record, 'update');
    const values = new Map<string, string[]>();
    for (const f of ui.fields) {
      const d = this.field(rt, f);
      if (!d || !f.widget) continue;
      if (isComponentField(d)) {
        this.components.stored(
          d,
          resource,
          included,
          values,
          (sub, value) => this.storedText(sub, value),
          (r) => labelOrId(included.get(`${r.type}:${r.id}`), r.id, this.ctx),
        );
      } else if (d.kind === 'relationship') {
        const data = resource.relationships?.[f.name]?.data;
        const refs = Array.isArray(data) ? data : data ? [data] : [];
        values.set(
          f.name,
          refs.map((r) => labelOrId(included.get(`${r.type}:${r.id}`), r.id, this.ctx)),
        );
      } else values.set(f.name, this.storedText(d, resource.attributes?.[f.name]));
    }
    return { resource, values, version: version === null ? '' : String(version), record };
  }

  /**
   * A stale edit (issue 38 screen 6): who changed the record and when, the fields that differ
   * (theirs, yours), and the two choices: keep theirs (the record's page: nothing of theirs
   * changes), or apply mine to theirs (the form again, with what was typed and the record's
   * version now, so that saving it is an edit of theirs). What was typed stays on the page.
   */
  private async conflict(res: Response, rt: ResourceType, ui: BundleUi, uuid: string, yours: FormState): Promise<void> {
    const { principal } = webState(res);
    const { resource, values: theirs, version, record } = await this.storedForm(principal, rt, ui, uuid);
    const same = (f: UiField, a: string[] | undefined, b: string[] | undefined) => {
      const boolean = this.field(rt, f)?.type === 'boolean';
      return comparable(a, boolean) === comparable(b, boolean);
    };
    // A field the person did not change keeps theirs; without the originals (an old form), every field is mine.
    const mine = (f: UiField) => !yours.originals || !same(f, yours.values.get(f.name), yours.originals.get(f.name));
    const differ = ui.fields.filter(
      (f) => f.widget && f.widget !== 'file' && !same(f, theirs.get(f.name), yours.values.get(f.name)),
    );
    const applied = new Map(
      ui.fields.map((f) => [f.name, (mine(f) ? yours.values.get(f.name) : theirs.get(f.name)) ?? []]),
    );
    // A log's quantity rows stay as typed: saving them again is an edit of the quantities as they are now.
    for (const [name, values] of yours.values) if (!applied.has(name)) applied.set(name, values);
    const shown = (f: UiField, values: string[] | undefined): Html | string => {
      const d = this.field(rt, f);
      const list = (values ?? []).flatMap((v) => v.split('\n')).filter((v) => v.trim() !== '');
      if (f.widget === 'checkbox') return list.includes('1') || list.includes('true') ? M.values.yes : M.values.no;
      if (!list.length) return M.record.empty;
      return list.map((v) => d?.allowedValues?.find((a) => a.value === v)?.label ?? v).join(', ');
    };
    const table = differ.length
      ? html`<div class="table-wrap"><table><caption>${M.conflict.differ}</caption><thead><tr><th scope="col">${M.conflict.field}</th><th scope="col">${M.conflict.theirs}</th><th scope="col">${M.conflict.yours}</th></tr></thead><tbody>${differ.map(
          (f) =>
            html`<tr><th scope="row">${f.label}</th><td>${shown(f, theirs.get(f.name))}</td><td>${mine(f) ? shown(f, yours.values.get(f.name)) : M.conflict.unchanged}</td></tr>`,
        )}</tbody></table></div>`
      : html`<p>${M.conflict.same}</p>`;
    const intro = html`<section class="card" aria-labelledby="conflict"><h2 id="conflict">${M.conflict.title}</h2><p>${await this.changedBy(rt, record, principal)}</p>${table}<div class="actions"><a class="button secondary" href="${recordPath(resource)}">${M.conflict.keepTheirs}</a></div><p class="help">${M.conflict.applyHelp}</p></section>`;
    await this.renderForm(
      res,
      409,
      rt,
      ui,
      resource,
      { ...yours, values: applied, version, general: [M.form.conflict], originals: theirs },
      { intro, submit: M.conflict.applyMine },
    );
  }

  /** "Changed by <who> on <when>": the record's newest revision, or its changed time. */
  private async changedBy(rt: ResourceType, record: EntityRecord, principal: Principal): Promise<string> {
    const [last] = rt.entityType.revisionId
      ? await this.services.loader.store.revisions.summaries(this.services.knex, rt.entityType.entityType, record.id, 1)
      : [];
    const changed = last?.created ?? Number(record.values.get('changed') ?? NaN);
    let who: string | null = null;
    const users = this.ctx.registry.model.entityTypes.user;
    if (last?.userId != null && users && mayOnType(principal, users, 'view')) {
      const [u] = await this.services.loader.load(this.services.knex, 'user', [last.userId], null);
      who = u ? String(u.values.get('name') ?? '') : null;
    }
    const when = Number.isFinite(changed) ? this.formats.dateTime.format(new Date(changed * 1000)) : null;
    return M.conflict.changedBy(who, when);
  }

  /** A stored attribute as the text its input holds. */
  private storedText(d: FieldDescriptor, value: unknown): string[] {
    const list = Array.isArray(value) ? value : value === null || value === undefined ? [] : [value];
    return list.map((v) => {
      switch (d.type) {
        case 'timestamp':
          return typeof v === 'string' ? this.formats.inputDateTime(v) : '';
        case 'boolean':
          return v ? '1' : '';
        case 'text_long':
          return String((v as { value?: string }).value ?? '');
        case 'fraction':
          return String((v as { decimal?: string }).decimal ?? '');
        case 'geofield':
          return String((v as { value?: string }).value ?? '');
        case 'id_tag': {
          const t = v as { type?: string; id?: string };
          return t.type ? `${t.type}: ${t.id ?? ''}` : String(t.id ?? '');
        }
        default:
          return String(v);
      }
    });
  }

  /**
   * POST /farm/<type>/<bundle>/new and /<uuid>/edit (after the CSRF check): saved, or, when one of
   * the buttons that change the form was pressed (widgets.ts FormAction: add or remove a row, find
   * a reference's records), the form again with everything typed kept and nothing saved.
   */
  async save(req: Request, res: Response, rt: ResourceType, ui: BundleUi, uuid: string | null): Promise<void> {
    const { principal } = webState(res);
    const form = req.body as Form;
    const typed = new Map<string, string[]>();
    for (const f of ui.fields) {
      const d = this.field(rt, f);
      if (!f.widget || !d) continue;
      if (isComponentField(d)) this.components.typed(d, form, typed);
      else typed.set(f.name, form.get(f.name) ?? []);
    }
    const version = formValue(form, 'version') ?? '';
    // The values as stored when the form was opened: every field's, and each quantity row's (rowUnchanged).
    const originals = form.has('originals')
      ? new Map([
          ...ui.fields.filter((f) => f.widget).map((f): [string, string[]] => [f.name, []]),
          ...[...form]
            .filter(([key]) => key.startsWith('original.'))
            .map(([key, values]): [string, string[]] => [key.slice('original.'.length), values]),
        ])
      : undefined;
    const state: FormState = { values: typed, errors: new Map(), general: [], version, originals };
    const resource = uuid ? { type: rt.type, id: uuid } : null;

    const action = formAction(form);
    if (action && typed.has(action.name)) {
      if (action.kind !== 'find') applyRowAction(typed, action);
      return this.renderForm(res, 200, rt, ui, resource, state, undefined, action.kind === 'find' ? action.name : null);
    }
    const componentField = action && ui.fields.find((f) => f.name === action.name && f.widget);
    if (action && componentField && isComponentField(this.field(rt, componentField))) {
      this.components.apply(this.field(rt, componentField)!, action, typed);
      return this.renderForm(res, 200, rt, ui, resource, state);
    }
    if (action) return this.renderForm(res, 200, rt, ui, resource, state);

    // A log's quantity rows (the new ones left blank make nothing), saved with it.
    const rowsByField = new Map<string, ComponentRowState[]>();
    const components = new Map<string, ComponentRow[]>();
    for (const f of ui.fields) {
      const d = this.field(rt, f);
      if (!f.widget || !d || !isComponentField(d)) continue;
      const rows = this.components.rows(d, typed).filter((row) => !this.components.blank(row, typed));
      rowsByField.set(f.name, rows);
      components.set(
        f.name,
        rows.map((row) => ({
          rt: row.bundle.rt,
          uuid: row.uuid,
          unchanged: this.rowUnchanged(d, row, form),
          read: async (trx, record) =>
            this.services.input.read(
              trx,
              row.bundle.rt,
              {
                data: {
                  type: row.bundle.rt.type,
                  ...(record ? { id: record.uuid } : {}),
                  ...(await this.document(trx, row.bundle.rt, form, principal, record === null, {
                    fields: row.bundle.fields.map((x) => x.f),
                    prefix: row.prefix,
                  })),
                },
              },
              record ?? undefined,
            ),
        })),
      );
    }
    try {
      // The create or update command's steps (usecases/records.ts), with the quantities' in the
      // same transaction: the same lock, version check, access checks, save, revision and feed
      // row as the API's POST and PATCH. The form's version is the record's version when the form
      // was made, sent back as If-Match sends it.
      const saved = await this.componentCommands.save(principal, rt, uuid, {
        ...(uuid !== null ? { ifMatch: /^\d+$/.test(version) ? new Set([Number(version)]) : ('*' as const) } : {}),
        components,
        read: async (trx, record, refs) => {
          const doc = await this.document(trx, rt, form, principal, record === null, { fields: ui.fields });
          for (const [name, ids] of refs) doc.relationships[name] = { data: ids };
          return this.services.input.read(
            trx,
            rt,
            { data: { type: rt.type, ...(record ? { id: record.uuid } : {}), ...doc } },
            record ?? undefined,
          );
        },
        present: async (_trx, record) => record.uuid,
      });
      res.redirect(
        303,
        `${recordPath({ type: rt.type, id: saved.shown })}?saved=${uuid === null ? 'created' : 'saved'}`,
      );
    } catch (error) {
      if (error instanceof StaleVersionError && uuid !== null) return this.conflict(res, rt, ui, uuid, state);
      if (error instanceof ReferenceProblem) {
        state.errors.set(error.field, [error.message]);
        return this.renderForm(res, 422, rt, ui, resource, state);
      }
      if (error instanceof ComponentError) {
        // Beside the quantity's own field when the message names one, else at the top of its row.
        const row = rowsByField.get(error.field)?.[error.index];
        for (const object of errorObjects(error.error)) {
          const name = /^\/data\/(?:attributes|relationships)\/([^/]+)/.exec(object.source?.pointer ?? '')?.[1];
          const key =
            row && name && row.bundle.fields.some((x) => x.f.name === name)
              ? `${row.prefix}${name}`
              : `${row?.prefix}*`;
          state.errors.set(key, [...(state.errors.get(key) ?? []), object.detail]);
        }
        return this.renderForm(res, 422, rt, ui, resource, state);
      }
      if (error instanceof ApiError && (error.status === 422 || error.status === 400 || error.status === 409)) {
        // A broken rule names its field (runtime/errors.ts Violation), or, when the JSON:API
        // reader found it in the document the form made, its place there: shown beside the
        // field when the form has it, above the form otherwise.
        for (const object of errorObjects(error)) {
          const name = /^\/data\/(?:attributes|relationships)\/([^/]+)/.exec(object.source?.pointer ?? '')?.[1];
          if (name && ui.fields.some((f) => f.name === name && f.widget))
            state.errors.set(name, [...(state.errors.get(name) ?? []), object.detail]);
          else state.general.push(object.detail);
        }
        if (!(error instanceof ValidationError) && !state.errors.size && !state.general.length)
          state.general.push(error.message);
        return this.renderForm(res, 422, rt, ui, resource, state);
      }
      throw error;
    }
  }

  /**
   * Whether an existing component's row holds what it held when the form was opened (its
   * originals, found by its UUID: rows move up when one above is removed), so that saving the
   * record leaves it as it is, with no new revision.
   */
  private rowUnchanged(d: FieldDescriptor, row: ComponentRowState, form: Form): boolean {
    if (!row.uuid || !form.has('originals')) return false;
    const at = [...form.keys()].find(
      (k) => k.startsWith(`original.${d.name}.`) && k.endsWith('.uuid') && form.get(k)?.[0] === row.uuid,
    );
    if (!at) return false;
    const original = at.slice(0, -'uuid'.length);
    return row.bundle.fields.every(
      ({ f, d: sub }) =>
        comparable(form.get(`${row.prefix}${f.name}`), sub.type === 'boolean') ===
        comparable(form.get(`${original}${f.name}`), sub.type === 'boolean'),
    );
  }

  /**
   * GET /farm/<type>/<bundle>/<uuid>/delete (issue 38 screen 7): a confirmation naming what goes
   * with the record (a log's quantities no other log names), refused to whom may not delete it.
   */
  async confirmDelete(res: Response, rt: ResourceType, uuid: string, problem?: string): Promise<void> {
    const { principal, csrfToken } = webState(res);
    const { resource, version } = await this.reads.record(rt, uuid, principal, []);
    const record = await this.services.commands.view(principal, rt, uuid);
    this.services.commands.assertMayWrite(principal, record, 'delete');
    const dependents = await dependentsOnDelete(this.services.knex, rt, [record.id]);
    const named: string[] = [];
    for (const group of dependents) {
      const records = await this.services.loader.load(this.services.knex, group.entityType, group.ids, null);
      for (const r of records) named.push(await this.dependentLabel(r, principal));
    }
    const label = labelOf(resource, rt.entityType.labelField);
    const body = html`${problem ? html`<div class="error" role="alert"><p>${problem}</p></div>` : ''}<section class="card">${
      named.length
        ? html`<p>${M.remove.withIt(named.length)}</p><ul>${named.map((n) => html`<li>${n}</li>`)}</ul>`
        : html`<p>${M.remove.alone}</p>`
    }<p>${M.remove.cannotUndo}</p>
<form method="post" action="${recordPath(resource)}/delete"><input type="hidden" name="csrf_token" value="${csrfToken}"><input type="hidden" name="version" value="${version === null ? '' : String(version)}">
<div class="actions"><button class="primary" type="submit">${M.remove.confirm}</button><a class="button secondary" href="${recordPath(resource)}">${M.form.cancel}</a></div></form></section>`;
    this.send(res, problem ? 409 : 200, M.remove.title(label), body);
  }

  /** A record deleted along with another, as the confirmation names it (a quantity: its value, unit and label). */
  private async dependentLabel(r: EntityRecord, principal: Principal): Promise<string> {
    const type = this.ctx.registry.typeName(r.rt.entityType.entityType, r.bundle);
    const rt = this.ctx.registry.get(type);
    if (!rt || r.rt.entityType.entityType !== 'quantity') return `${r.bundle} ${r.uuid.slice(0, 8)}`;
    try {
      const { resource, included } = await this.reads.record(rt, r.uuid, principal, ['units']);
      const value = (resource.attributes?.value as { decimal?: string } | null)?.decimal ?? '';
      const unitRef = resource.relationships?.units?.data;
      const unit =
        unitRef && !Array.isArray(unitRef) ? labelOf(included.get(`${unitRef.type}:${unitRef.id}`), 'name') : '';
      return M.remove.quantity(value, unit, String(resource.attributes?.label ?? ''));
    } catch {
      return M.remove.quantity('', '', '');
    }
  }

  /** POST /farm/<type>/<bundle>/<uuid>/delete (after the CSRF check): through the delete command, at the version confirmed. */
  async remove(req: Request, res: Response, rt: ResourceType, uuid: string): Promise<void> {
    const { principal } = webState(res);
    const version = formValue(req.body as Form, 'version') ?? '';
    const { resource } = await this.reads.record(rt, uuid, principal, []);
    try {
      await this.services.commands.delete(principal, rt, uuid, {
        ifMatch: /^\d+$/.test(version) ? new Set([Number(version)]) : '*',
      });
    } catch (error) {
      if (error instanceof StaleVersionError) return this.confirmDelete(res, rt, uuid, M.remove.stale);
      throw error;
    }
    const label = labelOf(resource, rt.entityType.labelField);
    res.redirect(
      303,
      `/farm/${rt.entityType.entityType}/${rt.bundle.bundle}?${new URLSearchParams({ deleted: label })}`,
    );
  }

  /** POST /farm/asset/<bundle>/<uuid>/status (after the CSRF check): archive or reactivate, as a PATCH of its status. */
  async setStatus(req: Request, res: Response, rt: ResourceType, uuid: string): Promise<void> {
    const { principal } = webState(res);
    const to = formValue(req.body as Form, 'status');
    if (!hasArchive(rt) || (to !== ARCHIVE.archived && to !== ARCHIVE.active))
      throw new ApiError(400, 'The status is archived or active.');
    await this.services.commands.update(principal, rt, uuid, {
      read: (trx, record) =>
        this.services.input.read(
          trx,
          rt,
          { data: { type: rt.type, id: record.uuid, attributes: { [ARCHIVE.status]: to } } },
          record,
        ),
      present: async () => null,
    });
    res.redirect(
      303,
      `${recordPath({ type: rt.type, id: uuid })}?saved=${to === ARCHIVE.archived ? 'archived' : 'reactivated'}`,
    );
  }

  /** POST /farm/log/<bundle>/<uuid>/done (after the CSRF check): a task marked done in place, saved as a PATCH of its status is; back to the dashboard. */
  async markDone(req: Request, res: Response, rt: ResourceType, uuid: string): Promise<void> {
    const { principal } = webState(res);
    // A PATCH of its status without If-Match, through the update command.
    await this.services.commands.update(principal, rt, uuid, {
      read: (trx, record) =>
        this.services.input.read(
          trx,
          rt,
          { data: { type: rt.type, id: record.uuid, attributes: { [TASKS.status]: TASKS.done } } },
          record,
        ),
      present: async () => null,
    });
    res.redirect(303, safeReturn(formValue(req.body as Form, 'return_to')));
  }

  /**
   * The JSON:API resource object's attributes and relationships for what the form sent: `fields`'
   * inputs, named with `prefix` (a quantity row's). Component fields (a log's quantities) are the
   * command's to fill in, and files are uploaded on their own.
   */
  private async document(
    db: Knex | Knex.Transaction,
    rt: ResourceType,
    form: Form,
    principal: Principal,
    creating: boolean,
    { fields, prefix = '' }: { fields: UiField[]; prefix?: string },
  ): Promise<{ attributes: Record<string, unknown>; relationships: Record<string, unknown> }> {
    const attributes: Record<string, unknown> = {};
    const relationships: Record<string, unknown> = {};
    for (const f of fields) {
      const d = this.field(rt, f);
      if (!d || !f.widget || f.widget === 'file' || isComponentField(d)) continue;
      const name = `${prefix}${f.name}`;
      const sent = form.get(name) ?? [];
      if (d.kind === 'relationship') {
        const refs = [];
        for (const item of sentValues(d, f, sent)) refs.push(await this.resolveReference(db, d, item, principal, name));
        relationships[f.name] = { data: d.multiple ? refs : (refs[0] ?? null) };
        continue;
      }
      const lines = sentValues(d, f, sent);
      const one = (text: string): unknown => {
        switch (f.widget) {
          case 'checkbox':
            return text === '1';
          case 'number':
            return text.trim() === '' ? null : /^-?\d+$/.test(text.trim()) ? Number(text.trim()) : text;
          case 'datetime':
          case 'date': {
            if (text.trim() === '') return null;
            const at = this.formats.parseInputDateTime(text);
            return at ? at.toISOString().replace(/\.\d{3}Z$/, '+00:00') : text;
          }
          case 'id_tag': {
            const [type, ...rest] = text.split(':');
            return rest.length ? { type: type!.trim(), id: rest.join(':').trim() } : { id: text.trim() };
          }
          case 'select':
          case 'radios':
          case 'decimal':
          case 'fraction':
          case 'wkt':
            return text.trim() === '' ? null : text.trim();
          default:
            return text;
        }
      };
      if (f.widget === 'checkbox') {
        attributes[f.name] = sent.includes('1');
        continue;
      }
      const values = lines.map(one);
      if (d.multiple) attributes[f.name] = values.filter((v) => v !== null);
      else if (values[0] === null || values[0] === undefined) {
        // Left empty: a new record gets the field's default; an edit clears it.
        if (!creating) attributes[f.name] = d.type === 'string' || d.type === 'string_long' ? '' : null;
      } else attributes[f.name] = values[0];
    }
    return { attributes, relationships };
  }

  /**
   * A typed reference (a UUID, a record's exact label, an asset's ID tag) as a resource identifier
   * the field may point at, read as the API reads; a name no term has yet becomes a new term of
   * the field's first vocabulary the person may add to, as a POST of the term would make it.
   * `name` is the input's, for the message beside it.
   */
  async resolveReference(
    db: Knex | Knex.Transaction,
    d: FieldDescriptor,
    typed: string,
    principal: Principal,
    name: string,
  ): Promise<{ type: string; id: string }> {
    const targets = this.ctx.registry.targetsOf(d);
    const text = /\[([0-9a-fA-F-]{36})\]\s*$/.exec(typed)?.[1] ?? typed;
    if (UUID.test(text)) {
      for (const target of targets) {
        const found = await this.services.loader.store.findByUuid(db, target.entityType.entityType, text.toLowerCase());
        if (
          found &&
          targets.some(
            (t) => t.bundle.bundle === found.bundle && t.entityType.entityType === target.entityType.entityType,
          )
        )
          return {
            type: this.ctx.registry.typeName(target.entityType.entityType, found.bundle),
            id: text.toLowerCase(),
          };
      }
    } else {
      for (const target of targets) {
        if (!mayOnType(principal, target.entityType, 'view')) continue;
        const query = this.reads.query(
          target,
          new URLSearchParams({
            'filter[label][condition][path]': target.entityType.labelField,
            'filter[label][condition][value]': text,
            'page[limit]': '1',
          }).toString(),
        );
        const { ids } = await fetchPage(
          db as Knex,
          this.reads.compiler,
          target,
          query.filter,
          query.sort,
          query.page,
          principal,
        );
        if (ids.length) {
          const [record] = await this.services.loader.load(
            db,
            target.entityType.entityType,
            ids,
            new Map([[target.type, new Set([target.entityType.labelField])]]),
          );
          if (record) return { type: target.type, id: record.uuid };
        }
      }
      const tagged = await this.byIdTag(db, targets, text, principal);
      if (tagged) return tagged;
      const vocabulary = this.newTermVocabulary(d, principal);
      if (vocabulary && text.trim()) {
        const input = await this.services.input.read(db, vocabulary, {
          data: { type: vocabulary.type, attributes: { [vocabulary.entityType.labelField]: text.trim() } },
        });
        const { uuid } = await this.services.commands.createIn(db as Knex.Transaction, principal, vocabulary, input);
        return { type: vocabulary.type, id: uuid };
      }
    }
    throw new ReferenceProblem(name, M.form.notFoundReference(text));
  }

  /** The vocabulary a name typed into `d` makes a new term of: the first it targets that the person may add terms to. */
  newTermVocabulary(d: FieldDescriptor, principal: Principal): ResourceType | undefined {
    return this.ctx.registry
      .targetsOf(d)
      .find((t) => t.entityType.access === 'taxonomy' && mayOnType(principal, t.entityType, 'create'));
  }

  /** The record among `targets` whose ID tag's ID is `text` (an ear tag typed for an animal), through the API's filter. */
  private async byIdTag(
    db: Knex | Knex.Transaction,
    targets: ResourceType[],
    text: string,
    principal: Principal,
  ): Promise<{ type: string; id: string } | null> {
    for (const target of targets) {
      const tag = [...target.fieldsByName.values()].find((f) => f.type === 'id_tag');
      if (!tag || !mayOnType(principal, target.entityType, 'view')) continue;
      const query = this.reads.query(
        target,
        new URLSearchParams({
          'filter[tag][condition][path]': `${tag.name}.id`,
          'filter[tag][condition][value]': text.trim(),
          'page[limit]': '1',
        }).toString(),
      );
      const { ids } = await fetchPage(
        db as Knex,
        this.reads.compiler,
        target,
        query.filter,
        query.sort,
        query.page,
        principal,
      );
      if (ids.length) {
        const uuids = await this.services.loader.store.uuidsOf(db, target.entityType.entityType, ids);
        const uuid = uuids.get(ids[0]!);
        if (uuid) return { type: target.type, id: uuid };
      }
    }
    return null;
  }

  /** FieldForms.control: one field's control, its reference's records read first. */
  async fieldControl(
    res: Response,
    rt: ResourceType,
    ui: BundleUi,
    name: string,
    state: FormState,
    find: boolean,
  ): Promise<Html> {
    const { principal } = webState(res);
    const f = ui.fields.find((x) => x.name === name && x.widget);
    const d = f && this.field(rt, f);
    if (!f || !d) return html``;
    const reader = new ReferenceOptionReader(this.ctx, this.reads, principal);
    const typed = (state.values.get(name) ?? []).filter((v) => v.trim() !== '');
    const search = find ? (typed[typed.length - 1] ?? '').replace(/\s*\[[0-9a-fA-F-]{36}\]\s*$/, '') : null;
    const references =
      d.kind === 'relationship' && (f.widget === 'reference' || f.widget === 'select')
        ? await reader.options(d, search || null)
        : undefined;
    return control(d, f, state, {
      name,
      references,
      createsTerms: d.kind === 'relationship' && this.newTermVocabulary(d, principal) !== undefined,
    });
  }

  /** FieldForms.read. */
  fieldsDocument(
    db: Knex | Knex.Transaction,
    rt: ResourceType,
    ui: BundleUi,
    form: Form,
    principal: Principal,
    names: readonly string[],
  ): Promise<{ attributes: Record<string, unknown>; relationships: Record<string, unknown> }> {
    return this.document(db, rt, form, principal, false, { fields: ui.fields.filter((f) => names.includes(f.name)) });
  }

  /** FieldForms.prefilled. */
  async prefilledForm(res: Response, rt: ResourceType, ui: BundleUi, values: Map<string, string[]>): Promise<void> {
    assertMayOnType(webState(res).principal, rt.entityType, 'create', `${rt.type} resources`);
    const filled = new Map<string, string[]>();
    for (const f of ui.fields) {
      const d = this.field(rt, f);
      if (d && f.widget && d.default !== undefined && typeof d.default !== 'object')
        filled.set(f.name, [String(d.default)]);
    }
    for (const [k, v] of values) filled.set(k, v);
    await this.renderForm(res, 200, rt, ui, null, { values: filled, errors: new Map(), general: [], version: '' });
  }

  /**
   * The create or edit form. `find`: the reference input whose Find was pressed, offered the
   * records named like what was typed in it; every other reference offers its first records by
   * name (reference-options.ts).
   */
  private async renderForm(
    res: Response,
    status: number,
    rt: ResourceType,
    ui: BundleUi,
    resource: Pick<Resource, 'type' | 'id'> | null,
    state: FormState,
    conflict?: { intro: Html; submit: string },
    find: string | null = null,
  ): Promise<void> {
    const { csrfToken, principal } = webState(res);
    const action = resource
      ? `${recordPath(resource)}/edit`
      : `/farm/${rt.entityType.entityType}/${rt.bundle.bundle}/new`;
    // Every reference's records read first (one statement per target entity type, shared by inputs of the same targets), then the page drawn.
    const reader = new ReferenceOptionReader(this.ctx, this.reads, principal);
    const offered = new Map<string, ReferenceOptions>();
    const offer = async (d: FieldDescriptor, f: UiField, name: string) => {
      if (d.kind !== 'relationship' || (f.widget !== 'reference' && f.widget !== 'select')) return;
      const typed = (state.values.get(name) ?? []).filter((v) => v.trim() !== '');
      const search = find === name ? (typed[typed.length - 1] ?? '').replace(/\s*\[[0-9a-fA-F-]{36}\]\s*$/, '') : null;
      offered.set(name, await reader.options(d, search || null));
    };
    const shown = ui.fields.filter((f) => f.widget && f.widget !== 'file');
    for (const f of shown) {
      const d = this.field(rt, f);
      if (!d) continue;
      if (isComponentField(d)) {
        for (const row of this.components.rows(d, state.values))
          for (const x of row.bundle.fields) await offer(x.d, x.f, `${row.prefix}${x.f.name}`);
      } else await offer(d, f, f.name);
    }
    const geometry = shown.some((f) => f.widget === 'wkt')
      ? await MapPages.of(this.ctx).widgetSpec(principal)
      : undefined;
    const draw = (d: FieldDescriptor, f: UiField, name: string) =>
      control(d, f, state, {
        name,
        references: offered.get(name),
        createsTerms: d.kind === 'relationship' && this.newTermVocabulary(d, principal) !== undefined,
        geometry: f.widget === 'wkt' ? geometry : undefined,
      });
    const sections = ui.sections.map((section) => {
      const fields = shown.filter((f) => f.section === section);
      if (!fields.length) return '';
      const heading = M.form.sections[section] ?? humanise(section);
      const controls = fields.map((f) => {
        const d = this.field(rt, f)!;
        return isComponentField(d) ? this.components.render(d, f, state, draw) : draw(d, f, f.name);
      });
      return heading ? html`<fieldset><legend>${heading}</legend>${controls}</fieldset>` : html`<div>${controls}</div>`;
    });
    const problems =
      state.general.length || state.errors.size
        ? html`<div class="error" role="alert"><p>${M.form.problems}</p>${state.general.map((g) => html`<p>${g}</p>`)}</div>`
        : '';
    // The first submit button is the one Enter in a text input presses: Save, not Add another or Remove.
    const body = html`${problems}${conflict?.intro ?? ''}<form class="record card" method="post" action="${action}" novalidate>
<input class="default-submit" type="submit" tabindex="-1" value="${M.form.save}">
<input type="hidden" name="csrf_token" value="${csrfToken}">
${resource ? html`<input type="hidden" name="version" value="${state.version}">` : ''}
${
  resource && state.originals
    ? html`<input type="hidden" name="originals" value="1">${[...state.originals].map(([name, values]) => values.map((v) => html`<input type="hidden" name="original.${name}" value="${v}">`))}`
    : ''
}
${sections}
<div class="actions"><button class="primary" type="submit">${conflict?.submit ?? M.form.save}</button><a class="button secondary" href="${resource ? recordPath(resource) : `/farm/${rt.entityType.entityType}/${rt.bundle.bundle}`}">${M.form.cancel}</a></div>
</form>${resource ? this.uploads.forms(res, rt, ui, resource.id) : ''}`;
    this.send(res, status, resource ? M.form.edit(ui.label) : M.form.create(ui.label), body, geometry ? ['map'] : []);
  }
}

/** What bulk actions (bulk.ts) take of a record's form: one field's control, its values read, a form filled in. */
export class FieldForms {
  constructor(private readonly pages: RecordPages) {}

  /** One field's control as the bundle's form draws it, with the records a reference offers (`find`: searched by what was typed). */
  control(res: Response, rt: ResourceType, ui: BundleUi, name: string, state: FormState, find: boolean): Promise<Html> {
    return this.pages.fieldControl(res, rt, ui, name, state, find);
  }

  /** The attributes and relationships the named fields' inputs make, read as the form's save reads them. */
  read(
    db: Knex | Knex.Transaction,
    rt: ResourceType,
    ui: BundleUi,
    form: Form,
    principal: Principal,
    names: readonly string[],
  ): Promise<{ attributes: Record<string, unknown>; relationships: Record<string, unknown> }> {
    return this.pages.fieldsDocument(db, rt, ui, form, principal, names);
  }

  /** The bundle's create form with these values in its inputs (a log for assets chosen in a list). */
  prefilled(res: Response, rt: ResourceType, ui: BundleUi, values: Map<string, string[]>): Promise<void> {
    return this.pages.prefilledForm(res, rt, ui, values);
  }
}

/** An edit whose version is no longer the record's. */
function labelOrId(resource: Resource | undefined, id: string, ctx: AppContext): string {
  if (!resource) return id;
  const label =
    resource.attributes?.[ctx.registry.model.entityTypes[resource.type.split('--')[0]!]?.labelField ?? 'name'];
  // The ID in brackets keeps the very record when the form is saved again, whatever names others share.
  return typeof label === 'string' && label ? `${label} [${id}]` : id;
}

/** Archive and reactivate: an asset's status (farmOS's). */
export const ARCHIVE = { entityType: 'asset', status: 'status', archived: 'archived', active: 'active' } as const;

export function hasArchive(rt: ResourceType): boolean {
  return rt.entityType.entityType === ARCHIVE.entityType && rt.fieldsByName.has(ARCHIVE.status);
}

/** A field's values as text to compare: blank lines and surrounding space left out. */
function comparable(values: string[] | undefined, boolean: boolean): string {
  const list = (values ?? [])
    .flatMap((v) => v.split('\n'))
    .map((v) => v.trim())
    .filter((v) => v !== '');
  // A boolean is stored as '1' or '', and sent as '1', '0' or nothing.
  return boolean ? String(list.includes('1') || list.includes('true')) : JSON.stringify(list);
}

function humanise(name: string): string {
  const s = name.replace(/_/g, ' ');
  return s.charAt(0).toUpperCase() + s.slice(1);
}
