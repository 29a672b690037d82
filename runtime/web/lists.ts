/**
 * The dashboard, the index of each entity type's bundles, and every bundle's list, rendered from
 * its generated UI description (model/ui.ts): its columns, its filters and its default sort. The
 * URL holds the whole view (filters, sort, page), so a view can be bookmarked and shared; it is
 * written as the API's query (filter, sort, page) and read through the API's parts (reads.ts).
 */
// The farm map on the dashboard (issue 42).
import { MapPages } from './map.ts';
import type { Request, Response } from 'express';
import type { AppContext } from '../context.ts';
import type { ResourceType } from '../model/registry.ts';
import type { BundleUi } from '../model/ui.ts';
import { mayOnType } from '../access/policy.ts';
import type { Principal } from '../access/principal.ts';
import { html, type Html } from './html.ts';
import { M } from './messages.ts';
import { page, sendPage } from './layout.ts';
import { type Formats, type RenderContext, type Resource } from './format.ts';
import { COUNT_CAP, type WebReads } from './reads.ts';
import { formValue, safeReturn, webState, type Form, type WebSessions } from './session.ts';
import { ApiQuery } from './api-query.ts';
import { ListViews, TYPE_PARAM, type ListView } from './list-view.ts';
import { TASKS, TaskList, type TaskProblem } from './tasks.ts';
// helper `views`: saved views (issue 42 §5).
import { SavedViews } from './saved-views.ts';

/** The URL parameter that asks for a list view as a file (csv, geojson, kml: sheets.ts), as the API's `_format`. */
export const EXPORT_PARAM = '_format';

/** What a list offers beside its rows: bulk actions over them, and its view as files (bulk.ts, sheets.ts). */
export interface ListTools {
  /** The whole view as a file of `format` instead of its page. */
  export(res: Response, listView: ListView, view: URLSearchParams, format: string): Promise<void>;
  /** For this caller: links (files, import), and, when it may act on the rows, a tick box per row and the form round them. */
  offer(res: Response, listView: ListView, view: URLSearchParams, count: number): ListOffer;
}

export interface ListOffer {
  links: Html | string;
  /** The row's tick box cell, or null when no bulk action is offered. */
  select: ((r: Resource, ctx: RenderContext) => Html) | null;
  head: Html;
  wrap: (table: Html) => Html;
}

/** Rows per list page. */
export const PAGE_SIZE = 50;
const DAY = 86_400;

export { TASKS };
/** Active assets: their status. */
const ACTIVE = { entityType: 'asset', status: 'status', value: 'active' } as const;
/** Entity types with lists, in the navigation's order. */
export const LISTED = ['asset', 'log', 'quantity', 'taxonomy_term', 'organization', 'user'] as const;
/**
 * Entity types whose records are also listed all together, every bundle in one list (farmOS's
 * "Assets" and "Logs" views), with the columns in those views' order; a column not named here
 * (a base field a definition asks to list) follows them.
 */
export const ALL_LISTS: ReadonlyMap<string, readonly string[]> = new Map([
  ['log', ['status', 'timestamp', 'name', TYPE_PARAM, 'asset', 'location', 'quantity', 'category', 'owner', 'flag']],
  ['asset', ['name', TYPE_PARAM, 'location', 'flag', 'parent', 'owner', 'status']],
]);

export class ListPages {
  constructor(
    private readonly ctx: AppContext,
    private readonly reads: WebReads,
    private readonly sessions: WebSessions,
    private readonly formats: Formats,
  ) {
    this.views = new ListViews(ctx, formats);
    this.tasks = new TaskList(ctx, reads, formats);
    this.saved = new SavedViews(ctx, (path, principal) => this.isListPath(path, principal));
  }

  /** Saved views of lists (saved-views.ts): the dashboard lists them, each list saves its own. */
  readonly saved: SavedViews;

  /** Whether `path` is a list this caller may read: an all-records list or a bundle's. */
  isListPath(path: string, principal: Principal): boolean {
    const m = /^\/farm\/([a-z_]{1,64})(?:\/([a-z0-9_]{1,64}))?$/.exec(path);
    if (!m) return false;
    const bundles = this.listable(m[1]!, principal);
    return m[2] === undefined
      ? ALL_LISTS.has(m[1]!) && bundles.length > 0
      : bundles.some((b) => b.rt.bundle.bundle === m[2]);
  }

