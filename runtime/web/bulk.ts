/**
 * Bulk actions on lists (issue 42 §3). A list whose records the person may change has a tick box
 * per row inside one form (no script), a choice of "all N matching the filters" (at most
 * BULK_LIMIT, enforced here and in the command) and an action. Then three steps:
 *
 * 1. POST …/bulk from the list: the chosen records read (one page of ids through the API's
 *    compiler and the access policy, one load of their names) and a confirmation page: the
 *    action, how many, every record named, and the action's own inputs (drawn with the bundle's
 *    own form controls: an owner, a category, a location are chosen as on a record's form). The
 *    form carries each record's version as the page was drawn (one read for all), as a record's
 *    edit form carries its own.
 * 2. POST …/bulk with step=apply: the action, through usecases/bulk.ts (one transaction; the
 *    records locked and loaded in one read each; refused records named and nothing done, a
 *    record changed since the confirmation among them; one revision per record with a message
 *    naming the action; one feed row per record), or the create command (a movement or group
 *    assignment: one log for all).
 * 3. A summary naming what was changed, or a page naming what was refused.
 *
 * Export streams the records chosen (sheets.ts); "record a log" opens a log's create form with
 * the assets filled in.
 */
import express, { type Request, type RequestHandler, type Response, type Router } from 'express';
import type { AppContext } from '../context.ts';
import type { ResourceType } from '../model/registry.ts';
import type { BundleUi } from '../model/ui.ts';
import { mayOnType } from '../access/policy.ts';
import type { Principal } from '../access/principal.ts';
import { ApiError } from '../errors.ts';
import type { Db, EntityRecord, ItemValue } from '../storage/records.ts';
import {
  BULK_LIMIT,
  BulkRefused,
  type BulkChange,
  type BulkCommands,
  type BulkOutcome,
  type Refusal,
} from '../usecases/bulk.ts';
import { versionsOf } from '../storage/change-feed.ts';
import { farmCommands } from '../usecases/commands.ts';
import type { JsonApiServices } from '../jsonapi/handlers/services.ts';
import { fetchPageAcrossBundles } from '../jsonapi/collection/page-across-bundles.ts';
import { errorObjects } from '../jsonapi/errors.ts';
import { html, type Html } from './html.ts';
import { M } from './messages.ts';
import { page, sendPage } from './layout.ts';
import { labelOf, recordPath, type Formats, type RenderContext, type Resource } from './format.ts';
import type { WebReads } from './reads.ts';
import { formValue, webState, type Form, type WebSessions } from './session.ts';
import type { ListOffer, ListPages } from './lists.ts';
import type { ListView } from './list-view.ts';
import { formAction, type FormState } from './widgets.ts';
import type { FieldForms } from './records.ts';
import { FORMATS, type SheetPages } from './sheets.ts';

const DAY = 86_400;
/** The log bundle a movement or group assignment is recorded as (farmOS's quick forms use an activity log). */
const MOVEMENT_LOG = { entityType: 'log', bundle: 'activity' } as const;

/** A record chosen, as the pages name it. */
interface Chosen {
  uuid: string;
  type: string;
  label: string;
  /** Its version as the confirmation was drawn (the feed position an ETag names); null when unknown. */
  version?: number | null;
}

/** One request's action: its list, the person, the form. */
interface Run {
  req: Request;
  res: Response;
  principal: Principal;
  listView: ListView;
  /** The first bundle's type and form (the fields bulk actions set are base fields, shared by every bundle of a list). */
  rt: ResourceType;
  ui: BundleUi;
  form: Form;
  view: URLSearchParams;
  /** The records' versions the confirmation carried (UUID → version): the action is refused for one changed since. */
  versions: Map<string, number>;
}

/** What an action did, for the summary. */
interface Did {
  what: string;
  outcome: BulkOutcome;
  /** The records the action was for, when it changed none of them itself (a movement: its log). */
  count?: number;
  /** The one log made for them all (a movement or a group assignment). */
  log?: { type: string; uuid: string; label: string };
}

interface Action {
  name: string;
  entityType: 'asset' | 'log';
  /** The permission on the list's entity type the action needs. */
  needs: 'update' | 'delete' | 'create' | 'view';
  /** It changes nothing itself: it answers with a file or a form (its confirmation promises no change). */
  answers?: true;
  /** Whether the list's bundles have what it sets. */
  offered(listView: ListView, principal: Principal): boolean;
  /** The confirmation page's inputs. */
  inputs?(run: Run, state: FormState, find: string | null): Promise<Html>;
  /** Do it; null when it answered the request itself (a file, a form). */
  apply(run: Run, uuids: string[], chosen: Chosen[]): Promise<Did | null>;
}

