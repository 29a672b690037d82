/**
 * A record's page (issue 38 screen 4), for every bundle alike from its generated UI description:
 * every field as people read it (format.ts: dates in the farm's time zone, long text per its
 * format as `processed` is, files and images with thumbnails and downloads), the actions its
 * reader may take, its revisions (who, when, message, and a pick of two to compare:
 * revision-diff.ts), and beside it what it relates to (related.ts): an asset's logs newest first,
 * a location's contents, a term's uses. The record is loaded once, through the view command (the
 * API's access checks) and rendered by the API's document writer (reads.ts).
 */
import type { Request, Response } from 'express';
import type { AppContext } from '../context.ts';
import type { ResourceType } from '../model/registry.ts';
import type { BundleUi } from '../model/ui.ts';
import type { FieldDescriptor } from '../model/descriptor.ts';
import { mayOnRecord, mayOnType } from '../access/policy.ts';
import type { Principal } from '../access/principal.ts';
import type { JsonApiServices } from '../jsonapi/handlers/services.ts';
import type { EntityRecord } from '../storage/records.ts';
import type { RevisionSummary } from '../storage/revisions.ts';
import { html, type Html } from './html.ts';
import { M } from './messages.ts';
import { page, sendPage, type PageOptions } from './layout.ts';
import {
  attributeValue,
  filePath,
  labelOf,
  recordPath,
  relationshipValue,
  type Formats,
  type RenderContext,
  type Resource,
  type ResourceRef,
} from './format.ts';
import type { WebReads } from './reads.ts';
import { webState, type WebSessions } from './session.ts';
import type { ListPages } from './lists.ts';
import { ARCHIVE, hasArchive } from './records.ts';
import { parseLogCursor, type RelatedRecord, type RelatedRecords } from './related.ts';
import { MapPages } from './map.ts';
import { RecordCharts } from './charts.ts';
import { timelinePath } from './timeline.ts';

/** Revisions listed on a record's page, newest first. */
export const REVISIONS_SHOWN = 20;
/** The box a thumbnail fits in, in CSS pixels. */
const THUMBNAIL = 160;

/** The path of a record's revision comparison. */
export function diffPath(ref: ResourceRef, from: number, to: number): string {
  return `${recordPath(ref)}/revisions?from=${from}&to=${to}`;
}

/** A file or image field (their values are file records). */
function isFileField(d: FieldDescriptor): boolean {
  return d.kind === 'relationship' && (d.type === 'file' || d.type === 'image');
}

export class RecordPage {
  constructor(
    private readonly ctx: AppContext,
    private readonly services: JsonApiServices,
    private readonly reads: WebReads,
    private readonly sessions: WebSessions,
    private readonly lists: ListPages,
    private readonly formats: Formats,
    private readonly related: RelatedRecords,
  ) {}

  /** Readings and inventory charts below the fields (charts.ts, issue 42 §6). */
  private chartsMemo: RecordCharts | undefined;
  private get charts(): RecordCharts {
    return (this.chartsMemo ??= new RecordCharts(this.ctx, this.reads, this.formats));
  }

  private send(res: Response, status: number, title: string, body: Html, options: PageOptions = {}): void {
    const state = webState(res);
    sendPage(res, status, page(title, this.sessions.chrome(state, this.lists.nav(state.principal)), body, options));
  }

