/**
 * A record's page and its create and edit forms, for every bundle alike, from its generated UI
 * description. Saving goes through the JSON:API face's input reader and the entity service, in
 * one transaction, as POST and PATCH do (jsonapi/handlers/create.ts, individual.ts): the same
 * coercion, checks, defaults, farm behaviour, revisions and change feed. An edit carries the
 * version the form was opened at and is refused, as If-Match refuses it, when the record changed
 * since; a 422's messages are shown beside their fields with everything typed kept.
 */
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

/** What a form shows: the values typed (or stored), and the messages by field. */
interface FormState {
  values: Map<string, string[]>;
  errors: Map<string, string[]>;
  general: string[];
  version: string;
  /** An edit's values as stored when the form was opened (sent back hidden), to tell which fields the person changed. */
  originals?: Map<string, string[]>;
}

/** A submitted value that names no record the field may point at: a 422 of the form's own. */
class ReferenceProblem extends Error {
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(message);
  }
}

export class RecordPages {
  constructor(
    private readonly ctx: AppContext,
    private readonly services: JsonApiServices,
    private readonly reads: WebReads,
    private readonly sessions: WebSessions,
    private readonly lists: ListPages,
    private readonly formats: Formats,
  ) {}

  private send(res: Response, status: number, title: string, body: Html): void {
    const state = webState(res);
    sendPage(res, status, page(title, this.sessions.chrome(state, this.lists.nav(state.principal)), body));
  }

  private field(rt: ResourceType, f: UiField): FieldDescriptor | undefined {
    return rt.fieldsByName.get(f.name);
  }