/** A problem with an action's inputs: the confirmation page again, with the message beside `input`. */
class InputProblem extends Error {
  constructor(
    readonly input: string,
    message: string,
  ) {
    super(message);
  }
}

export class BulkPages {
  private readonly bulk: BulkCommands;
  private readonly actions: Action[];

  constructor(
    private readonly ctx: AppContext,
    private readonly services: JsonApiServices,
    private readonly reads: WebReads,
    private readonly sessions: WebSessions,
    private readonly lists: ListPages,
    private readonly formats: Formats,
    private readonly fields: FieldForms,
    private readonly sheets: SheetPages,
  ) {
    this.bulk = farmCommands(ctx).bulk;
    this.actions = this.catalogue();
  }

  private send(res: Response, status: number, title: string, body: Html): void {
    const state = webState(res);
    sendPage(res, status, page(title, this.sessions.chrome(state, this.lists.nav(state.principal)), body));
  }

  /** The actions offered on this list to this person. */
  private offered(listView: ListView, principal: Principal): Action[] {
    const et = listView.bundles[0]!.rt.entityType;
    return this.actions.filter(
      (a) => a.entityType === et.entityType && mayOnType(principal, et, a.needs) && a.offered(listView, principal),
    );
  }

  /** Whether the person may change records of the list's type at all: else no bulk action is offered, and a POST is refused. */
  private mayAct(listView: ListView, principal: Principal): boolean {
    const et = listView.bundles[0]!.rt.entityType;
    return (
      (et.entityType === 'asset' || et.entityType === 'log') &&
      (['update', 'delete', 'create'] as const).some((op) => mayOnType(principal, et, op))
    );
  }

  /** ListTools.offer: the tick boxes and the form round the table (and the view's files, sheets.ts). */
  offer(res: Response, listView: ListView, view: URLSearchParams, count: number): ListOffer {
    const { principal, csrfToken } = webState(res);
    const links = this.sheets.links(res, listView, view);
    const actions = this.mayAct(listView, principal) ? this.offered(listView, principal) : [];
    if (!actions.length) return { links, select: null, head: html``, wrap: (t) => t };
    const labelField = listView.labelField;
    const kept = new URLSearchParams(view);
    for (const k of ['offset', 'cursor', 'deleted']) kept.delete(k);
    const n = Math.min(count, BULK_LIMIT);
    const controls = html`<fieldset class="card bulk"><legend>${M.bulk.legend}</legend>
<input type="hidden" name="csrf_token" value="${csrfToken}"><input type="hidden" name="view" value="${kept.toString()}">
<div><label for="bulk-action">${M.bulk.action}</label><select id="bulk-action" name="action"><option value="">${M.bulk.choose}</option>${actions.map((a) => html`<option value="${a.name}">${M.bulk.actions[a.name] ?? a.name}</option>`)}</select></div>
<div class="choice"><input type="checkbox" id="bulk-all" name="scope" value="all"><label for="bulk-all">${M.bulk.all(this.formats.number.format(n), count > BULK_LIMIT)}</label></div>
<p class="help">${M.bulk.limit(this.formats.number.format(BULK_LIMIT))}</p>
<div class="actions"><button class="primary" type="submit">${M.bulk.go}</button></div></fieldset>`;
    return {
      links,
      head: html`<th scope="col"><span class="visually-hidden">${M.bulk.selectColumn}</span></th>`,
      select: (r: Resource, _ctx: RenderContext) =>
        html`<td><input type="checkbox" name="id" value="${r.id}" aria-label="${M.bulk.select(labelOf(r, labelField))}"></td>`,
      wrap: (table) => html`<form method="post" action="${listView.path}/bulk">${controls}${table}</form>`,
    };
  }

  /** POST /farm/<entity type>/bulk and /farm/<entity type>/<bundle>/bulk. */
  routes(recordWrite: RequestHandler[]): Router {
    const router = express.Router();
    const handle = (bundle: (req: Request) => string | null) =>
      [
        ...recordWrite,
        (req: Request, res: Response, next: express.NextFunction) => {
          this.post(req, res, String(req.params.entityType), bundle(req)).catch(next);
        },
      ] as RequestHandler[];
    router.post('/farm/:entityType/bulk', ...handle(() => null));
    router.post('/farm/:entityType/:bundle/bulk', ...handle((req) => String(req.params.bundle)));
    return router;
  }

