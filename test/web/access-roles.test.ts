// Access per role (issue 38: "A viewer, a worker and a manager each see and can do exactly what
// the API allows them. Each forbidden action is tried by a direct POST too."), in Debian's
// Chromium against a real server. For each role and each action (create, edit, delete, archive,
// mark done, on logs, assets and taxonomy terms, and every People action), the same person
// tries it through the API with a token of their own and through the pages: the pages offer the
// button (on a list, a record's page, the dashboard, a form, People) exactly when the API lets the
// action through, and a POST of the form, sent directly with a valid CSRF token, does what the
// API does: done (and seen through the API) when the API allows it, refused with 403 and nothing
// changed when it does not. A fixed table of what each role may do guards against both faces
// going wrong together.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { type Browser, type Page } from 'playwright-core';
import { launchChromium } from '../support/browser.ts';
import { startTestServer, ADMIN, type TestServer } from '../support/server.ts';
import { passwordToken, request } from '../support/http.ts';
import { createUser } from '../../runtime/accounts/users.ts';
import { configIdentifier } from '../../runtime/model/config-entities.ts';

let server: TestServer;
let browser: Browser;
let adminToken: string;

before(async () => {
  server = await startTestServer({ env: { TILTH_FARM_NAME: 'Willow Creek' } });
  adminToken = await passwordToken(server.url, ADMIN.name, ADMIN.password);
  browser = await launchChromium();
});
after(async () => {
  await browser?.close();
  await server?.close();
});

let made = 0;
const unique = (prefix: string) => `${prefix} ${++made} ${Date.now().toString(36)}`;

async function api(method: string, path: string, token: string, data?: unknown) {
  return request(`${server.url}/api/${path}`, { method, token, ...(data ? { json: { data } } : {}) });
}

/** Made by the administrator through the API: one record an action is tried on. */
async function made201(path: string, data: unknown): Promise<string> {
  const res = await api('POST', path, adminToken, data);
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body.data.id as string;
}

/** As the administrator reads it through the API. */
async function read(path: string) {
  return api('GET', path, adminToken);
}

/** One thing a person may or may not do, tried on a fresh record through either face. */
interface Action {
  name: string;
  /** Makes what the action is tried on; returns what the other steps need. */
  setup(): Promise<Record<string, string>>;
  /** The API request, with the person's token: its status. */
  api(token: string, s: Record<string, string>): Promise<number>;
  /** The page's form POST, sent directly: its path and fields (the CSRF token is added). */
  post(s: Record<string, string>): { path: string; form: Record<string, string> };
  /** Whether the action took effect (read through the API as the administrator). */
  done(s: Record<string, string>): Promise<boolean>;
}

const pendingLog = (name: string, at = '2024-03-01T10:00:00+00:00') =>
  made201('log/activity', { type: 'log--activity', attributes: { name, status: 'pending', timestamp: at } });

