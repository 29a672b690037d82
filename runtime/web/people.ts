/**
 * People (issue 38 screen 8), for account administrators: the list of user accounts, a new
 * account, and an account's page where its roles are set, it is blocked or unblocked, and its
 * password is reset. One set of rules: every read goes through the API's parts (reads.ts: the
 * policy, field visibility) and every write is the API's own, a POST or a PATCH of `user--user`
 * made of the form and saved by the create and update commands (usecases/records.ts) with the
 * account rules of access/accounts.ts (no escalation, user 1, accounts holding rights one lacks)
 * and entities/account-saves.ts (names, passwords hashed before the transaction, every sign-in
 * and token ended by a block or a new password). The pages only decide what to offer, asking the
 * same rules (mayChangeAccount, grantableRoles).
 *
 * A new password (a new account's, or a reset) is generated here, hashed before it is saved, and
 * shown once on the answer to the POST (never cached: sendPage), never logged, never stored.
 *
 *   GET      /farm/people                       the list
 *   GET|POST /farm/people/new                   a new account; the answer shows its password once
 *   GET      /farm/people/<uuid>                an account and what may be done to it
 *   POST     /farm/people/<uuid>/roles          its roles
 *   POST     /farm/people/<uuid>/status         block (status=blocked) or unblock (status=active)
 *   POST     /farm/people/<uuid>/password       a new password, shown once
 */
