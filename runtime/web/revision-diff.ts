/**
 * What changed between two revisions of a record (issue 38 screen 4):
 * `GET /farm/<type>/<bundle>/<uuid>/revisions?from=<n>&to=<n>` shows who saved each and when,
 * and every field that differs, before and after, as the record's page shows a value. Read as the
 * API reads revisions (jsonapi/handlers/revision-history.ts and `?resourceVersion=id:<n>`): the
 * record through the view command (404 or 403 as the API answers), then its revisions' snapshots
 * as records (farm/loader.ts loadRevisions), rendered by the API's document writer, so a field
 * the reader may not see is not shown, whichever revision holds it.
 */
import type { Request, Response } from 'express';
import type { AppContext } from '../context.ts';
import type { ResourceType } from '../model/registry.ts';
import type { BundleUi } from '../model/ui.ts';
import { ApiError, notFound } from '../errors.ts';
import type { JsonApiServices } from '../jsonapi/handlers/services.ts';
import { REVISION_LOG_MESSAGE, REVISION_METADATA_FIELDS, type RevisionRow } from '../storage/revisions.ts';
import { html } from './html.ts';
import { M } from './messages.ts';
import { page, sendPage } from './layout.ts';
import { attributeValue, labelOf, recordPath, relationshipValue, type Formats, type Resource } from './format.ts';
import type { WebReads } from './reads.ts';
import { webState, type WebSessions } from './session.ts';
import type { ListPages } from './lists.ts';
import { revisionAuthors } from './record-page.ts';

export class RevisionDiffPage {
  constructor(
    private readonly ctx: AppContext,
    private readonly services: JsonApiServices,
    private readonly reads: WebReads,
    private readonly sessions: WebSessions,
    private readonly lists: ListPages,
    private readonly formats: Formats,
  ) {}

  /** GET /farm/<type>/<bundle>/<uuid>/revisions?from=&to=. */
  async show(req: Request, res: Response, rt: ResourceType, ui: BundleUi, uuid: string): Promise<void> {
    const state = webState(res);
    const { principal } = state;
    if (!rt.entityType.revisionId) throw notFound('This type of record keeps no revisions.');
    const view = new URL(req.originalUrl, 'http://x').searchParams;
    const number = (name: string) => {
      const text = view.get(name) ?? '';
      return /^\d{1,12}$/.test(text) ? Number(text) : NaN;
    };
    // Older first, whichever way round they were picked.
    const [from, to] = [number('from'), number('to')].sort((a, b) => a - b) as [number, number];
    if (!Number.isSafeInteger(from) || !Number.isSafeInteger(to) || from === to)
      throw new ApiError(400, M.diff.pickTwo);

    // The record as the API's view command reads it: 404 when there is none, 403 when it may not be read.
    const current = await this.services.commands.view(principal, rt, uuid);
    const store = this.services.loader.store.revisions;
    const entityType = rt.entityType.entityType;
    const before = await store.find(this.services.knex, entityType, current.id, from);
    const after = await store.find(this.services.knex, entityType, current.id, to);
    if (!before || !after) throw notFound('This record has no such revision.');
    const records = await this.services.loader.loadRevisions(this.services.knex, current, [before, after], null);
    for (const r of records) r.revisionView = true;
    const include = ui.fields
      .map((f) => rt.fieldsByName.get(f.name))
      .filter((d) => d?.kind === 'relationship' && !d.target?.entityType.startsWith('user_role'))
      .map((d) => d!.name);
    const doc = (await this.services.documents.document(
      this.services.knex,
      records,
      principal,
      this.reads.query(rt, include.length ? `include=${include.join(',')}` : ''),
      {},
    )) as { data: Resource[]; included?: Resource[] };
    const [old, now] = doc.data as [Resource, Resource];
    const ctx = this.lists.renderContext(new Map((doc.included ?? []).map((r) => [`${r.type}:${r.id}`, r])));

    // A field differs when what the API renders of it differs: its attribute, or the records it
    // names. Who saved each revision, when and why is said above the table, not as changes.
    const rows = ui.fields.flatMap((f) => {
      const d = rt.fieldsByName.get(f.name);
      if (!d || REVISION_METADATA_FIELDS.has(d.name) || d.name === REVISION_LOG_MESSAGE || d.auto === 'changed')
        return [];
      const of = (r: Resource) =>
        d.kind === 'relationship' ? r.relationships?.[f.name]?.data : r.attributes?.[f.name];
      if (JSON.stringify(of(old) ?? null) === JSON.stringify(of(now) ?? null)) return [];
      const shown = (r: Resource) =>
        d.kind === 'relationship'
          ? relationshipValue(r.relationships?.[f.name]?.data, ctx)
          : attributeValue(d, r.attributes?.[f.name], ctx);
      return [html`<tr><th scope="row">${f.label}</th><td>${shown(old)}</td><td>${shown(now)}</td></tr>`];
    });

    const names = await revisionAuthors(this.ctx, this.services, [before, after], principal);
    const saved = (r: RevisionRow) =>
      html`<li>${M.diff.saved(
        r.revisionId,
        r.userId !== null ? (names.get(r.userId) ?? null) : null,
        this.formats.dateTime.format(new Date(r.created * 1000)),
        r.message,
      )}</li>`;
    const ref = { type: rt.type, id: current.uuid };
    const body = html`<section class="card" aria-labelledby="diff"><h2 id="diff">${M.recordPage.changes}</h2><ul class="plain">${saved(before)}${saved(after)}</ul>${
      rows.length
        ? html`<div class="table-wrap" tabindex="0" role="region" aria-labelledby="diff"><table><thead><tr><th scope="col">${M.diff.field}</th><th scope="col">${M.diff.before(from)}</th><th scope="col">${M.diff.after(to)}</th></tr></thead><tbody>${rows}</tbody></table></div>`
        : html`<p>${M.diff.same}</p>`
    }<div class="actions"><a class="button secondary" href="${recordPath(ref)}#revisions">${M.diff.back}</a></div></section>`;
    const title = M.diff.title(labelOf(now, rt.entityType.labelField), from, to);
    sendPage(res, 200, page(title, this.sessions.chrome(state, this.lists.nav(principal)), body));
  }
}