const ACTIONS: Action[] = [
  {
    name: 'create a log',
    setup: async () => ({ name: unique('Log') }),
    api: async (token, s) =>
      (await api('POST', 'log/activity', token, { type: 'log--activity', attributes: { name: s.name } })).status,
    post: (s) => ({ path: '/farm/log/activity/new', form: { name: s.name!, status: 'pending' } }),
    done: async (s) => (await read(`log/activity?filter[name]=${encodeURIComponent(s.name!)}`)).body.data.length === 1,
  },
  {
    name: 'edit a log',
    setup: async () => ({ id: await pendingLog(unique('Log')), to: unique('Edited') }),
    api: async (token, s) =>
      (
        await api('PATCH', `log/activity/${s.id}`, token, {
          type: 'log--activity',
          id: s.id,
          attributes: { name: s.to },
        })
      ).status,
    post: (s) => ({
      path: `/farm/log/activity/${s.id}/edit`,
      form: { name: s.to!, status: 'pending', timestamp: '2024-03-01T10:00' },
    }),
    done: async (s) => (await read(`log/activity/${s.id}`)).body.data.attributes.name === s.to,
  },
  {
    name: 'delete a log',
    setup: async () => ({ id: await pendingLog(unique('Log')) }),
    api: async (token, s) => (await api('DELETE', `log/activity/${s.id}`, token)).status,
    post: (s) => ({ path: `/farm/log/activity/${s.id}/delete`, form: {} }),
    done: async (s) => (await read(`log/activity/${s.id}`)).status === 404,
  },
  {
    name: 'mark a task done',
    setup: async () => ({ id: await pendingLog(unique('Task'), '2001-01-01T10:00:00+00:00') }),
    api: async (token, s) =>
      (
        await api('PATCH', `log/activity/${s.id}`, token, {
          type: 'log--activity',
          id: s.id,
          attributes: { status: 'done' },
        })
      ).status,
    post: (s) => ({ path: `/farm/log/activity/${s.id}/done`, form: { return_to: '/farm' } }),
    done: async (s) => (await read(`log/activity/${s.id}`)).body.data.attributes.status === 'done',
  },
  {
    name: 'archive an asset',
    setup: async () => ({
      id: await made201('asset/equipment', { type: 'asset--equipment', attributes: { name: unique('Plough') } }),
    }),
    api: async (token, s) =>
      (
        await api('PATCH', `asset/equipment/${s.id}`, token, {
          type: 'asset--equipment',
          id: s.id,
          attributes: { status: 'archived' },
        })
      ).status,
    post: (s) => ({ path: `/farm/asset/equipment/${s.id}/status`, form: { status: 'archived' } }),
    done: async (s) => (await read(`asset/equipment/${s.id}`)).body.data.attributes.status === 'archived',
  },
  {
    name: 'create a term',
    setup: async () => ({ name: unique('Unit') }),
    api: async (token, s) =>
      (await api('POST', 'taxonomy_term/unit', token, { type: 'taxonomy_term--unit', attributes: { name: s.name } }))
        .status,
    post: (s) => ({ path: '/farm/taxonomy_term/unit/new', form: { name: s.name!, status: '1' } }),
    done: async (s) =>
      (await read(`taxonomy_term/unit?filter[name]=${encodeURIComponent(s.name!)}`)).body.data.length === 1,
  },
  {
    name: 'edit a term',
    setup: async () => ({
      id: await made201('taxonomy_term/unit', { type: 'taxonomy_term--unit', attributes: { name: unique('Unit') } }),
      to: unique('Edited unit'),
    }),
    api: async (token, s) =>
      (
        await api('PATCH', `taxonomy_term/unit/${s.id}`, token, {
          type: 'taxonomy_term--unit',
          id: s.id,
          attributes: { name: s.to },
        })
      ).status,
    post: (s) => ({ path: `/farm/taxonomy_term/unit/${s.id}/edit`, form: { name: s.to!, status: '1' } }),
    done: async (s) => (await read(`taxonomy_term/unit/${s.id}`)).body.data.attributes.name === s.to,
  },
  {
    name: 'delete a term',
    setup: async () => ({
      id: await made201('taxonomy_term/unit', { type: 'taxonomy_term--unit', attributes: { name: unique('Unit') } }),
    }),
    api: async (token, s) => (await api('DELETE', `taxonomy_term/unit/${s.id}`, token)).status,
    post: (s) => ({ path: `/farm/taxonomy_term/unit/${s.id}/delete`, form: {} }),
    done: async (s) => (await read(`taxonomy_term/unit/${s.id}`)).status === 404,
  },
  {
    name: 'add a person',
    setup: async () => ({ name: unique('person').replace(/ /g, '-') }),
    api: async (token, s) =>
      (
        await api('POST', 'user/user', token, {
          type: 'user--user',
          attributes: { name: s.name, pass: { value: 'a-password-123' } },
        })
      ).status,
    post: (s) => ({ path: '/farm/people/new', form: { name: s.name! } }),
    done: async (s) => (await read(`user/user?filter[name]=${encodeURIComponent(s.name!)}`)).body.data.length === 1,
  },
  ...(['roles', 'block', 'reset'] as const).map((kind): Action => ({
    name: { roles: 'set a person’s roles', block: 'block a person', reset: 'reset a person’s password' }[kind],
    setup: async () => {
      const name = unique('other').replace(/ /g, '-');
      const account = await createUser(server.ctx.db.knex, { name, password: 'other-password-1' });
      return { id: account.uuid, name };
    },
    api: async (token, s) =>
      (
        await api('PATCH', `user/user/${s.id}`, token, {
          type: 'user--user',
          id: s.id,
          ...(kind === 'roles'
            ? { relationships: { roles: { data: [configIdentifier('user_role', 'farm_viewer')] } } }
            : { attributes: kind === 'block' ? { status: false } : { pass: { value: 'taken-over-123' } } }),
        })
      ).status,
    post: (s): { path: string; form: Record<string, string> } =>
      kind === 'roles'
        ? { path: `/farm/people/${s.id}/roles`, form: { role: 'farm_viewer' } }
        : kind === 'block'
          ? { path: `/farm/people/${s.id}/status`, form: { status: 'blocked' } }
          : { path: `/farm/people/${s.id}/password`, form: {} },
    done: async (s) => {
      const user = (await read(`user/user/${s.id}`)).body.data;
      if (kind === 'roles') return user.relationships.roles.data.length > 0;
      if (kind === 'block') return user.attributes.status === false;
      return passwordToken(server.url, s.name!, 'other-password-1').then(
        () => false,
        () => true,
      );
    },
  })),
];

