/**
 * The dashboard, the index of each entity type's bundles, and every bundle's list, rendered from
 * its generated UI description (model/ui.ts): its columns, its filters and its default sort. The
 * URL holds the whole view (filters, sort, page), so a view can be bookmarked and shared; it is
 * written as the API's query (filter, sort, page) and read through the API's parts (reads.ts).
 */
import type { Request, Response } from 'express';
import type { AppContext } from '../context.ts';
import type { ResourceType } from '../model/registry.ts';
import type { BundleUi, UiFilter } from '../model/ui.ts';
import type { FieldDescriptor } from '../model/descriptor.ts';
import { mayOnType, fieldFilterable } from '../access/policy.ts';
import type { Principal } from '../access/principal.ts';
import { html, type Html } from './html.ts';
import { M } from './messages.ts';
import { page, sendPage } from './layout.ts';
import {
  attributeValue,
  labelOf,
  recordPath,
  relationshipValue,
  type Formats,
  type RenderContext,
  type Resource,
} from './format.ts';
import { COUNT_CAP, type WebReads } from './reads.ts';
import { webState, type WebSessions } from './session.ts';

/** Rows per list page. */
export const PAGE_SIZE = 50;
const DAY = 86_400;

/** farmOS's tasks: pending logs, by their date, owned by someone (the log entity type's base fields). */
export const TASKS = {
  entityType: 'log',
  status: 'status',
  pending: 'pending',
  done: 'done',
  date: 'timestamp',
  owner: 'owner',
} as const;
/** Active assets: their status. */
const ACTIVE = { entityType: 'asset', status: 'status', value: 'active' } as const;
/** Entity types with lists, in the navigation's order. */
export const LISTED = ['asset', 'log', 'quantity', 'taxonomy_term', 'user'] as const;

/** A filter of the API's query string, written as Drupal's long form. */
class ApiQuery {
  private readonly params = new URLSearchParams();
  private n = 0;
  condition(path: string, operator: string, value?: string | string[]): this {
    const key = `c${this.n++}`;
    this.params.set(`filter[${key}][condition][path]`, path);
    this.params.set(`filter[${key}][condition][operator]`, operator);
    if (Array.isArray(value)) value.forEach((v, i) => this.params.set(`filter[${key}][condition][value][${i}]`, v));
    else if (value !== undefined) this.params.set(`filter[${key}][condition][value]`, value);
    return this;
  }
  set(name: string, value: string): this {
    this.params.set(name, value);
    return this;
  }
  toString(): string {
    return this.params.toString();
  }
}

export class ListPages {
  constructor(
    private readonly ctx: AppContext,
    private readonly reads: WebReads,
    private readonly sessions: WebSessions,
    private readonly formats: Formats,
  ) {}

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