  /** GET /farm/<type>/<bundle>/<uuid>. */
  async show(req: Request, res: Response, rt: ResourceType, ui: BundleUi, uuid: string): Promise<void> {
    const { principal, csrfToken } = webState(res);
    const include = ui.fields
      .map((f) => rt.fieldsByName.get(f.name))
      .filter((d): d is FieldDescriptor => d?.kind === 'relationship' && !d.target?.entityType.startsWith('user_role'))
      .map((d) => d.name);
    const { resource, included, record } = await this.reads.record(rt, uuid, principal, include, true);
    const ctx = this.lists.renderContext(included);
    const view = new URL(req.originalUrl, 'http://x').searchParams;
    const notice = view.get('saved');
    const sections = ui.sections.map((section) => {
      const rows = ui.fields
        .filter((f) => f.section === section)
        .map((f) => {
          const d = rt.fieldsByName.get(f.name);
          if (!d) return '';
          const value = isFileField(d)
            ? this.files(d, resource.relationships?.[f.name]?.data, ctx)
            : d.kind === 'relationship'
              ? relationshipValue(resource.relationships?.[f.name]?.data, ctx)
              : attributeValue(d, resource.attributes?.[f.name], ctx);
          return html`<dt>${f.label}</dt><dd>${value}</dd>`;
        });
      const heading = M.form.sections[section] ?? humanise(section);
      return html`<section class="card">${heading ? html`<h2>${heading}</h2>` : ''}<dl class="fields">${rows}</dl></section>`;
    });
    const may = (op: 'update' | 'delete') =>
      mayOnType(principal, rt.entityType, op) && mayOnRecord(principal, rt.entityType, op, record);
    // An asset is archived or reactivated by its status (farmOS's Archive and Reactivate).
    const status = hasArchive(rt) ? resource.attributes?.[ARCHIVE.status] : undefined;
    const toStatus = status === ARCHIVE.archived ? ARCHIVE.active : ARCHIVE.archived;
    const buttons = [
      may('update') && ui.fields.some((f) => f.widget)
        ? html`<a class="button" href="${recordPath(resource)}/edit">${M.record.edit}</a>`
        : '',
      may('update') && status !== undefined
        ? html`<form method="post" action="${recordPath(resource)}/status"><input type="hidden" name="csrf_token" value="${csrfToken}"><input type="hidden" name="status" value="${toStatus}"><button class="button secondary" type="submit">${toStatus === ARCHIVE.archived ? M.status.archive : M.status.reactivate}</button></form>`
        : '',
      may('delete')
        ? html`<a class="button secondary" href="${recordPath(resource)}/delete">${M.remove.button}</a>`
        : '',
    ].filter((b) => b !== '');
    const actions = buttons.length ? html`<div class="actions">${buttons}</div>` : '';
    const notices: Record<string, string> = {
      created: M.record.created,
      saved: M.record.saved,
      archived: M.status.archived,
      reactivated: M.status.reactivated,
    };
    // The record's small map (the farm map, issue 42): its geometry, and a location's contents at it.
    const map = MapPages.of(this.ctx).recordMap(
      principal,
      labelOf(resource, rt.entityType.labelField),
      resource.attributes?.geometry ?? resource.attributes?.intrinsic_geometry,
    );
    const charts = await this.charts.section(rt, record, principal, view);
    const body = html`${notice ? html`<p class="notice" role="status">${notices[notice] ?? M.record.saved}</p>` : ''}${actions}${sections}${map}${charts}${await this.beside(rt, record, resource, principal, view)}${await this.revisions(rt, record, principal)}`;
    // The map's and the charts' scripts (browser/map.ts, browser/chart.ts) only where they are used.
    const assets = [...(map ? ['map'] : []), ...(charts.text.includes('class="chart ') ? ['chart'] : [])];
    this.send(res, 200, labelOf(resource, rt.entityType.labelField), body, { assets });
  }

  /** What the record relates to: an asset's logs (and a location's contents), a term's uses. */
  private async beside(
    rt: ResourceType,
    record: EntityRecord,
    resource: Resource,
    principal: Principal,
    view: URLSearchParams,
  ): Promise<Html | string> {
    const entityType = rt.entityType.entityType;
    if (entityType === 'asset') {
      const contents = this.related.isLocation(record) ? await this.related.contentsOf(record.uuid, principal) : null;
      const before = parseLogCursor(view.get('logs_before'));
      const { logs, next } = await this.related.logsOf(record.uuid, principal, before);
      const contentsSection = contents
        ? html`<section class="card" aria-labelledby="contents"><h2 id="contents">${M.recordPage.contents}</h2>${
            contents.assets.length
              ? this.table(contents.assets, [M.recordPage.name, M.recordPage.type, M.recordPage.status], contents.more)
              : html`<p class="muted">${M.recordPage.noContents}</p>`
          }</section>`
        : '';
      const pager =
        before || next
          ? html`<nav class="pager" aria-label="${M.recordPage.logs}">${before ? html`<a class="button secondary" href="${recordPath(resource)}#logs">${M.recordPage.newestLogs}</a>` : ''}${
              next
                ? html`<a class="button secondary" rel="next" href="${recordPath(resource)}?logs_before=${`${next.at}.${next.id}`}#logs">${M.recordPage.olderLogs}</a>`
                : ''
            }</nav>`
          : '';
      return html`${contentsSection}<section class="card" aria-labelledby="logs"><h2 id="logs">${M.recordPage.logs}</h2><p class="help">${M.recordPage.logsHelp}</p><p><a href="${timelinePath(resource)}">${M.timeline.link}</a></p>${
        logs.length
          ? this.table(logs, [M.recordPage.date, M.recordPage.name, M.recordPage.type, M.recordPage.status], false)
          : html`<p class="muted">${M.recordPage.noLogs}</p>`
      }${pager}</section>`;
    }
    if (entityType === 'taxonomy_term') {
      const { uses, more } = await this.related.usesOf(rt, record.uuid, principal);
      return html`<section class="card" aria-labelledby="uses"><h2 id="uses">${M.recordPage.usedBy}</h2>${
        uses.length
          ? this.table(uses, [M.recordPage.name, M.recordPage.type], more)
          : html`<p class="muted">${M.recordPage.notUsed}</p>`
      }</section>`;
    }
    return '';
  }