  private async post(req: Request, res: Response, entityType: string, bundle: string | null): Promise<void> {
    const { principal } = webState(res);
    const form = req.body as Form;
    const view = new URLSearchParams(formValue(form, 'view') ?? '');
    const listView = this.lists.viewOf(entityType, bundle, principal, view);
    if (!listView) throw new ApiError(404, M.errors.notFoundText);
    if (!this.mayAct(listView, principal))
      throw new ApiError(403, `The current user may not change ${entityType} records.`);
    const action = this.offered(listView, principal).find((a) => a.name === formValue(form, 'action'));
    if (!action) return this.problem(res, listView, M.bulk.unknownAction, 400);
    const { rt, ui } = listView.bundles.find((b) => listView.types.includes(b.rt)) ?? listView.bundles[0]!;
    const run: Run = { req, res, principal, listView, rt, ui, form, view, versions: versionsSent(form) };
    const step = formValue(form, 'step');
    const find = formAction(form);
    if (step !== 'apply' || find) {
      const chosen = await this.chosen(run, step === 'apply' || find !== null);
      if (chosen === 'over')
        return this.problem(res, listView, M.bulk.tooMany(this.formats.number.format(BULK_LIMIT)), 413);
      if (!chosen.length) return this.problem(res, listView, M.bulk.noneChosen, 400);
      return this.confirm(run, action, chosen, inputState(form), find?.kind === 'find' ? find.name : null);
    }
    const uuids = [...new Set(form.get('id') ?? [])];
    if (uuids.length > BULK_LIMIT)
      return this.problem(res, listView, M.bulk.tooMany(this.formats.number.format(BULK_LIMIT)), 413);
    if (!uuids.length) return this.problem(res, listView, M.bulk.noneChosen, 400);
    const chosen = await this.named(run, uuids);
    try {
      const did = await action.apply(
        run,
        chosen.map((c) => c.uuid),
        chosen,
      );
      if (did) this.summary(run, action, did, chosen);
    } catch (error) {
      if (error instanceof InputProblem) {
        const state = inputState(form);
        state.errors.set(error.input, [error.message]);
        return this.confirm(run, action, chosen, state, null, 422);
      }
      if (error instanceof BulkRefused) return this.refused(run, error);
      if (error instanceof ApiError && error.status < 500) {
        // A value the API refuses (a typed name no record has, a rule of the field): beside the input.
        const state = inputState(form);
        for (const object of errorObjects(error)) {
          const name = /^\/data\/(?:attributes|relationships)\/([^/]+)/.exec(object.source?.pointer ?? '')?.[1];
          if (name && form.has(name)) state.errors.set(name, [...(state.errors.get(name) ?? []), object.detail]);
          else state.general.push(object.detail);
        }
        if (!state.errors.size && !state.general.length) state.general.push(error.message);
        return this.confirm(run, action, chosen, state, null, error.status === 403 ? 403 : 422);
      }
      if (error instanceof Error && 'field' in error && typeof (error as { field: unknown }).field === 'string') {
        const state = inputState(form);
        state.errors.set((error as unknown as { field: string }).field, [error.message]);
        return this.confirm(run, action, chosen, state, null, 422);
      }
      throw error;
    }
  }

  /**
   * The records chosen on the list: those ticked (`explicit`: the confirmation's own ids), or all
   * matching the view's filters; read through the API's compiler with the access policy's
   * conditions, so nothing the person may not see is named. 'over': more than BULK_LIMIT.
   */
  private async chosen(run: Run, explicit: boolean): Promise<Chosen[] | 'over'> {
    const { listView, form, view, principal } = run;
    const all = !explicit && formValue(form, 'scope') === 'all';
    const ticked = [...new Set(form.get('id') ?? [])];
    if (!all && !ticked.length) return [];
    if (!all && ticked.length > BULK_LIMIT) return 'over';
    const { q } = this.lists.viewQuery(
      listView,
      all ? view : new URLSearchParams(view.has('sort') ? { sort: view.get('sort')! } : {}),
    );
    if (!all) q.condition('id', 'IN', ticked);
    const query = this.reads.query(listView.types[0]!, q.toString());
    const page = await fetchPageAcrossBundles(
      this.services.knex,
      this.reads.compiler,
      listView.types,
      query.filter,
      query.sort,
      { offset: 0, limit: BULK_LIMIT },
      principal,
    );
    if (page.hasMore) return 'over';
    return this.labels(listView, page.ids, run.versions);
  }