  private readonly views: ListViews;
  private readonly tasks: TaskList;
  /** Bulk actions and spreadsheets on lists (issue 42 §3, §4), attached once the pages that offer them exist (index.ts). */
  private tools: ListTools | null = null;

  attachTools(tools: ListTools): void {
    this.tools = tools;
  }

  /** The quick forms a person may use (quick.ts, set by index.ts): on the dashboard and in the navigation. */
  quickForms: (principal: Principal) => Array<{ href: string; label: string }> = () => [];

  /** The bundles of an entity type the caller may list, with a UI description. */
  listable(entityType: string, principal: Principal): Array<{ rt: ResourceType; ui: BundleUi }> {
    return this.ctx.registry
      .bundlesOf(entityType)
      .filter((rt) => mayOnType(principal, rt.entityType, 'view'))
      .flatMap((rt) => {
        const ui = this.ctx.generated.ui.get(rt.type);
        return ui ? [{ rt, ui }] : [];
      });
  }

  /** The navigation: one entry per entity type the caller may see. */
  nav(principal: Principal): Array<{ href: string; label: string }> {
    const out: Array<{ href: string; label: string }> = [{ href: '/farm', label: M.nav.dashboard }];
    for (const et of LISTED) {
      const type = this.ctx.registry.model.entityTypes[et];
      if (type && this.listable(et, principal).length)
        out.push({ href: `/farm/${et}`, label: capitalise(type.labelPlural) });
    }
    if (this.quickForms(principal).length) out.push({ href: '/farm/quick', label: M.quick.nav });
    return out;
  }

  renderContext(included: Map<string, Resource>): RenderContext {
    return {
      formats: this.formats,
      included,
      labelFieldOf: (et) => this.ctx.registry.model.entityTypes[et]?.labelField,
    };
  }

  private send(res: Response, status: number, title: string, body: Html, assets: string[] = []): void {
    const state = webState(res);
    sendPage(res, status, page(title, this.sessions.chrome(state, this.nav(state.principal)), body, { assets }));
  }

  /**
   * GET /farm: late and upcoming tasks (all or mine), each marked done or moved in place; counts;
   * links to every list. `problem`: a move that was not saved, said above the tasks.
   */
  async dashboard(req: Request, res: Response, problem?: TaskProblem): Promise<void> {
    const { principal, csrfToken } = webState(res);
    const mine = new URL(req.originalUrl, 'http://x').searchParams.get('tasks') === 'mine';
    const now = Math.floor(Date.now() / 1000);
    const logs = this.listable(TASKS.entityType, principal);
    const { late, upcoming } = await this.tasks.dashboard(logs, principal, mine, now);
    const mayUpdate = logs.length > 0 && mayOnType(principal, logs[0]!.rt.entityType, 'update');
    const returnTo = mine ? '/farm?tasks=mine' : '/farm';
    const taskList = (tasks: typeof late) => this.tasks.render(tasks, { csrfToken, returnTo, mayUpdate });
    const moved = new URL(req.originalUrl, 'http://x').searchParams.get('moved');

    const weekStart = now - 7 * DAY;
    const assetCounts: Html[] = [];
    for (const { rt, ui } of this.listable(ACTIVE.entityType, principal)) {
      const n = await this.reads.count(
        rt,
        this.reads.query(rt, new ApiQuery().condition(ACTIVE.status, '=', ACTIVE.value).toString()),
        principal,
      );
      if (n)
        assetCounts.push(
          html`<li><a href="/farm/${rt.entityType.entityType}/${rt.bundle.bundle}?${ACTIVE.status}=${ACTIVE.value}">${ui.label}</a>: ${countText(n, this.formats)}</li>`,
        );
    }
    const logCounts: Html[] = [];
    for (const { rt, ui } of logs) {
      const n = await this.reads.count(
        rt,
        this.reads.query(
          rt,
          new ApiQuery()
            .condition(TASKS.date, '>=', String(weekStart))
            .condition(TASKS.date, '<', String(now + 7 * DAY))
            .toString(),
        ),
        principal,
      );
      if (n)
        logCounts.push(
          html`<li><a href="/farm/${rt.entityType.entityType}/${rt.bundle.bundle}">${ui.label}</a>: ${countText(n, this.formats)}</li>`,
        );
    }
    const toggle = html`<p class="actions" aria-label="${M.dashboard.show}">
<a class="button ${mine ? 'secondary' : ''}" href="/farm" ${mine ? '' : html`aria-current="page"`}>${M.dashboard.all}</a>
<a class="button ${mine ? '' : 'secondary'}" href="/farm?tasks=mine" ${mine ? html`aria-current="page"` : ''}>${M.dashboard.mine}</a></p>`;
    const body = html`${problem ? html`<div class="error" role="alert"><p>${problem.message}</p></div>` : ''}${moved ? html`<p class="notice" role="status">${M.tasks.moved}</p>` : ''}${toggle}<div class="grid">
<section class="card" aria-labelledby="late"><h2 id="late">${M.dashboard.late}</h2>${taskList(late)}</section>
<section class="card" aria-labelledby="upcoming"><h2 id="upcoming">${M.dashboard.upcoming}</h2>${taskList(upcoming)}</section>
<section class="card" aria-labelledby="assets"><h2 id="assets">${M.dashboard.activeAssets}</h2>${assetCounts.length ? html`<ul class="plain">${assetCounts}</ul>` : html`<p class="muted">${M.dashboard.noTasks}</p>`}</section>
<section class="card" aria-labelledby="week"><h2 id="week">${M.dashboard.logsThisWeek}</h2>${logCounts.length ? html`<ul class="plain">${logCounts}</ul>` : html`<p class="muted">${M.dashboard.noTasks}</p>`}</section>
</div>
${await this.saved.section(principal, csrfToken)}
<section class="card" aria-labelledby="lists"><h2 id="lists">${M.dashboard.lists}</h2>${this.listLinks(principal)}</section>${quickBlock(this.quickForms(principal))}`;
    // The farm map (issue 42), after what the dashboard had: it shows only where its script runs.
    const map = await MapPages.of(this.ctx).dashboardCard(principal);
    this.send(res, problem?.status ?? 200, this.ctx.config.farmName, html`${body}${map}`, map ? ['map'] : []);
  }