/** What each role may do: the policy's table (farmos-behaviour.md §6.5), written out. */
const CONTENT = ['create a log', 'edit a log', 'delete a log', 'mark a task done', 'archive an asset'];
const TERMS = ['create a term', 'edit a term', 'delete a term'];
const EXPECTED: Record<string, string[]> = {
  farm_viewer: [],
  // farmOS's managed roles: "create/update/delete all" covers every vocabulary's terms too.
  farm_worker: [...CONTENT, ...TERMS],
  farm_manager: [...CONTENT, ...TERMS],
};

/** What the pages offer this person, where the action's button would be. */
async function offered(page: Page): Promise<Map<string, boolean>> {
  const found = new Map<string, boolean>();
  const has = async (selector: string) => (await page.$(selector)) !== null;
  const status = async (path: string) => (await page.request.get(`${server.url}${path}`, { maxRedirects: 0 })).status();

  const log = await pendingLog(unique('Look'), '2001-01-02T10:00:00+00:00');
  await page.goto(`${server.url}/farm/log/activity`);
  const listAdd = await has('a[href="/farm/log/activity/new"]');
  const newForm = await status('/farm/log/activity/new');
  assert.equal(newForm, listAdd ? 200 : 403, 'the create form is there exactly when its button is');
  found.set('create a log', listAdd);
  await page.goto(`${server.url}/farm/log/activity/${log}`);
  const edit = await has(`a[href="/farm/log/activity/${log}/edit"]`);
  assert.equal(await status(`/farm/log/activity/${log}/edit`), edit ? 200 : 403, 'the edit form likewise');
  found.set('edit a log', edit);
  const del = await has(`a[href="/farm/log/activity/${log}/delete"]`);
  assert.equal(await status(`/farm/log/activity/${log}/delete`), del ? 200 : 403, 'the delete confirmation likewise');
  found.set('delete a log', del);
  await page.goto(`${server.url}/farm`);
  found.set('mark a task done', await has('form[action$="/done"] button'));

  const asset = await made201('asset/equipment', { type: 'asset--equipment', attributes: { name: unique('Harrow') } });
  await page.goto(`${server.url}/farm/asset/equipment/${asset}`);
  found.set('archive an asset', await has(`form[action="/farm/asset/equipment/${asset}/status"] button`));

  const term = await made201('taxonomy_term/unit', {
    type: 'taxonomy_term--unit',
    attributes: { name: unique('Bale') },
  });
  await page.goto(`${server.url}/farm/taxonomy_term/unit`);
  const termAdd = await has('a[href="/farm/taxonomy_term/unit/new"]');
  assert.equal(await status('/farm/taxonomy_term/unit/new'), termAdd ? 200 : 403);
  found.set('create a term', termAdd);
  await page.goto(`${server.url}/farm/taxonomy_term/unit/${term}`);
  found.set('edit a term', await has(`a[href="/farm/taxonomy_term/unit/${term}/edit"]`));
  found.set('delete a term', await has(`a[href="/farm/taxonomy_term/unit/${term}/delete"]`));

  // People: the link, and the pages behind it (a 403 page for whoever may not administer accounts).
  const people = await has('nav.main a[href="/farm/people"]');
  const other = await createUser(server.ctx.db.knex, {
    name: unique('shown').replace(/ /g, '-'),
    password: 'shown-password-1',
  });
  for (const path of ['/farm/people', '/farm/people/new', `/farm/people/${other.uuid}`])
    assert.equal(await status(path), people ? 200 : 403, `${path}: there exactly when People is offered`);
  if (people) await page.goto(`${server.url}/farm/people/${other.uuid}`);
  found.set('add a person', people);
  found.set('set a person’s roles', people && (await has('input[name=role]')));
  found.set('block a person', people && (await has('form[action$="/status"] button')));
  found.set('reset a person’s password', people && (await has('form[action$="/password"] button')));
  return found;
}

