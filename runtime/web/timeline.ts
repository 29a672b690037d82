/**
 * An asset's timeline (issue 42 §5, farmOS issue #308): its logs on a time axis, newest first,
 * grouped by day in the farm's time zone, each with its type's icon (a CSS sprite served by Tilth,
 * views-style.ts), its quantities and, for a movement, where it moved things; and under each, where
 * the asset was once that log was done (its location intervals, farm/placements.ts). Paged by
 * keyset (date, then id) as the asset's page is: the logs come from RelatedRecords.logsOf (one
 * page query per log type, one load, one per include level), the places from one indexed query
 * of the intervals over the page's span and one load of their names, whatever the asset holds.
 */
import type { Request, Response } from 'express';
import type { AppContext } from '../context.ts';
import type { ResourceType } from '../model/registry.ts';
import type { Principal } from '../access/principal.ts';
import { mayOnRecord, mayOnType } from '../access/policy.ts';
import { html, join, type Html } from './html.ts';
import { M } from './messages.ts';
import { page, sendPage } from './layout.ts';
import { attributeValue, labelOf, recordPath, type Formats, type Resource, type ResourceRef } from './format.ts';
import type { WebReads } from './reads.ts';
import { webState, type WebSessions } from './session.ts';
import type { ListPages } from './lists.ts';
import { parseLogCursor, type RelatedRecords } from './related.ts';
import { iconClass } from './views-style.ts';

/** What a timeline reads of each log beyond its name, date and status. */
const SHAPE = {
  fields: ['quantity', 'location', 'is_movement'],
  include: ['quantity', 'quantity.units', 'location'],
} as const;

export function timelinePath(ref: ResourceRef): string {
  return `${recordPath(ref)}/timeline`;
}

export class TimelinePage {
  constructor(
    private readonly ctx: AppContext,
    private readonly reads: WebReads,
    private readonly sessions: WebSessions,
    private readonly lists: ListPages,
    private readonly formats: Formats,
    private readonly related: RelatedRecords,
  ) {}

  /** GET /farm/asset/<bundle>/<uuid>/timeline[?before=<date>.<id>]. */
  async show(req: Request, res: Response, rt: ResourceType, uuid: string): Promise<void> {
    const state = webState(res);
    const { principal } = state;
    const { resource, record } = await this.reads.record(rt, uuid, principal, []);
    const view = new URL(req.originalUrl, 'http://x').searchParams;
    const before = parseLogCursor(view.get('before'));
    const { logs, next, included } = await this.related.logsOf(record.uuid, principal, before, SHAPE);
    const at = (r: Resource) => Math.floor(Date.parse(String(r.attributes?.timestamp ?? '')) / 1000);
    const times = logs.map((l) => at(l.resource)).filter(Number.isFinite);
    const places = times.length
      ? await this.placesBetween(record.id, Math.min(...times), Math.max(...times), principal)
      : { intervals: [], names: new Map<number, ResourceRef & { label: string }>() };
    const whereAt = (t: number): Html => {
      const interval = [...places.intervals].reverse().find((i) => i.start <= t && (i.end === null || t < i.end));
      const names = (interval?.locations ?? []).map((l) => places.names.get(l.targetId)).filter((n) => n !== undefined);
      return names.length
        ? join(
            names.map((n) => html`<a href="${recordPath(n)}">${n.label}</a>`),
            ', ',
          )
        : html`${M.timeline.nowhere}`;
    };
    const ctx = this.lists.renderContext(included);
    const days = new Map<string, Html[]>();
    for (const { resource: log, rt: logRt } of logs) {
      const t = at(log);
      const iso = new Date(t * 1000).toISOString();
      const day = this.formats.inputDateTime(iso).slice(0, 10);
      const ui = this.ctx.generated.ui.get(logRt.type);
      const status = logRt.fieldsByName.get('status');
      const quantities = this.quantities(log, included);
      const movement = log.attributes?.is_movement === true ? this.movement(log, included) : '';
      const entry = html`<li class="event"><span class="log-icon ${iconClass(logRt.bundle.bundle)}" aria-hidden="true"></span><div><p class="event-head"><time datetime="${iso}">${this.formats.dateTime.format(new Date(t * 1000))}</time> <a href="${recordPath(log)}">${labelOf(log, logRt.entityType.labelField)}</a> <span class="badge">${ui?.label ?? logRt.bundle.bundle}</span> ${status ? attributeValue(status, log.attributes?.status, ctx) : ''}</p>${quantities}${movement}<p class="muted where">${M.timeline.whereAfter('')}${whereAt(t)}</p></div></li>`;
      if (!days.has(day)) days.set(day, []);
      days.get(day)!.push(entry);
    }
    const sections = [...days].map(
      ([day, entries], i) =>
        html`<section class="card day" aria-labelledby="day-${i}"><h2 id="day-${i}"><time datetime="${day}">${this.formats.date.format(new Date(`${day}T12:00:00Z`))}</time></h2><ol class="timeline">${entries}</ol></section>`,
    );
    const base = timelinePath(resource);
    const pager =
      before || next
        ? html`<nav class="pager" aria-label="${M.recordPage.logs}">${before ? html`<a class="button secondary" href="${base}">${M.timeline.newest}</a>` : ''}${
            next
              ? html`<a class="button secondary" rel="next" href="${base}?before=${`${next.at}.${next.id}`}">${M.timeline.older}</a>`
              : ''
          }</nav>`
        : '';
    const name = labelOf(resource, rt.entityType.labelField);
    const body = html`<p class="actions"><a class="button secondary" href="${recordPath(resource)}">${M.timeline.back}</a></p><p class="help">${M.timeline.help}</p>${
      sections.length ? sections : html`<p class="muted">${M.timeline.none}</p>`
    }${pager}`;
    sendPage(res, 200, page(M.timeline.title(name), this.sessions.chrome(state, this.lists.nav(principal)), body));
  }

