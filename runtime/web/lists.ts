/**
 * The dashboard, the index of each entity type's bundles, and every bundle's list, rendered from
 * its generated UI description (model/ui.ts): its columns, its filters and its default sort. The
 * URL holds the whole view (filters, sort, page), so a view can be bookmarked and shared; it is
 * written as the API's query (filter, sort, page) and read through the API's parts (reads.ts).
 */
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

/** Rows per list page. */
export const PAGE_SIZE = 50;
const DAY = 86_400;

export { TASKS };
/** Active assets: their status. */
const ACTIVE = { entityType: 'asset', status: 'status', value: 'active' } as const;
/** Entity types with lists, in the navigation's order. */
export const LISTED = ['asset', 'log', 'quantity', 'taxonomy_term', 'user'] as const;
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
  }

  private readonly views: ListViews;
  private readonly tasks: TaskList;
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

  private send(res: Response, status: number, title: string, body: Html): void {
    const state = webState(res);
    sendPage(res, status, page(title, this.sessions.chrome(state, this.nav(state.principal)), body));
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
<section class="card" aria-labelledby="lists"><h2 id="lists">${M.dashboard.lists}</h2>${this.listLinks(principal)}</section>${quickBlock(this.quickForms(principal))}`;
    this.send(res, problem?.status ?? 200, this.ctx.config.farmName, body);
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
   * A list: its filters, sort and page, all in the URL, read through the API's query machinery in
   * a fixed number of statements whatever its rows (one page of ids, one load, one per include
   * level, one count).
   */
  private async render(req: Request, res: Response, listView: ListView, before: Html | string = ''): Promise<void> {
    const { principal } = webState(res);
    const view = new URL(req.originalUrl, 'http://x').searchParams;
    const { types, columns, filters } = listView;
    const first = listView.bundles[0]!.rt;
    const q = new ApiQuery();
    for (const f of filters)
      this.views.applyFilter(
        q,
        listView.bundles.map((b) => b.rt),
        f,
        view,
      );
    const sortable = new Map(columns.filter((c) => c.sort).map((c) => [c.name, c.sort!]));
    const asked = view.get('sort') ?? '';
    const askedColumn = asked.replace(/^-/, '');
    const sortName = sortable.has(askedColumn) ? asked : listView.sort;
    const sortPath = (name: string) => {
      const descending = name.startsWith('-');
      const path = sortable.get(name.replace(/^-/, '')) ?? name.replace(/^-/, '');
      return `${descending ? '-' : ''}${path}`;
    };
    q.set('sort', sortPath(sortName)).set('page[limit]', String(PAGE_SIZE));
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
    const rows = result.resources.map(
      (r) => html`<tr>${columns.map((c) => this.views.cell(listView, c, r, ctx))}</tr>`,
    );
    const filtering = [...view.keys()].some((k) => !['sort', 'offset', 'cursor', 'deleted'].includes(k));
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
    const body = html`${deleted ? html`<p class="notice">${M.remove.done(deleted)}</p>` : ''}${actions}${before}${filterForm}
<p class="muted" role="status">${M.list.about(Math.min(count, COUNT_CAP), this.formats.number.format(Math.min(count, COUNT_CAP)), count > COUNT_CAP)}</p>
${rows.length ? html`<div class="table-wrap"><table><thead><tr>${head}</tr></thead><tbody>${rows}</tbody></table></div>` : html`<p>${M.list.none}</p>`}
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
