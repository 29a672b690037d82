/**
 * Saved views (issue 42 §5): a person names a list's address (its path and query: filters,
 * columns, sort) and finds it again on the dashboard. A view is its owner's alone until a manager
 * (farm_manager or administrator) shares one of their own with everyone; only its owner changes
 * or deletes it. Names are unique per owner, at most NAME_MAX characters, and a person keeps at
 * most MAX_PER_USER views. What is saved is checked as an address of one of this site's lists the
 * person may read, and rendered as text (html.ts escapes it); opening a view is opening the list,
 * which checks the reader's rights again, so a shared view shows each reader only what they may see.
 * Stored in `tilth_saved_view` (core migration 0016).
 */
import type { Knex } from 'knex';
import type { AppContext } from '../context.ts';
import type { Principal } from '../access/principal.ts';
import { ApiError } from '../errors.ts';
import { write } from '../storage/transactions.ts';
import { lockToChangeWhere } from '../storage/locks.ts';
import { html, type Html } from './html.ts';
import { M } from './messages.ts';

export const MAX_PER_USER = 50;
export const NAME_MAX = 128;
const QUERY_MAX = 4096;
/** Shared views listed on the dashboard, at most (every manager's, newest first). */
const SHARED_SHOWN = 100;
const TABLE = 'tilth_saved_view';
/** Parts of a list's address that are a place in it, not its view. */
const NOT_VIEW = ['offset', 'cursor', 'deleted', 'view_saved'];

export interface SavedView {
  id: number;
  ownerId: number;
  ownerName: string;
  name: string;
  path: string;
  query: string;
  shared: boolean;
}

/** Whether a person may share views with everyone: a manager. */
export function mayShare(principal: Principal): boolean {
  return principal.roles.includes('farm_manager') || principal.roles.includes('administrator');
}

/** A list's address without the parts that are a place in it: what a view saves. */
export function viewQuery(search: URLSearchParams): string {
  const q = new URLSearchParams(search);
  for (const k of NOT_VIEW) q.delete(k);
  return q.toString();
}

export class SavedViews {
  constructor(
    private readonly ctx: AppContext,
    /** Whether `path` is a list this caller may read (lists.ts). */
    private readonly isList: (path: string, principal: Principal) => boolean,
  ) {}

  private get knex(): Knex {
    return this.ctx.db.knex;
  }

  /** The owner's views and everyone's shared ones, by name; those whose list this caller cannot read left out. */
  async visibleTo(principal: Principal): Promise<{ mine: SavedView[]; shared: SavedView[] }> {
    if (principal.userId === null) return { mine: [], shared: [] };
    const users = this.ctx.registry.model.entityTypes.user!;
    const select = (q: Knex.QueryBuilder) =>
      q
        .join(`${users.table} as u`, 'u.id', 'v.owner_id')
        .select('v.id', 'v.owner_id', 'v.name', 'v.path', 'v.query', 'v.shared', `u.${users.labelField} as owner_name`);
    const mine = await select(this.knex(`${TABLE} as v`).where('v.owner_id', principal.userId).orderBy('v.name')).limit(
      MAX_PER_USER,
    );
    const shared = await select(
      this.knex(`${TABLE} as v`)
        .where('v.shared', true)
        .whereNot('v.owner_id', principal.userId)
        .orderBy('v.id', 'desc'),
    ).limit(SHARED_SHOWN);
    const of = (rows: Array<Record<string, unknown>>) => rows.map(toView).filter((v) => this.isList(v.path, principal));
    return { mine: of(mine), shared: of(shared).sort((a, b) => a.name.localeCompare(b.name)) };
  }

  /** Save a view of the list at `path` with `query`; a ApiError(422) says what is wrong, nothing saved. */
  async save(principal: Principal, input: { name: string; path: string; query: string }): Promise<number> {
    if (principal.userId === null) throw new ApiError(403, M.errors.forbiddenText);
    const name = input.name.trim();
    if (!name) throw new ApiError(422, M.savedViews.nameNeeded);
    if (name.length > NAME_MAX) throw new ApiError(422, M.savedViews.nameTooLong(NAME_MAX));
    if (!this.isList(input.path, principal)) throw new ApiError(422, M.savedViews.badList);
    const query = viewQuery(new URLSearchParams(input.query));
    if (query.length > QUERY_MAX) throw new ApiError(422, M.savedViews.badList);
    const userId = principal.userId;
    return write(this.knex, async (trx) => {
      // The owner's row locked (PostgreSQL; SQLite's writes take turns), so two saves at once
      // cannot both pass the count.
      await lockToChangeWhere(trx, this.ctx.registry.model.entityTypes.user!.table, 'id', userId);
      const [{ n }] = (await trx(TABLE).where('owner_id', userId).count({ n: '*' })) as Array<{ n: number | string }>;
      if (Number(n) >= MAX_PER_USER) throw new ApiError(422, M.savedViews.tooMany(MAX_PER_USER));
      if (await trx(TABLE).where({ owner_id: userId, name }).first('id'))
        throw new ApiError(422, M.savedViews.nameTaken);
      const [row] = (await trx(TABLE)
        .insert({
          owner_id: userId,
          name,
          path: input.path,
          query,
          shared: false,
          created: Math.floor(Date.now() / 1000),
        })
        .returning('id')) as Array<{ id: number } | number>;
      return typeof row === 'object' ? Number(row!.id) : Number(row);
    });
  }

