/**
 * "Change my password" (issue 38, Screens 1): the current password and the new one twice, saved
 * as the API saves `pass: {value, existing}` on the person's own account (jsonapi/input.ts
 * readSecrets, EntityService.hashSecrets and update): the same password rules, the same check of
 * the current password against the account's allowance, and every sign-in of the account ended,
 * this one included, so the person signs in again with the new password.
 */
import type { Request, Response } from 'express';
import type { AppContext } from '../context.ts';
import { ApiError } from '../errors.ts';
import { clientAddress } from '../access/client-address.ts';
import { readSecrets } from '../jsonapi/input.ts';
import type { JsonApiServices } from '../jsonapi/handlers/services.ts';
import { html } from './html.ts';
import { M } from './messages.ts';
import { page, sendPage } from './layout.ts';
import { formValue, webState, type Form, type WebSessions } from './session.ts';
import type { ListPages } from './lists.ts';

/** The account's password field (a `password` base field of the user entity type). */
const USER_TYPE = 'user--user';

export class AccountPages {
  constructor(
    private readonly ctx: AppContext,
    private readonly services: JsonApiServices,
    private readonly sessions: WebSessions,
    private readonly lists: ListPages,
  ) {}

  private passwordField(): string | null {
    return this.ctx.registry.get(USER_TYPE)?.bundle.fields.find((f) => f.type === 'password')?.name ?? null;
  }

  form(res: Response, status = 200, error?: string): void {
    const state = webState(res);
    const body = html`${error ? html`<p class="error" role="alert">${error}</p>` : ''}<form class="record card" method="post" action="/farm/account/password">
<input type="hidden" name="csrf_token" value="${state.csrfToken}">
<label for="current">${M.account.current}</label><input type="password" id="current" name="current" autocomplete="current-password" required>
<label for="new">${M.account.new}</label><input type="password" id="new" name="new" autocomplete="new-password" required>
<label for="again">${M.account.again}</label><input type="password" id="again" name="again" autocomplete="new-password" required>
<p class="help">${M.account.after}</p>
<div class="actions"><button class="primary" type="submit">${M.account.submit}</button><a class="button secondary" href="/farm">${M.form.cancel}</a></div>
</form>`;
    sendPage(res, status, page(M.account.title, this.sessions.chrome(state, this.lists.nav(state.principal)), body));
  }

  async save(req: Request, res: Response): Promise<void> {
    const { principal, session } = webState(res);
    const form = req.body as Form;
    const field = this.passwordField();
    const rt = this.ctx.registry.get(USER_TYPE);
    if (!field || !rt) return this.form(res, 404);
    const next = formValue(form, 'new') ?? '';
    if (next !== (formValue(form, 'again') ?? '')) return this.form(res, 422, M.account.mismatch);
    const body = {
      data: {
        type: USER_TYPE,
        id: session.user.uuid,
        attributes: { [field]: { value: next, existing: formValue(form, 'current') ?? '' } },
      },
    };
    const knex = this.services.knex;
    try {
      const hashed = await this.services.entities.hashSecrets(
        knex,
        rt,
        readSecrets(rt, body),
        principal,
        session.user.id,
        clientAddress(req, this.ctx.config.trustProxy),
      );
      // The update command: the account's row locked, access to it checked, saved with its revision
      // and feed row, as PATCH /api/user/user/<uuid> saves it (usecases/records.ts).
      await this.services.commands.update(principal, rt, session.user.uuid, {
        read: (trx, record) => this.services.input.read(trx, rt, body, record),
        hashed,
        present: async () => null,
      });
    } catch (error) {
      if (error instanceof ApiError && error.status < 500)
        return this.form(res, error.status === 429 ? 429 : 422, error.message);
      throw error;
    }
    res.redirect(303, '/farm/sign-in?password_changed=1');
  }
}