  /**
   * The records' names, in the order of `ids` (one load); with `versions`, each one's version too:
   * the one the form carries (a confirmation drawn again), else the record's now (one read).
   */
  private async labels(listView: ListView, ids: number[], versions?: Map<string, number>): Promise<Chosen[]> {
    if (!ids.length) return [];
    const et = listView.types[0]!.entityType;
    const now = versions ? await versionsOf(this.services.knex, et.entityType, ids) : new Map<number, number>();
    const fieldsets = new Map(listView.types.map((t) => [t.type, new Set([et.labelField])]));
    const records = await this.services.loader.load(
      this.services.knex,
      et.entityType,
      ids,
      fieldsets,
      undefined,
      listView.types.map((t) => t.bundle.bundle),
    );
    const byId = new Map(records.map((r) => [r.id, r]));
    return ids.flatMap((id) => {
      const r = byId.get(id);
      if (!r) return [];
      return [versions ? { ...chosenOf(r), version: versions.get(r.uuid) ?? now.get(id) ?? null } : chosenOf(r)];
    });
  }

  /** The confirmation's records named again at apply (one statement for their ids, one load); unknown ones stay named by UUID. */
  private async named(run: Run, uuids: string[]): Promise<Chosen[]> {
    const et = run.listView.types[0]!.entityType;
    const rows = (await this.services
      .knex(et.table)
      .whereIn(
        'uuid',
        uuids.map((u) => u.toLowerCase()),
      )
      .whereIn(
        'bundle',
        run.listView.types.map((t) => t.bundle.bundle),
      )
      .select('id', 'uuid')) as Array<{ id: number; uuid: string }>;
    const order = new Map(uuids.map((u, i) => [u.toLowerCase(), i]));
    rows.sort((a, b) => order.get(a.uuid)! - order.get(b.uuid)!);
    const found = await this.labels(
      run.listView,
      rows.map((r) => Number(r.id)),
    );
    const known = new Set(found.map((c) => c.uuid));
    // The versions confirmed stay those of the page: drawn again (a mistake in an input), it keeps them.
    for (const c of found) c.version = run.versions.get(c.uuid) ?? null;
    return [
      ...found,
      ...uuids.filter((u) => !known.has(u.toLowerCase())).map((u) => ({ uuid: u, type: '', label: u })),
    ];
  }

  private recordList(chosen: Chosen[]): Html {
    return html`<ol class="bulk-records">${chosen.map((c) => html`<li>${c.type ? html`<a href="${recordPath({ type: c.type, id: c.uuid })}">${c.label}</a>` : c.label}</li>`)}</ol>`;
  }

  /** Step 1's page: what, how many, the records named, the action's inputs. */
  private async confirm(
    run: Run,
    action: Action,
    chosen: Chosen[],
    state: FormState,
    find: string | null,
    status = 200,
  ): Promise<void> {
    const { csrfToken } = webState(run.res);
    const label = M.bulk.actions[action.name] ?? action.name;
    const inputs = action.inputs ? await action.inputs(run, state, find) : '';
    const problems =
      state.general.length || state.errors.size
        ? html`<div class="error" role="alert"><p>${M.bulk.problem}</p>${state.general.map((g) => html`<p>${g}</p>`)}</div>`
        : '';
    const body = html`${problems}<form class="card" method="post" action="${run.listView.path}/bulk" novalidate>
<input type="hidden" name="csrf_token" value="${csrfToken}"><input type="hidden" name="action" value="${action.name}"><input type="hidden" name="step" value="apply"><input type="hidden" name="view" value="${run.view.toString()}">
${chosen.map((c) => html`<input type="hidden" name="id" value="${c.uuid}">`)}
${chosen.map((c) => (c.version == null ? '' : html`<input type="hidden" name="version" value="${c.uuid}:${String(c.version)}">`))}
<p>${action.answers ? M.bulk.confirmAnswers(label, chosen.length) : M.bulk.confirmIntro(label, chosen.length)}</p>
${inputs}
<div class="actions"><button class="primary" type="submit">${M.bulk.confirm}</button><a class="button secondary" href="${listPath(run)}">${M.bulk.cancel}</a></div>
</form>
<section class="card" aria-labelledby="bulk-records"><h2 id="bulk-records">${M.bulk.records}</h2>${this.recordList(chosen)}</section>`;
    this.send(run.res, status, M.bulk.confirmTitle(label), body);
  }