  /** GET /farm: late and upcoming tasks (all or mine), counts, links to every list. */
  async dashboard(req: Request, res: Response): Promise<void> {
    const { principal } = webState(res);
    const mine = new URL(req.originalUrl, 'http://x').searchParams.get('tasks') === 'mine';
    const now = Math.floor(Date.now() / 1000);
    const logs = this.listable(TASKS.entityType, principal);
    const tasks = async (from: number | null, to: number) => {
      const rows: Array<{ resource: Resource; ui: BundleUi }> = [];
      for (const { rt, ui } of logs) {
        const q = new ApiQuery()
          .condition(TASKS.status, '=', TASKS.pending)
          .condition(TASKS.date, '<', String(to))
          .set('sort', TASKS.date)
          .set('page[limit]', '10');
        if (from !== null) q.condition(TASKS.date, '>=', String(from));
        if (mine && principal.userUuid) q.condition(`${TASKS.owner}.id`, '=', principal.userUuid);
        const result = await this.reads.list(rt, this.reads.query(rt, q.toString()), principal);
        for (const resource of result.resources) rows.push({ resource, ui });
      }
      return rows
        .sort((a, b) =>
          String(a.resource.attributes?.[TASKS.date]).localeCompare(String(b.resource.attributes?.[TASKS.date])),
        )
        .slice(0, 20);
    };
    const late = await tasks(null, now);
    const upcoming = await tasks(now, now + 14 * DAY);
    const { csrfToken } = webState(res);
    const mayComplete = logs.length > 0 && mayOnType(principal, logs[0]!.rt.entityType, 'update');
    const returnTo = mine ? '/farm?tasks=mine' : '/farm';
    const taskList = (rows: Array<{ resource: Resource; ui: BundleUi }>) =>
      rows.length
        ? html`<ul class="plain">${rows.map(
            ({ resource, ui }) =>
              html`<li><a href="${recordPath(resource)}">${labelOf(resource, this.ctx.registry.model.entityTypes[TASKS.entityType]?.labelField)}</a> <span class="badge">${ui.label}</span> <span class="muted">${this.formats.dateTime.format(new Date(String(resource.attributes?.[TASKS.date])))}</span>${
                mayComplete
                  ? html`<form class="inline" method="post" action="${recordPath(resource)}/done"><input type="hidden" name="csrf_token" value="${csrfToken}"><input type="hidden" name="return_to" value="${returnTo}"><button class="button secondary" type="submit" aria-label="${M.dashboard.markDoneOf(labelOf(resource, this.ctx.registry.model.entityTypes[TASKS.entityType]?.labelField))}">${M.dashboard.markDone}</button></form>`
                  : ''
              }</li>`,
          )}</ul>`
        : html`<p class="muted">${M.dashboard.noTasks}</p>`;

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
    const body = html`${toggle}<div class="grid">
<section class="card" aria-labelledby="late"><h2 id="late">${M.dashboard.late}</h2>${taskList(late)}</section>
<section class="card" aria-labelledby="upcoming"><h2 id="upcoming">${M.dashboard.upcoming}</h2>${taskList(upcoming)}</section>
<section class="card" aria-labelledby="assets"><h2 id="assets">${M.dashboard.activeAssets}</h2>${assetCounts.length ? html`<ul class="plain">${assetCounts}</ul>` : html`<p class="muted">${M.dashboard.noTasks}</p>`}</section>
<section class="card" aria-labelledby="week"><h2 id="week">${M.dashboard.logsThisWeek}</h2>${logCounts.length ? html`<ul class="plain">${logCounts}</ul>` : html`<p class="muted">${M.dashboard.noTasks}</p>`}</section>
</div>
<section class="card" aria-labelledby="lists"><h2 id="lists">${M.dashboard.lists}</h2>${this.listLinks(principal)}</section>`;
    this.send(res, 200, this.ctx.config.farmName, body);
  }

  private listLinks(principal: Principal): Html {
    return html`<div class="grid">${LISTED.map((et) => {
      const bundles = this.listable(et, principal);
      const type = this.ctx.registry.model.entityTypes[et];
      if (!bundles.length || !type) return '';
      return html`<div><h3>${capitalise(type.labelPlural)}</h3><ul class="plain">${bundles.map(({ rt, ui }) => html`<li><a href="/farm/${et}/${rt.bundle.bundle}">${ui.label}</a></li>`)}</ul></div>`;
    })}</div>`;
  }

  /** GET /farm/<entity type>: its bundles. */
  async index(res: Response, entityType: string): Promise<boolean> {
    const { principal } = webState(res);
    const type = this.ctx.registry.model.entityTypes[entityType];
    const bundles = this.listable(entityType, principal);
    if (!type || !bundles.length) return false;
    this.send(
      res,
      200,
      capitalise(type.labelPlural),
      html`<ul class="plain card">${bundles.map(({ rt, ui }) => html`<li><a href="/farm/${entityType}/${rt.bundle.bundle}">${ui.label}</a>${ui.description ? html` <span class="muted">${ui.description}</span>` : ''}</li>`)}</ul>`,
    );
    return true;
  }