  /** POST /farm/log/<bundle>/<uuid>/move (after the CSRF check): back to the dashboard, or the dashboard saying why not. */
  async moveTask(req: Request, res: Response, rt: ResourceType, uuid: string): Promise<void> {
    const form = req.body as Form;
    const problem = await this.tasks.move(webState(res).principal, rt, uuid, form);
    const back = safeReturn(formValue(form, 'return_to'));
    if (!problem) return res.redirect(303, `${back}${back.includes('?') ? '&' : '?'}moved=1`);
    // The dashboard the form came from, saying what happened: nothing was saved.
    req.originalUrl = back;
    await this.dashboard(req, res, problem);
  }

  private listLinks(principal: Principal): Html {
    return html`<div class="grid">${LISTED.map((et) => {
      const bundles = this.listable(et, principal);
      const type = this.ctx.registry.model.entityTypes[et];
      if (!bundles.length || !type) return '';
      const all = ALL_LISTS.has(et)
        ? html`<li><a href="/farm/${et}">${M.lists.all(capitalise(type.labelPlural))}</a></li>`
        : '';
      return html`<div><h3>${capitalise(type.labelPlural)}</h3><ul class="plain">${all}${bundles.map(({ rt, ui }) => html`<li><a href="/farm/${et}/${rt.bundle.bundle}">${ui.label}</a></li>`)}</ul></div>`;
    })}</div>`;
  }

  /**
   * GET /farm/<entity type>: for assets and logs, every bundle's records in one list (with links
   * to each type's own list); for the others, the list of their bundles.
   */
  async index(req: Request, res: Response, entityType: string): Promise<boolean> {
    const { principal } = webState(res);
    const type = this.ctx.registry.model.entityTypes[entityType];
    const bundles = this.listable(entityType, principal);
    if (!type || !bundles.length) return false;
    const links = html`<ul class="plain card">${bundles.map(({ rt, ui }) => html`<li><a href="/farm/${entityType}/${rt.bundle.bundle}">${ui.label}</a>${ui.description ? html` <span class="muted">${ui.description}</span>` : ''}</li>`)}</ul>`;
    if (!ALL_LISTS.has(entityType)) {
      this.send(res, 200, capitalise(type.labelPlural), links);
      return true;
    }
    const view = new URL(req.originalUrl, 'http://x').searchParams;
    const listView = this.views.all(bundles, principal, view, {
      title: M.lists.all(capitalise(type.labelPlural)),
      order: ALL_LISTS.get(entityType)!,
    });
    const byType = html`<details class="card"><summary>${M.lists.byType}</summary>${links}</details>`;
    await this.render(req, res, listView, byType);
    return true;
  }