  private summary(run: Run, action: Action, did: Did, chosen: Chosen[]): void {
    const changed = did.count ?? did.outcome.records.length;
    const clones = did.outcome.created;
    // An update leaves alone a record that already was so (a flag it had): said, with how many.
    const unchanged = action.needs === 'update' ? chosen.length - changed : 0;
    const listed =
      action.name === 'delete'
        ? html`<ol>${chosen.map((c) => html`<li>${c.label}</li>`)}</ol>`
        : this.recordList(chosen);
    const body = html`<p class="notice" role="status">${M.bulk.done(capitalise(did.what), changed)}</p>
${unchanged > 0 ? html`<p>${M.bulk.unchanged(unchanged)}</p>` : ''}
${did.log ? html`<p>${M.bulk.oneLog} <a href="${recordPath({ type: did.log.type, id: did.log.uuid })}">${did.log.label}</a></p>` : ''}
${clones.length ? html`<section class="card" aria-labelledby="bulk-clones"><h2 id="bulk-clones">${M.bulk.clones}</h2><ol>${clones.map((uuid, i) => html`<li><a href="${recordPath({ type: chosen[i]?.type || run.rt.type, id: uuid })}">${chosen[i]?.label ?? uuid}</a></li>`)}</ol></section>` : ''}
<section class="card" aria-labelledby="bulk-records"><h2 id="bulk-records">${M.bulk.records}</h2>${listed}</section>
<p class="actions"><a class="button" href="${listPath(run)}">${M.bulk.back}</a></p>`;
    this.send(run.res, 200, M.bulk.doneTitle, body);
  }

  private refused(run: Run, error: BulkRefused): void {
    const n = error.refused.length;
    const headline = error.refused.every((r) => r.changed) ? M.bulk.changedSince(n) : M.bulk.refused(n);
    const body = html`<div class="error" role="alert"><p>${headline}</p></div>
<section class="card"><ul>${error.refused.map((r) => html`<li><a href="${recordPath({ type: r.type, id: r.uuid })}">${r.label}</a>: ${this.reason(r)}</li>`)}</ul></section>
<p class="actions"><a class="button" href="${listPath(run)}">${M.bulk.back}</a></p>`;
    this.send(run.res, error.status === 403 ? 403 : 409, M.bulk.refusedTitle, body);
  }

  /** Why a record was refused; one changed since the confirmation, by whom and when, as a record's stale edit says. */
  private reason(r: Refusal): string {
    if (!r.changed) return r.reason;
    const when = r.changed.at === null ? null : this.formats.dateTime.format(new Date(r.changed.at * 1000));
    return M.bulk.stale(r.changed.by, when);
  }

  private problem(res: Response, listView: ListView, message: string, status: number): void {
    this.send(
      res,
      status,
      M.bulk.refusedTitle,
      html`<div class="error" role="alert"><p>${message}</p></div><p class="actions"><a class="button" href="${listView.path}">${M.bulk.back}</a></p>`,
    );
  }

  // --- the actions ---

  /** A change that sets fields to values read once from the action's inputs, as a record's form reads them. */
  private fieldChange(
    run: Run,
    names: string[],
  ): (trx: Db, first: EntityRecord) => Promise<Map<string, ItemValue | ItemValue[]>> {
    return async (trx, first) => {
      const ui = this.ctx.generated.ui.get(first.rt.type) ?? run.ui;
      const doc = await this.fields.read(trx, first.rt, ui, run.form, run.principal, names);
      const input = await this.services.input.read(
        trx,
        first.rt,
        { data: { type: first.rt.type, id: first.uuid, ...doc } },
        first,
      );
      return new Map(names.filter((n) => input.values.has(n)).map((n) => [n, input.values.get(n)!]));
    };
  }

  /** Update every record; `prepare` reads the inputs once, in the action's transaction. */
  private update(
    run: Run,
    uuids: string[],
    what: string,
    prepare: (trx: Db, first: EntityRecord) => Promise<BulkChange> | BulkChange,
  ): Promise<Did> {
    return this.bulk
      .update(run.principal, run.listView.types, uuids, {
        message: M.bulk.message(what, uuids.length),
        prepare,
        versions: run.versions,
      })
      .then((outcome) => ({ what, outcome }));
  }