  /** GET /farm/<entity type>/<bundle>: the list, its filters, sort and pages, all in the URL. */
  async list(req: Request, res: Response, rt: ResourceType, ui: BundleUi): Promise<void> {
    const { principal } = webState(res);
    const view = new URL(req.originalUrl, 'http://x').searchParams;
    const filters = ui.list.filters.filter((f) => {
      const field = rt.fieldsByName.get(f.field);
      return field && fieldFilterable(field, principal, rt.entityType);
    });
    const q = new ApiQuery();
    for (const f of filters) this.applyFilter(q, rt, f, view);
    const sortable = new Set(
      ui.list.columns.filter((c) => {
        const field = rt.fieldsByName.get(c);
        return field && field.kind === 'attribute' && !field.multiple && !field.computed;
      }),
    );
    const asked = view.get('sort') ?? '';
    const sort = sortable.has(asked.replace(/^-/, '')) ? asked : ui.list.sort;
    q.set('sort', sort).set('page[limit]', String(PAGE_SIZE));
    const offset = Number(view.get('offset') ?? '0');
    if (Number.isSafeInteger(offset) && offset > 0) q.set('page[offset]', String(offset));
    const cursor = view.get('cursor');
    if (cursor) q.set('page[cursor]', cursor);
    const relationships = ui.list.columns.filter((c) => rt.fieldsByName.get(c)?.kind === 'relationship');
    if (relationships.length) q.set('include', relationships.join(','));
    const query = this.reads.query(rt, q.toString());
    const result = await this.reads.list(rt, query, principal);
    const count = await this.reads.count(rt, query, principal);
    const ctx = this.renderContext(result.included);

    const columns = ui.list.columns.map((c) => rt.fieldsByName.get(c)).filter((f): f is FieldDescriptor => Boolean(f));
    const labelField = rt.entityType.labelField;
    const link = (changes: Record<string, string | null>) => {
      const next = new URLSearchParams(view);
      next.delete('offset');
      next.delete('cursor');
      for (const [k, v] of Object.entries(changes)) v === null ? next.delete(k) : next.set(k, v);
      const qs = next.toString();
      return `/farm/${rt.entityType.entityType}/${rt.bundle.bundle}${qs ? `?${qs}` : ''}`;
    };
    const head = columns.map((f) => {
      if (!sortable.has(f.name)) return html`<th scope="col">${f.label}</th>`;
      const current = sort.replace(/^-/, '') === f.name;
      const descending = current && sort.startsWith('-');
      const nextSort = current && !descending ? `-${f.name}` : f.name;
      return html`<th scope="col" ${current ? html`aria-sort="${descending ? 'descending' : 'ascending'}"` : ''}><a href="${link({ sort: nextSort })}" aria-label="${M.list.sortBy(f.label, nextSort.startsWith('-'))}">${f.label}${current ? (descending ? ' ↓' : ' ↑') : ''}</a></th>`;
    });
    const rows = result.resources.map(
      (r) =>
        html`<tr>${columns.map((f) => {
          const value =
            f.kind === 'relationship'
              ? relationshipValue(r.relationships?.[f.name]?.data, ctx)
              : attributeValue(f, r.attributes?.[f.name], ctx);
          return f.name === labelField
            ? html`<td><a href="${recordPath(r)}">${labelOf(r, labelField)}</a></td>`
            : html`<td>${value}</td>`;
        })}</tr>`,
    );
    const filterForm = html`<details class="card" ${[...view.keys()].some((k) => k !== 'sort' && k !== 'offset' && k !== 'cursor') ? 'open' : ''}><summary>${M.list.filters}</summary>
<form class="filters" method="get" action="/farm/${rt.entityType.entityType}/${rt.bundle.bundle}">
${filters.map((f) => this.filterControl(rt, f, view))}
${view.get('sort') ? html`<input type="hidden" name="sort" value="${view.get('sort')!}">` : ''}
<div class="actions"><button class="primary" type="submit">${M.list.apply}</button><a class="button secondary" href="/farm/${rt.entityType.entityType}/${rt.bundle.bundle}">${M.list.clear}</a></div>
</form></details>`;
    const pager = html`<nav class="pager" aria-label="pages">${offset > 0 ? html`<a class="button secondary" href="${link({})}">${M.list.first}</a>` : ''}${
      result.next
        ? html`<a class="button secondary" rel="next" href="${link({ offset: String(result.next.offset), cursor: result.next.cursor ?? null })}">${M.list.next}</a>`
        : ''
    }</nav>`;
    const actions =
      mayOnType(principal, rt.entityType, 'create') && rt.entityType.access !== 'file'
        ? html`<div class="actions"><a class="button" href="/farm/${rt.entityType.entityType}/${rt.bundle.bundle}/new">${M.list.add(ui.label)}</a></div>`
        : '';
    const deleted = view.get('deleted');
    const body = html`${deleted ? html`<p class="notice">${M.remove.done(deleted)}</p>` : ''}${actions}${filterForm}
<p class="muted" role="status">${M.list.about(Math.min(count, COUNT_CAP), this.formats.number.format(Math.min(count, COUNT_CAP)), count > COUNT_CAP)}</p>
${rows.length ? html`<div class="table-wrap"><table><thead><tr>${head}</tr></thead><tbody>${rows}</tbody></table></div>` : html`<p>${M.list.none}</p>`}
${pager}`;
    this.send(res, 200, ui.label, body);
  }