import express, { type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import type { AppContext } from '../context.ts';
import type { ResourceType } from '../model/registry.ts';
import type { Principal } from '../access/principal.ts';
import { isAccountAdmin } from '../access/policy.ts';
import { grantableRoles, mayChangeAccount } from '../access/accounts.ts';
import { isRole, ROLES, type Role } from '../access/roles.ts';
import { clientAddress } from '../access/client-address.ts';
import { generatePassword } from '../accounts/passwords.ts';
import { configIdentifier } from '../model/config-entities.ts';
import { ApiError, badRequest, forbidden } from '../errors.ts';
import { errorObjects } from '../jsonapi/errors.ts';
import { readSecrets, UUID } from '../jsonapi/input.ts';
import type { JsonApiServices } from '../jsonapi/handlers/services.ts';
import { html, type Html } from './html.ts';
import { M } from './messages.ts';
import { page, sendPage } from './layout.ts';
import type { Formats, Resource } from './format.ts';
import type { WebReads } from './reads.ts';
import { formValue, webState, type Form, type WebSessions } from './session.ts';
import type { ListPages } from './lists.ts';

export const PEOPLE_PATH = '/farm/people';
/** The user accounts' resource type, and the fields these pages read and write. */
const USER = {
  type: 'user--user',
  name: 'name',
  mail: 'mail',
  status: 'status',
  roles: 'roles',
  access: 'access',
  login: 'login',
  created: 'created',
} as const;
/** Accounts per page of the list. */
const PAGE_SIZE = 50;

/** What the new-account form holds when it is shown again: what was typed, and the messages by field. */
interface NewForm {
  name: string;
  mail: string;
  roles: string[];
  errors: Map<string, string[]>;
  general: string[];
}

/** An account as these pages use it: its resource object, its id and its roles. */
interface Account {
  resource: Resource;
  id: number;
  name: string;
  roles: Role[];
  active: boolean;
}

export class PeoplePages {
  constructor(
    private readonly ctx: AppContext,
    private readonly services: JsonApiServices,
    private readonly reads: WebReads,
    private readonly sessions: WebSessions,
    private readonly lists: ListPages,
    private readonly formats: Formats,
  ) {}

  /**
   * The routes, each for account administrators only (others: the 403 page, nothing done).
   * `write` is what every POST that changes a record goes through first (index.ts: signed in,
   * not refused while the database is ahead, the form read, its CSRF token checked).
   */
  routes(signedIn: RequestHandler, write: readonly RequestHandler[]): express.Router {
    const router = express.Router();
    const admins: RequestHandler = (_req, res, next) => {
      if (!isAccountAdmin(webState(res).principal))
        return next(forbidden('Only account administrators may see and change people’s accounts.'));
      next();
    };
    const run =
      (handler: (req: Request, res: Response) => Promise<unknown> | void) =>
      (req: Request, res: Response, next: NextFunction) =>
        Promise.resolve()
          .then(() => handler(req, res))
          .catch(next);
    const uuidOf = (req: Request) => String(req.params.uuid);
    router.get(
      PEOPLE_PATH,
      signedIn,
      admins,
      run((req, res) => this.list(req, res)),
    );
    router.get(
      `${PEOPLE_PATH}/new`,
      signedIn,
      admins,
      run((_req, res) => this.newForm(res, 200, emptyForm())),
    );
    router.post(
      `${PEOPLE_PATH}/new`,
      ...write,
      admins,
      run((req, res) => this.create(req, res)),
    );
    router.get(
      `${PEOPLE_PATH}/:uuid`,
      signedIn,
      admins,
      run((req, res) => this.show(req, res, uuidOf(req))),
    );
    router.post(
      `${PEOPLE_PATH}/:uuid/roles`,
      ...write,
      admins,
      run((req, res) => this.setRoles(req, res, uuidOf(req))),
    );
    router.post(
      `${PEOPLE_PATH}/:uuid/status`,
      ...write,
      admins,
      run((req, res) => this.setStatus(req, res, uuidOf(req))),
    );
    router.post(
      `${PEOPLE_PATH}/:uuid/password`,
      ...write,
      admins,
      run((req, res) => this.resetPassword(req, res, uuidOf(req))),
    );
    return router;
  }

  private get rt(): ResourceType {
    const rt = this.ctx.registry.get(USER.type);
    if (!rt) throw new Error(`The model has no ${USER.type}.`);
    return rt;
  }

  private send(res: Response, status: number, title: string, body: Html): void {
    const state = webState(res);
    sendPage(res, status, page(title, this.sessions.chrome(state, this.lists.nav(state.principal)), body));
  }

  /** GET /farm/people: every account, by name, a page at a time, read as GET /api/user/user reads them. */
  async list(req: Request, res: Response): Promise<void> {
    const { principal } = webState(res);
    const view = new URL(req.originalUrl, 'http://x').searchParams;
    const q = new URLSearchParams({ sort: USER.name, 'page[limit]': String(PAGE_SIZE) });
    const offset = Number(view.get('offset') ?? '0');
    if (Number.isSafeInteger(offset) && offset > 0) q.set('page[offset]', String(offset));
    const cursor = view.get('cursor');
    if (cursor) q.set('page[cursor]', cursor);
    const rt = this.rt;
    const result = await this.reads.list(rt, this.reads.query(rt, q.toString()), principal);
    const rows = result.resources.map((r) => {
      const a = r.attributes ?? {};
      return html`<tr><td><a href="${PEOPLE_PATH}/${r.id}">${String(a[USER.name] ?? '')}</a></td><td>${text(a[USER.mail])}</td><td>${this.roleNames(rolesOf(r))}</td><td>${a[USER.status] === false ? html`<span class="badge">${M.people.blocked}</span>` : M.people.active}</td><td>${this.when(a[USER.access])}</td></tr>`;
    });
    const pager = html`<nav class="pager" aria-label="pages">${offset > 0 || cursor ? html`<a class="button secondary" href="${PEOPLE_PATH}">${M.people.first}</a>` : ''}${
      result.next
        ? html`<a class="button secondary" rel="next" href="${PEOPLE_PATH}?${new URLSearchParams({ offset: String(result.next.offset), ...(result.next.cursor ? { cursor: result.next.cursor } : {}) }).toString()}">${M.people.next}</a>`
        : ''
    }</nav>`;
    const body = html`<div class="actions"><a class="button" href="${PEOPLE_PATH}/new">${M.people.add}</a></div>
${
  rows.length
    ? html`<p class="muted">${M.people.about(rows.length)}</p><div class="table-wrap"><table><thead><tr><th scope="col">${M.people.name}</th><th scope="col">${M.people.mail}</th><th scope="col">${M.people.roles}</th><th scope="col">${M.people.status}</th><th scope="col">${M.people.lastAccess}</th></tr></thead><tbody>${rows}</tbody></table></div>`
    : html`<p>${M.people.none}</p>`
}
${pager}`;
    this.send(res, 200, M.people.title, body);
  }

  /** GET /farm/people/new, and the form again with its messages. */
  newForm(res: Response, status: number, form: NewForm): void {
    const { principal, csrfToken } = webState(res);
    const field = (name: string) => {
      const errors = form.errors.get(name) ?? [];
      return {
        aria: errors.length ? html` aria-invalid="true" aria-describedby="${name}-error"` : '',
        error: errors.length ? html`<p class="field-error" id="${name}-error">${errors.join(' ')}</p>` : '',
      };
    };
    const name = field(USER.name);
    const mail = field(USER.mail);
    const problems =
      form.errors.size || form.general.length
        ? html`<div class="error" role="alert"><p>${M.form.problems}</p>${form.general.map((g) => html`<p>${g}</p>`)}</div>`
        : '';
    const body = html`${problems}<form class="record card" method="post" action="${PEOPLE_PATH}/new" novalidate>
<input type="hidden" name="csrf_token" value="${csrfToken}">
<div class="control"><label for="name">${M.people.name} <span class="required">(${M.form.required})</span></label><input type="text" id="name" name="name" value="${form.name}" autocomplete="off" autocapitalize="none" required aria-required="true"${name.aria}><p class="help">${M.people.nameHelp}</p>${name.error}</div>
<div class="control"><label for="mail">${M.people.mail}</label><input type="email" id="mail" name="mail" value="${form.mail}" autocomplete="off"${mail.aria}>${mail.error}</div>
${this.roleChoices(grantableRoles(principal), form.roles)}
<p class="help">${M.people.createHelp}</p>
<div class="actions"><button class="primary" type="submit">${M.people.create}</button><a class="button secondary" href="${PEOPLE_PATH}">${M.form.cancel}</a></div>
</form>`;
    this.send(res, status, M.people.newTitle, body);
  }

  /**
   * POST /farm/people/new: the account made as POST /api/user/user makes it, with a generated
   * password, hashed before the transaction; the answer shows the password, once.
   */
  async create(req: Request, res: Response): Promise<void> {
    const { principal } = webState(res);
    const form = req.body as Form;
    const typed: NewForm = {
      name: formValue(form, 'name') ?? '',
      mail: (formValue(form, 'mail') ?? '').trim(),
      roles: form.get('role') ?? [],
      errors: new Map(),
      general: [],
    };
    const rt = this.rt;
    const password = generatePassword();
    const body = {
      data: {
        type: rt.type,
        attributes: {
          [USER.name]: typed.name,
          ...(typed.mail ? { [USER.mail]: typed.mail } : {}),
          pass: { value: password },
        },
        relationships: { [USER.roles]: { data: rolesSent(typed.roles).map((r) => configIdentifier('user_role', r)) } },
      },
    };
    let created: { uuid: string; name: string };
    try {
      this.services.commands.assertMayCreate(principal, rt);
      const hashed = await this.services.entities.hashSecrets(
        this.services.knex,
        rt,
        readSecrets(rt, body),
        principal,
        null,
      );
      const saved = await this.services.commands.create(principal, rt, {
        hashed,
        read: (trx) => this.services.input.read(trx, rt, body),
        present: async (_trx, record) => ({ uuid: record.uuid, name: String(record.values.get(USER.name) ?? '') }),
      });
      created = saved.shown;
    } catch (error) {
      // A name or an e-mail address the account cannot have (taken, or not one): beside its field.
      if (error instanceof ApiError && (error.status === 422 || error.status === 409)) {
        for (const object of errorObjects(error)) {
          const field = /^\/data\/attributes\/([^/]+)/.exec(object.source?.pointer ?? '')?.[1];
          if (field === USER.name || field === USER.mail)
            typed.errors.set(field, [...(typed.errors.get(field) ?? []), object.detail]);
          else typed.general.push(object.detail);
        }
        if (!typed.errors.size && !typed.general.length) typed.general.push(error.message);
        return this.newForm(res, 422, typed);
      }
      throw error;
    }
    this.passwordPage(res, 201, M.people.createdTitle(created.name), created, password, false);
  }

  /** The answer holding a new password, shown this once (the page is never cached: sendPage). */
  private passwordPage(
    res: Response,
    status: number,
    title: string,
    account: { uuid: string; name: string },
    password: string,
    reset: boolean,
  ): void {
    const body = html`<section class="card" aria-labelledby="new-password">
<h2 id="new-password">${M.people.password}</h2>
<p><code class="secret" id="password">${password}</code></p>
<p>${M.people.shownOnce}</p>
${reset ? html`<p>${M.people.sessionsEnded}</p>` : ''}
<div class="actions"><a class="button" href="${PEOPLE_PATH}/${account.uuid}">${M.people.backToPerson(account.name)}</a><a class="button secondary" href="${PEOPLE_PATH}">${M.people.backToPeople}</a></div>
</section>`;
    this.send(res, status, title, body);
  }

  /** The account a path names, as GET /api/user/user/<uuid> shows it to this person (404 when it may not). */
  private async account(principal: Principal, uuid: string): Promise<Account> {
    const { resource } = await this.reads.record(this.rt, uuid, principal, []);
    const id = Number(resource.attributes?.[this.rt.entityType.internalId] ?? NaN);
    if (!Number.isSafeInteger(id)) throw new Error(`The ${USER.type} document has no internal id.`);
    return {
      resource,
      id,
      name: String(resource.attributes?.[USER.name] ?? ''),
      roles: rolesOf(resource),
      active: resource.attributes?.[USER.status] !== false,
    };
  }

  /** GET /farm/people/<uuid>: the account, and the actions this person may take on it. */
  async show(req: Request, res: Response, uuid: string): Promise<void> {
    const { principal, csrfToken } = webState(res);
    const account = await this.account(principal, uuid);
    const a = account.resource.attributes ?? {};
    const self = principal.userId === account.id;
    const may = mayChangeAccount(principal, account);
    const action = `${PEOPLE_PATH}/${uuid}`;
    const csrf = html`<input type="hidden" name="csrf_token" value="${csrfToken}">`;
    const done = new URL(req.originalUrl, 'http://x').searchParams.get('done');
    const details = html`<section class="card"><dl class="fields">
<dt>${M.people.name}</dt><dd>${account.name}</dd>
<dt>${M.people.mail}</dt><dd>${text(a[USER.mail]) || M.record.empty}</dd>
<dt>${M.people.roles}</dt><dd>${this.roleNames(account.roles)}</dd>
<dt>${M.people.status}</dt><dd>${account.active ? M.people.active : M.people.blocked}</dd>
<dt>${M.people.created}</dt><dd>${this.when(a[USER.created])}</dd>
<dt>${M.people.lastAccess}</dt><dd>${this.when(a[USER.access])}</dd>
<dt>${M.people.lastLogin}</dt><dd>${this.when(a[USER.login])}</dd>
</dl></section>`;
    // What is offered is what the account rules allow (access/accounts.ts). Blocking one's own
    // account, which they allow an account administrator, is not offered: it would lock the
    // person out at once; and one's own password is changed with the current one (account.ts).
    const offered = [
      may
        ? html`<section class="card"><form method="post" action="${action}/roles">${csrf}${this.roleChoices(
            ROLES.filter((r) => account.roles.includes(r) || grantableRoles(principal).includes(r)),
            account.roles,
          )}<div class="actions"><button class="primary" type="submit">${M.people.saveRoles}</button></div></form></section>`
        : '',
      may && !self
        ? html`<section class="card" aria-labelledby="access"><h2 id="access">${M.people.access}</h2>
<form method="post" action="${action}/status">${csrf}<input type="hidden" name="status" value="${account.active ? 'blocked' : 'active'}"><p class="help">${M.people.blockHelp}</p><div class="actions"><button class="button secondary" type="submit" aria-label="${account.active ? M.people.blockOf(account.name) : M.people.unblockOf(account.name)}">${account.active ? M.people.block : M.people.unblock}</button></div></form>
<form method="post" action="${action}/password">${csrf}<p class="help">${M.people.resetHelp}</p><div class="actions"><button class="button secondary" type="submit">${M.people.reset}</button></div></form></section>`
        : '',
    ];
    const note = self
      ? html`<p>${M.people.you} <a href="/farm/account/password">${M.people.changeMine}</a></p>`
      : may
        ? ''
        : html`<p class="muted">${M.people.notYours(account.name)}</p>`;
    const notice = done && M.people.done[done] ? html`<p class="notice" role="status">${M.people.done[done]}</p>` : '';
    this.send(res, 200, account.name, html`${notice}${note}${details}${offered}`);
  }

  /** POST /farm/people/<uuid>/roles: the roles ticked, saved as a PATCH of the roles relationship. */
  async setRoles(req: Request, res: Response, uuid: string): Promise<void> {
    const roles = rolesSent((req.body as Form).get('role') ?? []);
    await this.patch(res, uuid, {
      relationships: { [USER.roles]: { data: roles.map((r) => configIdentifier('user_role', r)) } },
    });
    res.redirect(303, `${PEOPLE_PATH}/${uuid}?done=roles`);
  }

  /** POST /farm/people/<uuid>/status: block or unblock, as a PATCH of `status` (which ends a blocked account's sign-ins). */
  async setStatus(req: Request, res: Response, uuid: string): Promise<void> {
    const to = formValue(req.body as Form, 'status');
    if (to !== 'blocked' && to !== 'active') throw badRequest('The status is blocked or active.');
    await this.patch(res, uuid, { attributes: { [USER.status]: to === 'active' } });
    res.redirect(303, `${PEOPLE_PATH}/${uuid}?done=${to === 'active' ? 'unblocked' : 'blocked'}`);
  }

  /**
   * POST /farm/people/<uuid>/password: a generated password, set as a PATCH of `pass` (hashed
   * before the transaction; every sign-in and token of the account ended), shown once.
   */
  async resetPassword(req: Request, res: Response, uuid: string): Promise<void> {
    const { principal } = webState(res);
    if (!UUID.test(uuid)) throw badRequest('The address names no account.');
    const rt = this.rt;
    const target = await this.services.loader.store.findByUuid(
      this.services.knex,
      rt.entityType.entityType,
      uuid.toLowerCase(),
    );
    const password = generatePassword();
    const attributes = { pass: { value: password } };
    const hashed = await this.services.entities.hashSecrets(
      this.services.knex,
      rt,
      readSecrets(rt, { data: { type: rt.type, attributes } }),
      principal,
      target?.id ?? null,
      clientAddress(req, this.ctx.config.trustProxy),
    );
    const name = await this.patch(res, uuid, { attributes }, hashed);
    this.passwordPage(res, 200, M.people.passwordTitle(name), { uuid, name }, password, true);
  }

  /** A PATCH of the account through the update command, as PATCH /api/user/user/<uuid>; its name. */
  private async patch(
    res: Response,
    uuid: string,
    member: { attributes?: Record<string, unknown>; relationships?: Record<string, unknown> },
    hashed?: ReadonlyMap<string, string>,
  ): Promise<string> {
    const { principal } = webState(res);
    const rt = this.rt;
    const saved = await this.services.commands.update(principal, rt, uuid, {
      hashed,
      read: (trx, record) =>
        this.services.input.read(trx, rt, { data: { type: rt.type, id: record.uuid, ...member } }, record),
      present: async (_trx, record) => String(record.values.get(USER.name) ?? ''),
    });
    return saved.shown;
  }

  /** Checkboxes for `offered` roles, `checked` ticked. */
  private roleChoices(offered: readonly Role[], checked: readonly string[]): Html {
    return html`<fieldset><legend>${M.people.roles}</legend>${offered.map(
      (role) =>
        html`<label class="choice" for="role-${role}"><input type="checkbox" id="role-${role}" name="role" value="${role}" ${checked.includes(role) ? 'checked' : ''}> ${M.people.roleLabels[role] ?? role}</label>`,
    )}<p class="help">${M.people.grantHelp}</p></fieldset>`;
  }

  private roleNames(roles: readonly string[]): string {
    return roles.length ? roles.map((r) => M.people.roleNames[r] ?? r).join(', ') : M.people.noRoles;
  }

  /** A timestamp attribute as the farm reads it, or "never". */
  private when(value: unknown): string {
    const at = typeof value === 'string' ? new Date(value) : null;
    return at && Number.isFinite(at.getTime()) && at.getTime() > 0 ? this.formats.dateTime.format(at) : M.people.never;
  }
}

/** An attribute that holds text, or ''. */
function text(value: unknown): string {
  return typeof value === 'string' ? value : '';
}

function emptyForm(): NewForm {
  return { name: '', mail: '', roles: [], errors: new Map(), general: [] };
}

/** The roles of an account's resource object (its roles relationship, by machine name). */
function rolesOf(resource: Resource): Role[] {
  const data = resource.relationships?.[USER.roles]?.data;
  const refs = (Array.isArray(data) ? data : data ? [data] : []) as unknown as Array<{
    meta?: { drupal_internal__target_id?: unknown };
  }>;
  return refs.map((r) => String(r.meta?.drupal_internal__target_id ?? '')).filter(isRole);
}

/** The roles a form sent: each a role's machine name (else 400: the form offers no other). */
function rolesSent(values: readonly string[]): Role[] {
  for (const v of values) if (!isRole(v)) throw badRequest(`"${v}" is not a role.`);
  return [...new Set(values)] as Role[];
}