  /** GET /farm/<type>/<bundle>/new and /<uuid>/edit. */
  async form(res: Response, rt: ResourceType, ui: BundleUi, uuid: string | null): Promise<void> {
    const { principal } = webState(res);
    if (uuid === null) {
      assertMayOnType(principal, rt.entityType, 'create', `${rt.type} resources`);
      const values = new Map<string, string[]>();
      for (const f of ui.fields) {
        const d = this.field(rt, f);
        if (d && f.widget && d.default !== undefined && typeof d.default !== 'object')
          values.set(f.name, [String(d.default)]);
      }
      return this.renderForm(res, 200, rt, ui, null, { values, errors: new Map(), general: [], version: '' });
    }
    const { resource, values, version } = await this.storedForm(principal, rt, ui, uuid);
    this.renderForm(res, 200, rt, ui, resource, {
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
        .map((f) => f.name),
    );
    const record = await this.services.commands.view(principal, rt, uuid);
    this.services.commands.assertMayWrite(principal, record, 'update');
    const values = new Map<string, string[]>();
    for (const f of ui.fields) {
      const d = this.field(rt, f);
      if (!d || !f.widget) continue;
      if (d.kind === 'relationship') {
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
    this.renderForm(
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
      ? await this.services.loader.store.revisions.list(this.services.knex, rt.entityType.entityType, record.id, {
          offset: 0,
          limit: 1,
        })
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

  /** POST /farm/<type>/<bundle>/new and /<uuid>/edit (after the CSRF check). */
  async save(req: Request, res: Response, rt: ResourceType, ui: BundleUi, uuid: string | null): Promise<void> {
    const { principal } = webState(res);
    const form = req.body as Form;
    const typed = new Map<string, string[]>();
    for (const f of ui.fields) if (f.widget) typed.set(f.name, form.get(f.name) ?? []);
    const version = formValue(form, 'version') ?? '';
    const originals = form.has('originals')
      ? new Map(ui.fields.filter((f) => f.widget).map((f) => [f.name, form.get(`original.${f.name}`) ?? []]))
      : undefined;
    const state: FormState = { values: typed, errors: new Map(), general: [], version, originals };
    try {
      // The create and update commands (usecases/records.ts): the same lock, version check, access
      // checks, save, revision and feed row as the API's POST and PATCH. The form's version is the
      // record's version when the form was made, sent back as If-Match sends it.
      const body = async (trx: Knex.Transaction | Knex, record: EntityRecord | null) => ({
        data: {
          type: rt.type,
          ...(record ? { id: record.uuid } : {}),
          ...(await this.document(trx, rt, ui, form, principal, record === null)),
        },
      });
      const present = async (_trx: unknown, record: EntityRecord) => record.uuid;
      const saved =
        uuid === null
          ? await this.services.commands.create(principal, rt, {
              read: async (trx) => this.services.input.read(trx, rt, await body(trx, null)),
              present,
            })
          : await this.services.commands.update(principal, rt, uuid, {
              ifMatch: /^\d+$/.test(version) ? new Set([Number(version)]) : '*',
              read: async (trx, record) => this.services.input.read(trx, rt, await body(trx, record), record),
              present,
            });
      res.redirect(
        303,
        `${recordPath({ type: rt.type, id: saved.shown })}?saved=${uuid === null ? 'created' : 'saved'}`,
      );
    } catch (error) {
      if (error instanceof StaleVersionError && uuid !== null) return this.conflict(res, rt, ui, uuid, state);
      if (error instanceof ReferenceProblem) {
        state.errors.set(error.field, [error.message]);
        return this.renderForm(res, 422, rt, ui, uuid ? { type: rt.type, id: uuid } : null, state);
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
        return this.renderForm(res, 422, rt, ui, uuid ? { type: rt.type, id: uuid } : null, state);
      }
      throw error;
    }
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

  /** The JSON:API resource object's attributes and relationships for what the form sent. */
  private async document(
    db: Knex | Knex.Transaction,
    rt: ResourceType,
    ui: BundleUi,
    form: Form,
    principal: Principal,
    creating: boolean,
  ): Promise<{ attributes: Record<string, unknown>; relationships: Record<string, unknown> }> {
    const attributes: Record<string, unknown> = {};
    const relationships: Record<string, unknown> = {};
    for (const f of ui.fields) {
      const d = this.field(rt, f);
      if (!d || !f.widget || f.widget === 'file') continue;
      const sent = form.get(f.name) ?? [];
      if (d.kind === 'relationship') {
        const items = sent
          .flatMap((v) => v.split('\n'))
          .map((v) => v.trim())
          .filter(Boolean);
        const refs = [];
        for (const item of items) refs.push(await this.resolveReference(db, d, item, principal));
        relationships[f.name] = { data: d.multiple ? refs : (refs[0] ?? null) };
        continue;
      }
      const lines =
        f.widget === 'checkboxes'
          ? sent
          : d.multiple
            ? sent
                .flatMap((v) => v.split('\n'))
                .map((v) => v.trim())
                .filter(Boolean)
            : sent.slice(0, 1);
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

  /** A typed reference (a UUID, or a record's exact label) as a resource identifier the field may point at, read as the API reads. */
  private async resolveReference(
    db: Knex | Knex.Transaction,
    d: FieldDescriptor,
    typed: string,
    principal: Principal,
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
    }
    throw new ReferenceProblem(d.name, M.form.notFoundReference(text));
  }

  private renderForm(
    res: Response,
    status: number,
    rt: ResourceType,
    ui: BundleUi,
    resource: Pick<Resource, 'type' | 'id'> | null,
    state: FormState,
    conflict?: { intro: Html; submit: string },
  ): void {
    const { csrfToken } = webState(res);
    const action = resource
      ? `${recordPath(resource)}/edit`
      : `/farm/${rt.entityType.entityType}/${rt.bundle.bundle}/new`;
    const sections = ui.sections.map((section) => {
      const fields = ui.fields.filter((f) => f.section === section && f.widget && f.widget !== 'file');
      if (!fields.length) return '';
      const heading = M.form.sections[section] ?? humanise(section);
      const controls = fields.map((f) => this.control(rt, f, state));
      return heading ? html`<fieldset><legend>${heading}</legend>${controls}</fieldset>` : html`<div>${controls}</div>`;
    });
    const problems =
      state.general.length || state.errors.size
        ? html`<div class="error" role="alert"><p>${M.form.problems}</p>${state.general.map((g) => html`<p>${g}</p>`)}</div>`
        : '';
    const body = html`${problems}${conflict?.intro ?? ''}<form class="record card" method="post" action="${action}" novalidate>
<input type="hidden" name="csrf_token" value="${csrfToken}">
${resource ? html`<input type="hidden" name="version" value="${state.version}">` : ''}
${
  resource && state.originals
    ? html`<input type="hidden" name="originals" value="1">${[...state.originals].map(([name, values]) => values.map((v) => html`<input type="hidden" name="original.${name}" value="${v}">`))}`
    : ''
}
${sections}
<div class="actions"><button class="primary" type="submit">${conflict?.submit ?? M.form.save}</button><a class="button secondary" href="${resource ? recordPath(resource) : `/farm/${rt.entityType.entityType}/${rt.bundle.bundle}`}">${M.form.cancel}</a></div>
</form>`;
    this.send(res, status, resource ? M.form.edit(ui.label) : M.form.create(ui.label), body);
  }

  /** One field's label, input, help and messages. */
  private control(rt: ResourceType, f: UiField, state: FormState): Html {
    const d = this.field(rt, f)!;
    const id = `field-${f.name}`;
    const values = state.values.get(f.name) ?? [];
    const errors = state.errors.get(f.name) ?? [];
    const describedBy = [
      f.description || d.kind === 'relationship' || f.widget === 'wkt' || f.widget === 'id_tag' ? `${id}-help` : '',
      errors.length ? `${id}-error` : '',
    ]
      .filter(Boolean)
      .join(' ');
    const aria = html`${describedBy ? html` aria-describedby="${describedBy}"` : ''}${errors.length ? html` aria-invalid="true"` : ''}${f.required ? html` aria-required="true"` : ''}`;
    const label = html`<label for="${id}">${f.label}${f.required ? html` <span class="required">(${M.form.required})</span>` : ''}</label>`;
    const placeholder = f.placeholder ? html` placeholder="${f.placeholder}"` : '';
    const text = values.join('\n');
    let input: Html;
    switch (f.widget) {
      case 'textarea':
      case 'wkt':
        input = html`${label}<textarea id="${id}" name="${f.name}"${placeholder}${aria}>${text}</textarea>`;
        break;
      case 'reference':
      case 'id_tag':
        input = d.multiple
          ? html`${label}<textarea id="${id}" name="${f.name}"${placeholder}${aria}>${text}</textarea>`
          : html`${label}<input type="text" id="${id}" name="${f.name}" value="${values[0] ?? ''}"${placeholder}${aria}>`;
        break;
      case 'checkbox':
        input = html`<label class="choice" for="${id}"><input type="checkbox" id="${id}" name="${f.name}" value="1" ${values.includes('1') || values.includes('true') ? 'checked' : ''}${aria}> ${f.label}</label>`;
        break;
      case 'select':
        input = html`${label}<select id="${id}" name="${f.name}"${aria}>${f.required ? '' : html`<option value=""></option>`}${(d.allowedValues ?? []).map((a) => html`<option value="${a.value}" ${values.includes(a.value) ? 'selected' : ''}>${a.label}</option>`)}</select>`;
        break;
      case 'radios':
      case 'checkboxes': {
        const type = f.widget === 'radios' ? 'radio' : 'checkbox';
        const options =
          d.type === 'boolean'
            ? [
                { value: '1', label: M.values.yes },
                { value: '0', label: M.values.no },
              ]
            : (d.allowedValues ?? []);
        // A group of radios is a radiogroup (which may be required); a group of checkboxes is a
        // plain group, which ARIA gives no aria-required: its legend says so.
        const groupAria =
          type === 'radio'
            ? html` role="radiogroup"${aria}`
            : html`${describedBy ? html` aria-describedby="${describedBy}"` : ''}${errors.length ? html` aria-invalid="true"` : ''}`;
        input = html`<fieldset id="${id}"${groupAria}><legend>${f.label}${f.required ? html` <span class="required">(${M.form.required})</span>` : ''}</legend>${options.map(
          (a, i) =>
            html`<label class="choice" for="${id}-${i}"><input type="${type}" id="${id}-${i}" name="${f.name}" value="${a.value}" ${values.includes(a.value) ? 'checked' : ''}> ${a.label}</label>`,
        )}</fieldset>`;
        break;
      }
      case 'datetime':
        input = html`${label}<input type="datetime-local" id="${id}" name="${f.name}" value="${values[0] ?? ''}"${aria}>`;
        break;
      case 'date':
        input = html`${label}<input type="date" id="${id}" name="${f.name}" value="${(values[0] ?? '').slice(0, 10)}"${aria}>`;
        break;
      case 'number':
        input = html`${label}<input type="number" step="1" id="${id}" name="${f.name}" value="${values[0] ?? ''}"${placeholder}${aria}>`;
        break;
      case 'decimal':
      case 'fraction':
        input = html`${label}<input type="text" inputmode="decimal" id="${id}" name="${f.name}" value="${values[0] ?? ''}"${placeholder}${aria}>`;
        break;
      case 'email':
        input = html`${label}<input type="email" id="${id}" name="${f.name}" value="${values[0] ?? ''}"${placeholder}${aria}>`;
        break;
      default:
        input = d.multiple
          ? html`${label}<textarea id="${id}" name="${f.name}"${placeholder}${aria}>${text}</textarea>`
          : html`${label}<input type="text" id="${id}" name="${f.name}" value="${values[0] ?? ''}"${d.maxLength ? html` maxlength="${d.maxLength}"` : ''}${placeholder}${aria}>`;
    }
    const help = [
      f.description ?? '',
      d.kind === 'relationship' ? M.form.referenceHelp : '',
      f.widget === 'wkt' ? M.form.wktHelp : '',
      f.widget === 'id_tag' ? M.form.idTagHelp : '',
    ]
      .filter(Boolean)
      .join(' ');
    return html`<div class="control">${input}${help ? html`<p class="help" id="${id}-help">${help}</p>` : ''}${errors.length ? html`<p class="field-error" id="${id}-error">${errors.join(' ')}</p>` : ''}</div>`;
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