  /** GET /farm/<entity type>/<bundle>: the bundle's list. */
  async list(req: Request, res: Response, rt: ResourceType, ui: BundleUi): Promise<void> {
    await this.render(req, res, this.views.bundle(rt, ui, webState(res).principal));
  }

  /**
   * A list's view (the URL's filters and sort) as the API's query: what its page, its bulk
   * actions' "all matching" (bulk.ts) and its exports (sheets.ts) read. `sortName` is the column
   * sorted by, as the URL names it.
   */
  viewQuery(listView: ListView, view: URLSearchParams): { q: ApiQuery; sortName: string } {
    const q = new ApiQuery();
    for (const f of listView.filters)
      this.views.applyFilter(
        q,
        listView.bundles.map((b) => b.rt),
        f,
        view,
      );
    const sortable = new Map(listView.columns.filter((c) => c.sort).map((c) => [c.name, c.sort!]));
    const asked = view.get('sort') ?? '';
    const askedColumn = asked.replace(/^-/, '');
    const sortName = sortable.has(askedColumn) ? asked : listView.sort;
    const descending = sortName.startsWith('-');
    const path = sortable.get(sortName.replace(/^-/, '')) ?? sortName.replace(/^-/, '');
    q.set('sort', `${descending ? '-' : ''}${path}`);
    return { q, sortName };
  }

  /**
   * The list view a path names (`/farm/<entity type>` for all of its records, or one bundle's),
   * for this caller and the URL's view; null when there is none (a 404).
   */
  viewOf(entityType: string, bundle: string | null, principal: Principal, view: URLSearchParams): ListView | null {
    const bundles = this.listable(entityType, principal);
    const type = this.ctx.registry.model.entityTypes[entityType];
    if (!type || !bundles.length) return null;
    if (bundle === null)
      return ALL_LISTS.has(entityType)
        ? this.views.all(bundles, principal, view, {
            title: M.lists.all(capitalise(type.labelPlural)),
            order: ALL_LISTS.get(entityType)!,
          })
        : null;
    const b = bundles.find((x) => x.rt.bundle.bundle === bundle);
    return b ? this.views.bundle(b.rt, b.ui, principal) : null;
  }