  /** The asset's location intervals over [from, to], and the names of the locations this caller may see. */
  private async placesBetween(assetId: number, from: number, to: number, principal: Principal) {
    const knex = this.ctx.db.knex;
    const intervals = await this.ctx.services.placements.intervalsOf(knex, assetId, from, to);
    const ids = [...new Set(intervals.flatMap((i) => i.locations.map((l) => l.targetId)))];
    const names = new Map<number, ResourceRef & { label: string }>();
    const assets = this.ctx.registry.model.entityTypes.asset;
    if (ids.length && assets && mayOnType(principal, assets, 'view')) {
      const fields = new Map(this.ctx.registry.bundlesOf('asset').map((b) => [b.type, new Set([assets.labelField])]));
      for (const a of await this.ctx.services.loader.load(knex, 'asset', ids, fields))
        if (mayOnRecord(principal, assets, 'view', a))
          names.set(a.id, { type: a.rt.type, id: a.uuid, label: String(a.values.get(assets.labelField) ?? '') });
    }
    return { intervals, names };
  }

  /** A log's quantities: value, units, measure and label, as the API includes them for this caller. */
  private quantities(log: Resource, included: Map<string, Resource>): Html | string {
    const refs = asRefs(log.relationships?.quantity?.data);
    const shown = refs.map((ref) => included.get(`${ref.type}:${ref.id}`)).filter((q) => q !== undefined);
    if (!shown.length) return '';
    return html`<ul class="plain quantities" aria-label="${M.timeline.quantities}">${shown.map((q) => {
      const decimal = (q.attributes?.value as { decimal?: string } | null | undefined)?.decimal;
      const units = asRefs(q.relationships?.units?.data)[0];
      const unit = units ? labelOf(included.get(`${units.type}:${units.id}`), 'name') : '';
      const text = [
        q.attributes?.measure ? String(q.attributes.measure) : '',
        decimal !== undefined && decimal !== null ? this.formats.number.format(Number(decimal)) : '',
        unit,
        q.attributes?.label ? `(${String(q.attributes.label)})` : '',
      ]
        .filter(Boolean)
        .join(' ');
      return html`<li>${text}</li>`;
    })}</ul>`;
  }

  /** A movement: the locations it moved its assets to. */
  private movement(log: Resource, included: Map<string, Resource>): Html {
    const refs = asRefs(log.relationships?.location?.data);
    const names = refs.map((ref) => included.get(`${ref.type}:${ref.id}`)).filter((r) => r !== undefined);
    if (!names.length) return html`<p class="movement">${M.timeline.movedNowhere}</p>`;
    return html`<p class="movement">${M.timeline.movedTo('')}${join(
      names.map((n) => html`<a href="${recordPath(n)}">${labelOf(n, 'name')}</a>`),
      ', ',
    )}</p>`;
  }
}

function asRefs(data: unknown): ResourceRef[] {
  return (Array.isArray(data) ? data : data ? [data] : []) as ResourceRef[];
}