for (const role of Object.keys(EXPECTED)) {
  test(`a ${role.replace('farm_', '')} sees and can do exactly what the API allows them`, async () => {
    const who = { name: unique(role).replace(/ /g, '-'), password: `${role}-password-1` };
    await createUser(server.ctx.db.knex, { ...who, roles: [role] });
    const token = await passwordToken(server.url, who.name, who.password);
    const context = await browser.newContext();
    const page = await context.newPage();
    try {
      await page.goto(`${server.url}/farm/sign-in`);
      await page.fill('#username', who.name);
      await page.fill('#password', who.password);
      await page.click('button[type=submit]');
      await page.waitForURL(`${server.url}/farm`);
      const buttons = await offered(page);

      const allowedByApi: string[] = [];
      for (const action of ACTIONS) {
        // Through the API, with the person's own token.
        const viaApi = await action.api(token, await action.setup());
        assert.ok([200, 201, 204, 403].includes(viaApi), `${role}, ${action.name}: the API answered ${viaApi}`);
        const apiAllows = viaApi !== 403;
        if (apiAllows) allowedByApi.push(action.name);
        assert.equal(
          buttons.get(action.name),
          apiAllows,
          `${role}, ${action.name}: offered exactly when the API allows it`,
        );

        // Through the pages: the form POSTed directly, with a valid CSRF token.
        const s = await action.setup();
        const { path, form } = action.post(s);
        await page.goto(`${server.url}/farm`);
        const csrf = await page.inputValue('header input[name=csrf_token]');
        const res = await page.request.post(`${server.url}${path}`, {
          form: { csrf_token: csrf, ...form },
          maxRedirects: 0,
        });
        if (apiAllows) {
          assert.ok([200, 201, 303].includes(res.status()), `${role}, ${action.name}: done (${res.status()})`);
          assert.equal(await action.done(s), true, `${role}, ${action.name}: the API sees it done`);
        } else {
          assert.equal(res.status(), 403, `${role}, ${action.name}: refused`);
          const text = await res.text();
          assert.match(text, /You may not do this/);
          assert.doesNotMatch(text, /security token/, 'refused by the policy, not for want of the CSRF token');
          assert.equal(await action.done(s), false, `${role}, ${action.name}: nothing changed`);
        }
      }
      assert.deepEqual(allowedByApi, EXPECTED[role], `${role}: the policy's table`);
    } finally {
      await context.close();
    }
  });
}