  private catalogue(): Action[] {
    const has = (name: string) => (lv: ListView) =>
      lv.types.length > 0 && lv.types.every((t) => t.fieldsByName.has(name));
    const setTo = (name: string, value: ItemValue) => (record: EntityRecord) =>
      record.values.get(name) === value ? null : new Map<string, ItemValue | ItemValue[]>([[name, value]]);
    const status = (entityType: 'asset' | 'log', name: string, value: string, what: string): Action => ({
      name,
      entityType,
      needs: 'update',
      offered: has('status'),
      apply: (run, uuids) => this.update(run, uuids, what, () => setTo('status', value)),
    });
    const reference = (entityType: 'asset' | 'log', name: string, field: string, what: string): Action => ({
      name,
      entityType,
      needs: 'update',
      offered: (lv) =>
        has(field)(lv) &&
        Boolean(this.ctx.generated.ui.get(lv.types[0]!.type)?.fields.some((f) => f.name === field && f.widget)),
      inputs: (run, state, find) => this.fields.control(run.res, run.rt, run.ui, field, state, find === field),
      apply: (run, uuids) =>
        this.update(run, uuids, what, async (trx, first) => {
          const values = await this.fieldChange(run, [field])(trx, first);
          return () => new Map(values);
        }),
    });
    const flag = (entityType: 'asset' | 'log', name: 'flag_add' | 'flag_remove'): Action => ({
      name,
      entityType,
      needs: 'update',
      offered: has('flag'),
      inputs: async (run, state) => {
        const allowed = run.rt.fieldsByName.get('flag')?.allowedValues ?? [];
        const value = state.values.get('flag')?.[0] ?? '';
        const error = state.errors.get('flag')?.[0];
        return html`<div><label for="bulk-flag">${M.bulk.flag}</label><select id="bulk-flag" name="flag" ${error ? html`aria-invalid="true" aria-describedby="bulk-flag-error"` : ''}>${allowed.map((a) => html`<option value="${a.value}" ${a.value === value ? 'selected' : ''}>${a.label}</option>`)}</select>${error ? html`<p class="field-error" id="bulk-flag-error">${error}</p>` : ''}</div>`;
      },
      apply: (run, uuids) => {
        const chosen = formValue(run.form, 'flag') ?? '';
        const allowed = run.rt.fieldsByName.get('flag')?.allowedValues ?? [];
        const label = allowed.find((a) => a.value === chosen)?.label;
        if (!label) throw new InputProblem('flag', M.bulk.badFlag);
        const what = name === 'flag_add' ? M.bulk.did.flag_add(label) : M.bulk.did.flag_remove(label);
        return this.update(run, uuids, what, () => (record) => {
          const flags = [record.values.get('flag') ?? []].flat() as string[];
          if (name === 'flag_add') return flags.includes(chosen) ? null : new Map([['flag', [...flags, chosen]]]);
          return flags.includes(chosen) ? new Map([['flag', flags.filter((f) => f !== chosen)]]) : null;
        });
      },
    });
    const clone = (entityType: 'asset' | 'log'): Action => ({
      name: 'clone',
      entityType,
      needs: 'create',
      offered: () => true,
      // A log's copies are dated as the person says, now unless changed (farmOS's LogCloneActionForm
      // asks a date for them all); left empty, each keeps its log's date.
      inputs:
        entityType === 'log'
          ? async (_run, state) => {
              const error = state.errors.get('date')?.[0];
              const value = state.values.has('date')
                ? (state.values.get('date')?.[0] ?? '')
                : this.formats.inputDateTime(new Date().toISOString());
              return html`<div><label for="bulk-date">${M.bulk.cloneDate}</label><input type="datetime-local" id="bulk-date" name="date" value="${value}" aria-describedby="bulk-date-help${error ? ' bulk-date-error' : ''}" ${error ? html`aria-invalid="true"` : ''}>${error ? html`<p class="field-error" id="bulk-date-error">${error}</p>` : ''}<p class="help" id="bulk-date-help">${M.bulk.cloneDateHelp}</p></div>`;
            }
          : undefined,
      apply: async (run, uuids) => {
        const typed = entityType === 'log' ? (formValue(run.form, 'date') ?? '').trim() : '';
        const when = typed ? this.formats.parseInputDateTime(typed) : null;
        if (typed && !when) throw new InputProblem('date', M.bulk.badDate);
        const at = when ? Math.floor(when.getTime() / 1000) : null;
        const outcome = await this.bulk.clone(run.principal, run.listView.types, uuids, {
          message: M.bulk.message(M.bulk.did.clone, uuids.length),
          change: at === null ? undefined : () => new Map([['timestamp', at]]),
          versions: run.versions,
          owned: (rt) =>
            [...rt.fieldsByName.values()].filter((f) => f.target?.entityType === 'quantity').map((f) => f.name),
        });
        return { what: M.bulk.did.clone, outcome };
      },
    });
    const remove = (entityType: 'asset' | 'log'): Action => ({
      name: 'delete',
      entityType,
      needs: 'delete',
      offered: () => true,
      apply: async (run, uuids) => ({
        what: M.bulk.did.delete,
        outcome: await this.bulk.delete(run.principal, run.listView.types, uuids, { versions: run.versions }),
      }),
    });
    const exporting = (entityType: 'asset' | 'log'): Action => ({
      name: 'export',
      entityType,
      needs: 'view',
      answers: true,
      offered: () => true,
      inputs: async () =>
        html`<div><label for="bulk-format">${M.bulk.format}</label><select id="bulk-format" name="format">${FORMATS.map((f) => html`<option value="${f}">${M.sheets[f]}</option>`)}</select></div>`,
      apply: async (run, uuids) => {
        await this.sheets.exportRecords(run.res, run.listView, run.view, uuids, formValue(run.form, 'format') ?? 'csv');
        return null;
      },
    });
    /** One log for every asset chosen: a movement to a location, or an assignment to a group. */
    const oneLog = (name: 'move' | 'group', field: 'location' | 'group'): Action => ({
      name,
      entityType: 'asset',
      needs: 'view',
      offered: (_lv, principal) => {
        const log = this.movementLog();
        return Boolean(
          log &&
          mayOnType(principal, log.rt.entityType, 'create') &&
          log.rt.fieldsByName.has(field) &&
          log.rt.fieldsByName.has(name === 'move' ? 'is_movement' : 'is_group_assignment'),
        );
      },
      inputs: (run, state, find) => {
        const log = this.movementLog()!;
        return this.fields.control(run.res, log.rt, log.ui, field, state, find === field);
      },
      apply: async (run, uuids, chosen) => {
        const log = this.movementLog()!;
        const typed = (run.form.get(field) ?? []).flatMap((v) => v.split('\n')).filter((v) => v.trim());
        const to = typed.map((t) => t.replace(/\s*\[[0-9a-fA-F-]{36}\]\s*$/, '').trim()).join(', ');
        if (!to)
          throw new InputProblem(field, `${log.ui.fields.find((f) => f.name === field)?.label ?? field}: choose one.`);
        const what = name === 'move' ? M.bulk.did.move(to) : M.bulk.did.group(to);
        const saved = await this.services.commands.create(run.principal, log.rt, {
          read: async (trx) => {
            // The assets as confirmed: one moved since (by this very confirmation sent before, too) is named.
            await this.bulk.assertAsConfirmed(trx, run.principal, run.listView.types, uuids, run.versions);
            const doc = await this.fields.read(trx, log.rt, log.ui, run.form, run.principal, [field]);
            return this.services.input.read(trx, log.rt, {
              data: {
                type: log.rt.type,
                attributes: {
                  name: name === 'move' ? M.bulk.moveName(uuids.length, to) : M.bulk.groupName(uuids.length, to),
                  status: 'done',
                  timestamp: new Date().toISOString().replace(/\.\d{3}Z$/, '+00:00'),
                  [name === 'move' ? 'is_movement' : 'is_group_assignment']: true,
                },
                relationships: {
                  asset: { data: chosen.filter((c) => c.type).map((c) => ({ type: c.type, id: c.uuid })) },
                  [field]: doc.relationships[field],
                },
              },
            });
          },
          present: async () => null,
        });
        const label = saved.record.values.get(saved.record.rt.entityType.labelField);
        return {
          what,
          outcome: { records: [], created: [] },
          count: chosen.filter((c) => c.type).length,
          log: {
            type: saved.record.rt.type,
            uuid: saved.record.uuid,
            label: typeof label === 'string' && label ? label : saved.record.uuid,
          },
        };
      },
    });
    const recordLog: Action = {
      name: 'log',
      entityType: 'asset',
      needs: 'view',
      answers: true,
      offered: (_lv, principal) => this.logTypes(principal).length > 0,
      inputs: async (run) =>
        html`<div><label for="bulk-log-type">${M.bulk.logType}</label><select id="bulk-log-type" name="log_type">${this.logTypes(run.principal).map((b) => html`<option value="${b.rt.bundle.bundle}">${b.ui.label}</option>`)}</select></div>`,
      apply: async (run, _uuids, chosen) => {
        const b = this.logTypes(run.principal).find((x) => x.rt.bundle.bundle === formValue(run.form, 'log_type'));
        if (!b) throw new InputProblem('log_type', M.bulk.badLogType);
        await this.fields.prefilled(
          run.res,
          b.rt,
          b.ui,
          new Map([['asset', chosen.filter((c) => c.type).map((c) => `${c.label} [${c.uuid}]`)]]),
        );
        return null;
      },
    };
    const reschedule: Action = {
      name: 'reschedule',
      entityType: 'log',
      needs: 'update',
      offered: has('timestamp'),
      inputs: async (_run, state) => {
        const err = (n: string) => state.errors.get(n)?.[0];
        const field = (id: string, name: string, label: string, type: string, extra: Html | string = '') =>
          html`<div><label for="${id}">${label}</label><input type="${type}" id="${id}" name="${name}" value="${state.values.get(name)?.[0] ?? ''}" aria-describedby="bulk-reschedule-help${err(name) ? ` ${id}-error` : ''}" ${err(name) ? html`aria-invalid="true"` : ''} ${extra}>${err(name) ? html`<p class="field-error" id="${id}-error">${err(name)!}</p>` : ''}</div>`;
        return html`${field('bulk-to', 'to', M.bulk.rescheduleTo, 'datetime-local')}${field('bulk-days', 'days', M.bulk.rescheduleBy, 'number', html`step="1"`)}<p class="help" id="bulk-reschedule-help">${M.bulk.rescheduleHelp}</p>`;
      },
      apply: (run, uuids) => {
        const to = (formValue(run.form, 'to') ?? '').trim();
        const days = (formValue(run.form, 'days') ?? '').trim();
        if ((to && days) || (!to && !days)) throw new InputProblem(to ? 'days' : 'to', M.bulk.rescheduleOne);
        if (days) {
          const n = Number(days);
          if (!/^-?\d+$/.test(days) || Math.abs(n) > 3650) throw new InputProblem('days', M.bulk.badDays);
          return this.update(run, uuids, M.bulk.did.rescheduledBy(n), () => (record) => {
            const at = seconds(record.values.get('timestamp'));
            return at === null || n === 0 ? null : new Map([['timestamp', at + n * DAY]]);
          });
        }
        const when = this.formats.parseInputDateTime(to);
        if (!when) throw new InputProblem('to', M.bulk.badDate);
        const at = Math.floor(when.getTime() / 1000);
        return this.update(
          run,
          uuids,
          M.bulk.did.rescheduledTo(this.formats.dateTime.format(when)),
          () => (record) => (seconds(record.values.get('timestamp')) === at ? null : new Map([['timestamp', at]])),
        );
      },
    };
    return [
      status('asset', 'archive', 'archived', M.bulk.did.archive),
      status('asset', 'activate', 'active', M.bulk.did.activate),
      reference('asset', 'owner', 'owner', M.bulk.did.owner),
      flag('asset', 'flag_add'),
      flag('asset', 'flag_remove'),
      reference('asset', 'parent', 'parent', M.bulk.did.parent),
      oneLog('group', 'group'),
      oneLog('move', 'location'),
      recordLog,
      clone('asset'),
      remove('asset'),
      exporting('asset'),
      status('log', 'done', 'done', M.bulk.did.done),
      status('log', 'pending', 'pending', M.bulk.did.pending),
      reschedule,
      reference('log', 'owner', 'owner', M.bulk.did.owner),
      reference('log', 'category', 'category', M.bulk.did.category),
      flag('log', 'flag_add'),
      flag('log', 'flag_remove'),
      clone('log'),
      remove('log'),
      exporting('log'),
    ];
  }