  /** Related records as a table: (date,) name linked to its page, type, (status). */
  private table(rows: RelatedRecord[], headings: string[], more: boolean): Html {
    const ctx = this.lists.renderContext(new Map());
    const withDate = headings.includes(M.recordPage.date);
    const withStatus = headings.includes(M.recordPage.status);
    const body = rows.map(({ resource, rt }) => {
      const ui = this.ctx.generated.ui.get(rt.type);
      const date = rt.fieldsByName.get('timestamp');
      const status = rt.fieldsByName.get('status');
      return html`<tr>${withDate ? html`<td>${date ? attributeValue(date, resource.attributes?.timestamp, ctx) : ''}</td>` : ''}<td><a href="${recordPath(resource)}">${labelOf(resource, rt.entityType.labelField)}</a></td><td>${ui?.label ?? rt.bundle.bundle}</td>${withStatus ? html`<td>${status ? attributeValue(status, resource.attributes?.status, ctx) : ''}</td>` : ''}</tr>`;
    });
    return html`<div class="table-wrap"><table><thead><tr>${headings.map((h) => html`<th scope="col">${h}</th>`)}</tr></thead><tbody>${body}</tbody></table></div>${more ? html`<p class="muted">${M.recordPage.andMore}</p>` : ''}`;
  }

  /**
   * A file or image field's files: an image as a thumbnail (an `<img>` of the image itself, its
   * width and height fitted into THUMBNAIL from the item's own, or the box when it has none)
   * linking to its download; every file as a download link with its size. Only files the API
   * would include for this reader are shown (the include's access check, reads.ts).
   */
  private files(d: FieldDescriptor, data: ResourceRef | ResourceRef[] | null | undefined, ctx: RenderContext): Html {
    const refs = (Array.isArray(data) ? data : data ? [data] : []) as Array<
      ResourceRef & { meta?: { alt?: string | null; width?: number | null; height?: number | null } }
    >;
    if (!refs.length) return html`<span class="muted">${M.record.empty}</span>`;
    return html`<ul class="plain files">${refs.map((ref) => {
      const file = ctx.included.get(`${ref.type}:${ref.id}`);
      if (!file) return html`<li class="muted">${M.record.hidden}</li>`;
      const name = labelOf(file, 'filename');
      const bytes = Number(file.attributes?.filesize);
      const size = Number.isFinite(bytes) && bytes >= 0 ? this.formats.fileSize(bytes) : '';
      const download = html`<a href="${filePath(file.id)}" download>${M.recordPage.download(name, size)}</a>`;
      if (d.type !== 'image') return html`<li>${download}</li>`;
      const w = Number(ref.meta?.width);
      const h = Number(ref.meta?.height);
      const known = w > 0 && h > 0;
      const scale = known ? Math.min(1, THUMBNAIL / Math.max(w, h)) : 1;
      const alt = ref.meta?.alt ? String(ref.meta.alt) : M.recordPage.imageOf(name);
      return html`<li><a class="thumb" href="${filePath(file.id)}"><img src="${filePath(file.id, true)}" alt="${alt}" width="${known ? Math.max(1, Math.round(w * scale)) : THUMBNAIL}" height="${known ? Math.max(1, Math.round(h * scale)) : THUMBNAIL}"></a> ${download}</li>`;
    })}</ul>`;
  }