  /** One filter of the view as conditions of the API's query; an empty input adds none. */
  private applyFilter(q: ApiQuery, rt: ResourceType, f: UiFilter, view: URLSearchParams): void {
    const value = view.get(f.field)?.trim();
    switch (f.kind) {
      case 'contains':
        if (value) q.condition(f.field, 'CONTAINS', value);
        return;
      case 'equals':
        if (value) q.condition(f.field, '=', value);
        return;
      case 'boolean':
        if (value === '1' || value === '0') q.condition(f.field, '=', value);
        return;
      case 'reference': {
        const target = rt.fieldsByName.get(f.field)?.target?.entityType;
        const label = target ? this.ctx.registry.model.entityTypes[target]?.labelField : undefined;
        if (value && label) q.condition(`${f.field}.${label}`, 'CONTAINS', value);
        return;
      }
      case 'range': {
        const from = view.get(`${f.field}_from`) ? this.formats.parseInputDateTime(view.get(`${f.field}_from`)!) : null;
        const to = view.get(`${f.field}_to`) ? this.formats.parseInputDateTime(view.get(`${f.field}_to`)!) : null;
        if (from) q.condition(f.field, '>=', String(Math.floor(from.getTime() / 1000)));
        if (to) q.condition(f.field, '<', String(Math.floor(to.getTime() / 1000) + DAY));
        return;
      }
    }
  }

  private filterControl(rt: ResourceType, f: UiFilter, view: URLSearchParams): Html {
    const id = `filter-${f.field}`;
    const value = view.get(f.field) ?? '';
    switch (f.kind) {
      case 'equals': {
        const allowed = rt.fieldsByName.get(f.field)?.allowedValues;
        if (allowed) {
          return html`<div><label for="${id}">${f.label}</label><select id="${id}" name="${f.field}"><option value="">${M.list.any}</option>${allowed.map((a) => html`<option value="${a.value}" ${a.value === value ? 'selected' : ''}>${a.label}</option>`)}</select></div>`;
        }
        return html`<div><label for="${id}">${f.label}</label><input type="text" id="${id}" name="${f.field}" value="${value}"></div>`;
      }
      case 'boolean':
        return html`<div><label for="${id}">${f.label}</label><select id="${id}" name="${f.field}"><option value="">${M.list.any}</option><option value="1" ${value === '1' ? 'selected' : ''}>${M.list.yes}</option><option value="0" ${value === '0' ? 'selected' : ''}>${M.list.no}</option></select></div>`;
      case 'range':
        return html`<div><label for="${id}-from">${f.label} ${M.list.from}</label><input type="date" id="${id}-from" name="${f.field}_from" value="${view.get(`${f.field}_from`) ?? ''}">
<label for="${id}-to">${f.label} ${M.list.to}</label><input type="date" id="${id}-to" name="${f.field}_to" value="${view.get(`${f.field}_to`) ?? ''}"></div>`;
      default:
        return html`<div><label for="${id}">${f.label} ${M.list.contains}</label><input type="search" id="${id}" name="${f.field}" value="${value}"></div>`;
    }
  }
}

function countText(n: number, formats: Formats): string {
  return n > COUNT_CAP ? `${formats.number.format(COUNT_CAP)}+` : formats.number.format(n);
}

export function capitalise(s: string): string {
  return s.charAt(0).toUpperCase() + s.slice(1);
}