  /**
   * A list: its filters, sort and page, all in the URL, read through the API's query machinery in
   * a fixed number of statements whatever its rows (one page of ids, one load, one per include
   * level, one count).
   */
  private async render(req: Request, res: Response, listView: ListView, before: Html | string = ''): Promise<void> {
    const { principal } = webState(res);
    const view = new URL(req.originalUrl, 'http://x').searchParams;
    const { types, filters } = listView;
    // The columns the view asks for (`col`, repeated; saved views keep them), else all of them.
    const asked = new Set(view.getAll('col'));
    const chosen = listView.columns.filter((c) => asked.has(c.name));
    const columns = chosen.length ? chosen : listView.columns;
    const first = listView.bundles[0]!.rt;
    // A spreadsheet or map file of the whole view instead of its page (sheets.ts).
    const format = view.get(EXPORT_PARAM);
    if (format && this.tools) return this.tools.export(res, listView, view, format);
    const { q, sortName } = this.viewQuery(listView, view);
    q.set('page[limit]', String(PAGE_SIZE));
    const offset = Number(view.get('offset') ?? '0');
    if (Number.isSafeInteger(offset) && offset > 0) q.set('page[offset]', String(offset));
    const cursor = view.get('cursor');
    if (cursor) q.set('page[cursor]', cursor);
    const include = [...new Set(columns.flatMap((c) => c.include))];
    if (include.length) q.set('include', include.join(','));
    const query = this.reads.query(first, q.toString());
    const result = await this.reads.list(types, query, principal);
    const count = await this.reads.count(types, query, principal);
    const ctx = this.renderContext(result.included);

    const link = (changes: Record<string, string | null>) => {
      const next = new URLSearchParams(view);
      next.delete('offset');
      next.delete('cursor');
      next.delete('deleted');
      next.delete('view_saved');
      for (const [k, v] of Object.entries(changes)) v === null ? next.delete(k) : next.set(k, v);
      const qs = next.toString();
      return `${listView.path}${qs ? `?${qs}` : ''}`;
    };
    const current = sortName.replace(/^-/, '');
    const head = columns.map((c) => {
      if (!c.sort) return html`<th scope="col">${c.label}</th>`;
      const here = current === c.name;
      const descending = here && sortName.startsWith('-');
      const nextSort = here && !descending ? `-${c.name}` : c.name;
      return html`<th scope="col" ${here ? html`aria-sort="${descending ? 'descending' : 'ascending'}"` : ''}><a href="${link({ sort: nextSort })}" aria-label="${M.list.sortBy(c.label, nextSort.startsWith('-'))}">${c.label}${here ? (descending ? ' ↓' : ' ↑') : ''}</a></th>`;
    });
    // Bulk actions (a tick box per row in a form round the table) and the view's files (bulk.ts, sheets.ts).
    const offer = this.tools?.offer(res, listView, view, count) ?? null;
    if (offer?.select) head.unshift(offer.head);
    const rows = result.resources.map(
      (r) =>
        html`<tr>${offer?.select ? offer.select(r, ctx) : ''}${columns.map((c) => this.views.cell(listView, c, r, ctx))}</tr>`,
    );
    const filtering = [...view.keys()].some((k) => !['sort', 'offset', 'cursor', 'deleted', 'view_saved'].includes(k));
    const filterForm = html`<details class="card" ${filtering ? 'open' : ''}><summary>${M.list.filters}</summary>
<form class="filters" method="get" action="${listView.path}">
${listView.all ? this.views.typeControl(listView, view) : ''}
${filters.map((f) =>
  this.views.filterControl(
    listView.bundles.map((b) => b.rt),
    f,
    view,
  ),
)}
<fieldset class="columns"><legend>${M.savedViews.columns}</legend>${listView.columns.map((c) => html`<label class="choice"><input type="checkbox" name="col" value="${c.name}" ${columns.includes(c) ? 'checked' : ''}>${c.label}</label>`)}</fieldset>
${view.get('sort') ? html`<input type="hidden" name="sort" value="${view.get('sort')!}">` : ''}
<div class="actions"><button class="primary" type="submit">${M.list.apply}</button><a class="button secondary" href="${listView.path}">${M.list.clear}</a></div>
</form></details>`;
    const pager = html`<nav class="pager" aria-label="${M.lists.pages}">${offset > 0 ? html`<a class="button secondary" href="${link({})}">${M.list.first}</a>` : ''}${
      result.next
        ? html`<a class="button secondary" rel="next" href="${link({ offset: String(result.next.offset), cursor: result.next.cursor ?? null })}">${M.list.next}</a>`
        : ''
    }</nav>`;
    const actions =
      !listView.all && mayOnType(principal, first.entityType, 'create') && first.entityType.access !== 'file'
        ? html`<div class="actions"><a class="button" href="${listView.path}/new">${M.list.add(listView.title)}</a></div>`
        : '';
    const deleted = view.get('deleted');
    const saveView = principal.userId !== null ? this.saved.saveForm(listView.path, view, webState(res).csrfToken) : '';
    const savedNotice = view.get('view_saved') ? html`<p class="notice" role="status">${M.savedViews.saved}</p>` : '';
    const body = html`${deleted ? html`<p class="notice">${M.remove.done(deleted)}</p>` : ''}${savedNotice}${actions}${before}${filterForm}${saveView}
<p class="muted" role="status">${M.list.about(Math.min(count, COUNT_CAP), this.formats.number.format(Math.min(count, COUNT_CAP)), count > COUNT_CAP)}</p>
${offer?.links ?? ''}
${
  rows.length
    ? (offer?.wrap ?? ((t: Html) => t))(
        html`<div class="table-wrap"><table><thead><tr>${head}</tr></thead><tbody>${rows}</tbody></table></div>`,
      )
    : html`<p>${M.list.none}</p>`
}
${pager}`;
    this.send(res, 200, listView.title, body);
  }
}

function countText(n: number, formats: Formats): string {
  return n > COUNT_CAP ? `${formats.number.format(COUNT_CAP)}+` : formats.number.format(n);
}

export function capitalise(s: string): string {
  return s.charAt(0).toUpperCase() + s.slice(1);
}

/** The dashboard's quick forms: one link each, for a few taps from a phone (none: no block). */
function quickBlock(links: Array<{ href: string; label: string }>): Html | string {
  return links.length
    ? html`<section class="card" aria-labelledby="quick"><h2 id="quick">${M.quick.title}</h2><ul class="plain quick-list">${links.map((l) => html`<li><a href="${l.href}">${l.label}</a></li>`)}</ul></section>`
    : '';
}