  /**
   * The record's revisions, newest first: when, who and the message, each with a link to what it
   * changed, and a form picking two to compare (revision-diff.ts). Who is named only to those who
   * may view users, as the API includes them.
   */
  private async revisions(rt: ResourceType, record: EntityRecord, principal: Principal): Promise<Html> {
    if (!rt.entityType.revisionId) return html``;
    // One more than shown: the previous revision of the oldest shown, for its "changes" link.
    const rows = await this.services.loader.store.revisions.summaries(
      this.services.knex,
      rt.entityType.entityType,
      record.id,
      REVISIONS_SHOWN + 1,
    );
    if (!rows.length)
      return html`<section class="card" aria-labelledby="revisions"><h2 id="revisions">${M.record.revisions}</h2><p class="muted">${M.record.noRevisions}</p></section>`;
    const names = await revisionAuthors(this.ctx, this.services, rows, principal);
    const shown = rows.slice(0, REVISIONS_SHOWN);
    const ref = { type: rt.type, id: record.uuid };
    const comparable = shown.length > 1;
    const body = shown.map((r, i) => {
      const previous = rows[i + 1];
      const n = r.revisionId;
      return html`<tr>${
        comparable
          ? html`<td><input type="radio" name="from" value="${n}" aria-label="${M.recordPage.from(n)}" ${i === 1 ? 'checked' : ''}></td><td><input type="radio" name="to" value="${n}" aria-label="${M.recordPage.to(n)}" ${i === 0 ? 'checked' : ''}></td>`
          : ''
      }<td>${M.record.revision(n)}</td><td>${this.formats.dateTime.format(new Date(r.created * 1000))}</td><td>${r.userId !== null ? (names.get(r.userId) ?? M.record.empty) : M.record.empty}</td><td>${r.message ?? ''}</td><td>${
        previous
          ? html`<a href="${diffPath(ref, previous.revisionId, n)}" aria-label="${M.recordPage.changesOf(n)}">${M.recordPage.changes}</a>`
          : ''
      }</td></tr>`;
    });
    const head = html`<thead><tr>${comparable ? html`<th scope="col">${M.recordPage.fromColumn}</th><th scope="col">${M.recordPage.toColumn}</th>` : ''}<th scope="col">${M.record.revisions}</th><th scope="col">${M.record.when}</th><th scope="col">${M.record.who}</th><th scope="col">${M.record.message}</th><th scope="col">${M.recordPage.changes}</th></tr></thead>`;
    // Focusable, so that a table wider than a phone can be scrolled from the keyboard.
    const table = html`<div class="table-wrap" tabindex="0" role="region" aria-labelledby="revisions"><table>${head}<tbody>${body}</tbody></table></div>`;
    const more =
      rows.length > REVISIONS_SHOWN ? html`<p class="muted">${M.recordPage.newest(REVISIONS_SHOWN)}</p>` : '';
    return html`<section class="card" aria-labelledby="revisions"><h2 id="revisions">${M.record.revisions}</h2>${
      comparable
        ? html`<form method="get" action="${recordPath(ref)}/revisions"><p class="help">${M.recordPage.compareHelp}</p>${table}<div class="actions"><button class="primary" type="submit">${M.recordPage.compare}</button></div></form>`
        : table
    }${more}</section>`;
  }
}

/** The names of revisions' authors, in one statement, for those who may view users; none otherwise. */
export async function revisionAuthors(
  ctx: AppContext,
  services: JsonApiServices,
  rows: readonly RevisionSummary[],
  principal: Principal,
): Promise<Map<number, string>> {
  const userIds = [...new Set(rows.map((r) => r.userId).filter((u): u is number => u !== null))];
  const names = new Map<number, string>();
  const users = ctx.registry.model.entityTypes.user;
  if (userIds.length && users && mayOnType(principal, users, 'view')) {
    for (const u of await services.loader.load(services.knex, 'user', userIds, null))
      if (mayOnRecord(principal, users, 'view', u)) names.set(u.id, String(u.values.get('name') ?? ''));
  }
  return names;
}

function humanise(name: string): string {
  const s = name.replace(/_/g, ' ');
  return s.charAt(0).toUpperCase() + s.slice(1);
}