  /** One of the caller's own views, or a 404 (another's view is never named). */
  private async own(principal: Principal, id: number): Promise<SavedView> {
    const row =
      principal.userId !== null && Number.isSafeInteger(id)
        ? await this.knex(TABLE).where({ id, owner_id: principal.userId }).first()
        : undefined;
    if (!row) throw new ApiError(404, M.savedViews.notFound);
    return toView({ ...row, owner_name: '' });
  }

  /** Share one's own view with everyone, or stop: managers only. */
  async setShared(principal: Principal, id: number, shared: boolean): Promise<void> {
    if (!mayShare(principal)) throw new ApiError(403, M.savedViews.mayNotShare);
    const view = await this.own(principal, id);
    await this.knex(TABLE).where('id', view.id).update({ shared });
  }

  async remove(principal: Principal, id: number): Promise<void> {
    const view = await this.own(principal, id);
    await this.knex(TABLE).where('id', view.id).delete();
  }

  /** The dashboard's block: my views (share, stop sharing, delete) and the shared ones. */
  async section(principal: Principal, csrfToken: string): Promise<Html> {
    const { mine, shared } = await this.visibleTo(principal);
    const manager = mayShare(principal);
    const token = html`<input type="hidden" name="csrf_token" value="${csrfToken}">`;
    const link = (v: SavedView) => html`<a href="${v.path}${v.query ? `?${v.query}` : ''}">${v.name}</a>`;
    const own = mine.map(
      (v) =>
        html`<li>${link(v)}${v.shared ? html` <span class="badge">${M.savedViews.shared}</span>` : ''}${
          manager
            ? html`<form method="post" action="/farm/views/${v.id}/share">${token}<input type="hidden" name="shared" value="${v.shared ? '0' : '1'}"><button class="button secondary" type="submit" aria-label="${v.shared ? M.savedViews.unshareOf(v.name) : M.savedViews.shareOf(v.name)}">${v.shared ? M.savedViews.unshare : M.savedViews.share}</button></form>`
            : ''
        }<form method="post" action="/farm/views/${v.id}/delete">${token}<button class="button secondary" type="submit" aria-label="${M.savedViews.deleteOf(v.name)}">${M.savedViews.delete}</button></form></li>`,
    );
    const others = shared.map(
      (v) => html`<li>${link(v)} <span class="muted">${M.savedViews.by(v.ownerName)}</span></li>`,
    );
    return html`<section class="card" aria-labelledby="saved-views"><h2 id="saved-views">${M.savedViews.heading}</h2>${
      own.length || others.length
        ? html`${own.length ? html`<h3>${M.savedViews.mine}</h3><ul class="plain views">${own}</ul>` : ''}${others.length ? html`<h3>${M.savedViews.everyone}</h3><ul class="plain views">${others}</ul>` : ''}`
        : html`<p class="muted">${M.savedViews.none}</p>`
    }</section>`;
  }

  /** The list page's form that saves its view (the address as shown, less the page's place in it). */
  saveForm(path: string, search: URLSearchParams, csrfToken: string): Html {
    return html`<details class="card"><summary>${M.savedViews.save}</summary><form class="save-view" method="post" action="/farm/views">
<input type="hidden" name="csrf_token" value="${csrfToken}"><input type="hidden" name="path" value="${path}"><input type="hidden" name="query" value="${viewQuery(search)}">
<div><label for="view-name">${M.savedViews.name}</label><input type="text" id="view-name" name="name" required maxlength="${NAME_MAX}"></div>
<button class="primary" type="submit">${M.savedViews.save}</button></form></details>`;
  }
}

function toView(r: Record<string, unknown>): SavedView {
  return {
    id: Number(r.id),
    ownerId: Number(r.owner_id),
    ownerName: String(r.owner_name ?? ''),
    name: String(r.name),
    path: String(r.path),
    query: String(r.query),
    shared: r.shared === true || r.shared === 1,
  };
}