  /** The log type movements and group assignments are recorded as, with its form. */
  private movementLog(): { rt: ResourceType; ui: BundleUi } | null {
    const rt = this.ctx.registry.get(this.ctx.registry.typeName(MOVEMENT_LOG.entityType, MOVEMENT_LOG.bundle));
    const ui = rt ? this.ctx.generated.ui.get(rt.type) : undefined;
    return rt && ui ? { rt, ui } : null;
  }

  /** The log types the person may add that name assets. */
  private logTypes(principal: Principal): Array<{ rt: ResourceType; ui: BundleUi }> {
    return this.lists
      .listable('log', principal)
      .filter(
        (b) =>
          mayOnType(principal, b.rt.entityType, 'create') && b.ui.fields.some((f) => f.name === 'asset' && f.widget),
      );
  }
}

function chosenOf(r: EntityRecord): Chosen {
  const label = r.values.get(r.rt.entityType.labelField);
  return { uuid: r.uuid, type: r.rt.type, label: typeof label === 'string' && label ? label : r.uuid };
}

/** The action inputs' values as sent, to draw them again. */
function inputState(form: Form): FormState {
  const values = new Map<string, string[]>();
  for (const [k, v] of form)
    if (!['csrf_token', 'id', 'version', 'action', 'step', 'view', 'scope'].includes(k)) values.set(k, v);
  return { values, errors: new Map(), general: [], version: '' };
}

/** The versions a confirmation carries, `<uuid>:<version>` each (UUIDs as the records name them). */
function versionsSent(form: Form): Map<string, number> {
  const versions = new Map<string, number>();
  for (const v of form.get('version') ?? []) {
    const m = /^([0-9a-fA-F-]{36}):(\d{1,15})$/.exec(v);
    if (m) versions.set(m[1]!.toLowerCase(), Number(m[2]));
  }
  return versions;
}

function listPath(run: Run): string {
  const qs = run.view.toString();
  return `${run.listView.path}${qs ? `?${qs}` : ''}`;
}

/** A stored time as Unix seconds. */
function seconds(value: unknown): number | null {
  if (typeof value === 'number') return value;
  if (typeof value === 'string' && /^\d+$/.test(value)) return Number(value);
  return null;
}

function capitalise(s: string): string {
  return s.charAt(0).toUpperCase() + s.slice(1);
}
