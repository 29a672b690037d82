// People (issue 38 screen 8) in Debian's Chromium against a real server: an account
// administrator lists people, adds one (the password shown once, and neither stored in plain nor
// logged), sets roles, blocks, unblocks and resets a password, each ending the person's sign-ins
// at once as the API does; an account admin is offered only what the account rules allow
// (no escalation), and a direct POST beyond that is refused with nothing changed.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import pino from 'pino';
import { type Browser, type BrowserContext, type Page } from 'playwright-core';
import { launchChromium } from '../support/browser.ts';
import { startTestServer, ADMIN, type TestServer } from '../support/server.ts';
import { passwordToken, request } from '../support/http.ts';
import { createUser } from '../../runtime/accounts/users.ts';

let server: TestServer;
let browser: Browser;
let token: string;
/** Every line the server logged, at every level. */
const logLines: string[] = [];

before(async () => {
  const sink = new Writable({
    write(chunk, _encoding, done) {
      logLines.push(String(chunk));
      done();
    },
  });
  server = await startTestServer({ env: { TILTH_FARM_NAME: 'Willow Creek' }, logger: pino({ level: 'trace' }, sink) });
  token = await passwordToken(server.url, ADMIN.name, ADMIN.password);
  browser = await launchChromium();
});
after(async () => {
  await browser?.close();
  await server?.close();
});

let made = 0;
const unique = (prefix: string) => `${prefix}-${++made}-${Date.now().toString(36)}`;

async function openBrowser(): Promise<{ context: BrowserContext; page: Page; errors: string[] }> {
  const context = await browser.newContext();
  const page = await context.newPage();
  const errors: string[] = [];
  page.on(
    'console',
    (m) =>
      m.type() === 'error' &&
      !/^Failed to load resource: the server responded with a status of 4\d\d/.test(m.text()) &&
      errors.push(m.text()),
  );
  page.on('pageerror', (e) => errors.push(e.message));
  return { context, page, errors };
}

async function signIn(page: Page, who: { name: string; password: string }): Promise<void> {
  await page.goto(`${server.url}/farm/sign-in`);
  await page.fill('#username', who.name);
  await page.fill('#password', who.password);
  await page.click('button[type=submit]');
  await page.waitForURL(`${server.url}/farm`);
}

/** A user account as the API shows it to the administrator. */
async function apiUser(uuid: string) {
  const res = await request(`${server.url}/api/user/user/${uuid}`, { token });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return {
    status: res.body.data.attributes.status as boolean,
    mail: res.body.data.attributes.mail as string | null,
    roles: (res.body.data.relationships.roles.data as Array<{ meta: { drupal_internal__target_id: string } }>)
      .map((r) => r.meta.drupal_internal__target_id)
      .sort(),
  };
}

async function signsIn(name: string, password: string): Promise<boolean> {
  return passwordToken(server.url, name, password).then(
    () => true,
    () => false,
  );
}

async function isSignedIn(page: Page): Promise<boolean> {
  await page.goto(`${server.url}/farm`);
  return new URL(page.url()).pathname === '/farm';
}

test('an administrator adds a person: the password is shown once, works, and is neither stored in plain nor logged', async () => {
  const { context, page, errors } = await openBrowser();
  try {
    await signIn(page, ADMIN);
    await page.click('nav.main a:text("People")');
    await page.waitForURL(`${server.url}/farm/people`);
    const adminRow = await page.$$eval('tbody tr', (trs) =>
      trs.map((tr) => [...tr.children].map((c) => c.textContent!.trim())),
    );
    assert.ok(
      adminRow.some((r) => r[0] === ADMIN.name && r[2] === 'Administrator' && r[3] === 'Active'),
      JSON.stringify(adminRow),
    );

    const name = unique('sam');
    await page.click('a:text("Add a person")');
    await page.waitForURL(`${server.url}/farm/people/new`);
    await page.fill('#name', name);
    await page.fill('#mail', `${name}@example.org`);
    await page.check('#role-farm_worker');
    const [created] = await Promise.all([
      page.waitForResponse((r) => r.request().method() === 'POST'),
      page.click('form.record button[type=submit]'),
    ]);
    assert.equal(created.status(), 201);
    assert.equal(await page.textContent('h1'), `${name} can now sign in`);
    const password = (await page.textContent('#password'))!.trim();
    assert.ok(password.length >= 12, 'a generated password');
    assert.equal(created.headers()['cache-control'], 'no-store', 'the page with the password is never cached');

    const found = await request(`${server.url}/api/user/user?filter[name]=${name}`, { token });
    assert.equal(found.body.data.length, 1);
    const uuid = found.body.data[0].id as string;
    assert.deepEqual(await apiUser(uuid), { status: true, mail: `${name}@example.org`, roles: ['farm_worker'] });
    assert.ok(await signsIn(name, password), 'the password shown is the account’s');
    const stored = await server.ctx.db.knex('users').where('uuid', uuid).first('pass');
    assert.ok(stored.pass && !String(stored.pass).includes(password), 'stored as a hash only');
    assert.ok(logLines.length > 0, 'the server logged its requests');
    assert.ok(!logLines.some((l) => l.includes(password)), 'the password is in no log line');

    // Shown once: the person's page and the list do not show it again.
    await page.click(`a:text("Back to ${name}")`);
    await page.waitForURL(`${server.url}/farm/people/${uuid}`);
    assert.ok(!(await page.content()).includes(password));
    assert.match((await page.textContent('main dl'))!, /Worker/);

    // The same name again: refused beside the field, what was typed kept, nothing created.
    await page.goto(`${server.url}/farm/people/new`);
    await page.fill('#name', name);
    await page.fill('#mail', 'someone-else@example.org');
    const [refused] = await Promise.all([
      page.waitForResponse((r) => r.request().method() === 'POST'),
      page.click('form.record button[type=submit]'),
    ]);
    assert.equal(refused.status(), 422);
    assert.match((await page.textContent('#name-error'))!, /\S/);
    assert.equal(await page.inputValue('#mail'), 'someone-else@example.org');
    assert.equal(
      (await request(`${server.url}/api/user/user?filter[mail]=someone-else@example.org`, { token })).body.data.length,
      0,
    );
    assert.deepEqual(errors, []);
  } finally {
    await context.close();
  }
});

test('roles, block, unblock and a password reset, each ending the person’s sign-ins at once as the API does', async () => {
  const wes = { name: unique('wes'), password: 'wes-password-1' };
  const account = await createUser(server.ctx.db.knex, { ...wes, roles: ['farm_worker'] });
  const admin = await openBrowser();
  const theirs = await openBrowser();
  try {
    await signIn(admin.page, ADMIN);
    await signIn(theirs.page, wes);
    const wesToken = await passwordToken(server.url, wes.name, wes.password);
    const page = admin.page;

    await page.goto(`${server.url}/farm/people/${account.uuid}`);
    await page.uncheck('#role-farm_worker');
    await page.check('#role-farm_manager');
    await page.click('button:text("Save the roles")');
    await page.waitForURL(/\?done=roles/);
    assert.match((await page.textContent('[role=status]'))!, /roles are saved/);
    assert.deepEqual((await apiUser(account.uuid)).roles, ['farm_manager']);

    // A POST without the CSRF token changes nothing.
    const forged = await page.request.post(`${server.url}/farm/people/${account.uuid}/status`, {
      form: { status: 'blocked' },
    });
    assert.equal(forged.status(), 403);
    assert.equal((await apiUser(account.uuid)).status, true);

    await page.click(`button[aria-label="Block ${wes.name}"]`);
    await page.waitForURL(/\?done=blocked/);
    assert.equal((await apiUser(account.uuid)).status, false);
    assert.equal(await isSignedIn(theirs.page), false, 'their web sign-in ended at once');
    assert.equal((await request(`${server.url}/api/log/activity`, { token: wesToken })).status, 401, 'and their token');
    assert.equal(await signsIn(wes.name, wes.password), false, 'a blocked account cannot sign in');
    await page.goto(`${server.url}/farm/people`);
    const row = await page.$$eval('tbody tr', (trs) => trs.map((tr) => tr.textContent!));
    assert.ok(row.some((r) => r.includes(wes.name) && r.includes('Blocked')));

    await page.goto(`${server.url}/farm/people/${account.uuid}`);
    await page.click(`button[aria-label="Unblock ${wes.name}"]`);
    await page.waitForURL(/\?done=unblocked/);
    assert.equal((await apiUser(account.uuid)).status, true);
    await signIn(theirs.page, wes);
    const again = await passwordToken(server.url, wes.name, wes.password);

    await page.click('button:text("Reset the password")');
    await page.waitForSelector('#password');
    assert.equal(await page.textContent('h1'), `A new password for ${wes.name}`);
    const password = (await page.textContent('#password'))!.trim();
    assert.equal(await isSignedIn(theirs.page), false, 'their web sign-in ended at once');
    assert.equal((await request(`${server.url}/api/log/activity`, { token: again })).status, 401, 'and their token');
    assert.equal(await signsIn(wes.name, wes.password), false, 'the old password no longer works');
    assert.equal(await signsIn(wes.name, password), true, 'the new one does');
    assert.ok(!logLines.some((l) => l.includes(password)), 'the password is in no log line');
    assert.deepEqual(admin.errors, []);
  } finally {
    await admin.context.close();
    await theirs.context.close();
  }
});

test('no escalation: an account admin is offered only what the account rules allow, and a POST beyond is refused with nothing changed', async () => {
  const keeper = { name: unique('kay'), password: 'kay-password-1' };
  const keeperAccount = await createUser(server.ctx.db.knex, { ...keeper, roles: ['farm_account_admin'] });
  const newcomer = await createUser(server.ctx.db.knex, { name: unique('nia'), password: 'nia-password-1' });
  const worker = { name: unique('wil'), password: 'wil-password-1' };
  const workerAccount = await createUser(server.ctx.db.knex, { ...worker, roles: ['farm_worker'] });
  const adminUuid = (await server.ctx.db.knex('users').where('id', 1).first('uuid')).uuid as string;
  const { context, page, errors } = await openBrowser();
  try {
    await signIn(page, keeper);
    assert.ok(await page.$('nav.main a[href="/farm/people"]'), 'an account admin has People');

    await page.goto(`${server.url}/farm/people/${newcomer.uuid}`);
    const offered = await page.$$eval('input[name=role]', (els) => els.map((e) => (e as HTMLInputElement).value));
    assert.deepEqual(offered, ['farm_account_admin'], 'only the roles whose rights they hold');
    assert.ok(await page.$(`button[aria-label="Block ${newcomer.name}"]`));
    assert.ok(await page.$('button:text("Reset the password")'));

    for (const uuid of [workerAccount.uuid, adminUuid]) {
      await page.goto(`${server.url}/farm/people/${uuid}`);
      assert.equal(await page.$('input[name=role]'), null, 'no roles form');
      assert.equal(await page.$('form[action$="/status"]'), null, 'no block');
      assert.equal(await page.$('form[action$="/password"]'), null, 'no reset');
      assert.match((await page.textContent('main'))!, /You may not change/);
    }

    const csrf = await page.inputValue('header input[name=csrf_token]');
    const post = (path: string, form: Record<string, string | string[]>) => {
      const body = new URLSearchParams();
      for (const [k, v] of Object.entries(form)) for (const one of [v].flat()) body.append(k, one);
      return page.request.post(`${server.url}${path}`, {
        headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
        data: body.toString(),
      });
    };
    const refused = [
      await post(`/farm/people/${newcomer.uuid}/roles`, { csrf_token: csrf, role: 'administrator' }),
      await post(`/farm/people/${keeperAccount.uuid}/roles`, {
        csrf_token: csrf,
        role: ['farm_account_admin', 'farm_manager'],
      }),
      await post(`/farm/people/${workerAccount.uuid}/status`, { csrf_token: csrf, status: 'blocked' }),
      await post(`/farm/people/${workerAccount.uuid}/password`, { csrf_token: csrf }),
      await post(`/farm/people/${adminUuid}/password`, { csrf_token: csrf }),
      await post('/farm/people/new', { csrf_token: csrf, name: unique('eve'), role: 'farm_manager' }),
    ];
    assert.deepEqual(
      refused.map((r) => r.status()),
      [403, 403, 403, 403, 403, 403],
    );
    for (const r of refused)
      assert.doesNotMatch(await r.text(), /security token/, 'refused by the rules, not the token');
    assert.match(await refused[0]!.text(), /You may not do this/);
    assert.deepEqual((await apiUser(newcomer.uuid)).roles, []);
    assert.deepEqual((await apiUser(keeperAccount.uuid)).roles, ['farm_account_admin']);
    assert.equal((await apiUser(workerAccount.uuid)).status, true);
    assert.equal(await signsIn(worker.name, worker.password), true, 'the worker’s password is theirs still');
    assert.equal(await signsIn(ADMIN.name, ADMIN.password), true);
    assert.equal((await server.ctx.db.knex('users').where('name', 'like', 'eve-%')).length, 0, 'nobody was created');

    // Within their rights it works.
    await page.goto(`${server.url}/farm/people/${newcomer.uuid}`);
    await page.check('#role-farm_account_admin');
    await page.click('button:text("Save the roles")');
    await page.waitForURL(/\?done=roles/);
    assert.deepEqual((await apiUser(newcomer.uuid)).roles, ['farm_account_admin']);
    assert.deepEqual(errors, []);
  } finally {
    await context.close();
  }
});

test('the people list costs the same statements for 12 accounts as for 2 more: no query per row', async () => {
  const { context, page } = await openBrowser();
  try {
    await signIn(page, ADMIN);
    // The dashboard's map fetches its features after the page has loaded: wait for it, then leave, so that the
    // statements counted are the list's only.
    await page.waitForLoadState('networkidle');
    await page.goto('about:blank');
    const statements = async () => {
      // Once first: the first page after a write reads the session again (oauth/session.ts keeps it
      // on SQLite until the database changes), which is not a statement per row.
      assert.equal((await page.request.get(`${server.url}/farm/people`)).status(), 200);
      const knex = server.ctx.db.knex;
      const log: string[] = [];
      const listener = (q: { sql: string }) => log.push(q.sql);
      knex.on('query', listener);
      try {
        const res = await page.request.get(`${server.url}/farm/people`);
        assert.equal(res.status(), 200);
        return { count: log.length, rows: ((await res.text()).match(/<tr>/g) ?? []).length };
      } finally {
        knex.removeListener('query', listener);
      }
    };
    const few = await statements();
    for (let n = 0; n < 10; n++)
      await createUser(server.ctx.db.knex, { name: unique('row'), password: 'row-password-1', roles: ['farm_viewer'] });
    const many = await statements();
    assert.equal(many.rows, few.rows + 10);
    // Ten more accounts, not ten more statements: a query per row would add at least 10.
    assert.equal(
      many.count,
      few.count,
      `statements for ${many.rows} rows (${many.count}) = for ${few.rows} (${few.count})`,
    );
  } finally {
    await context.close();
  }
});

test('People works at 360 px: nothing wider than the screen, every button and input at least 44 px high', async () => {
  const person = await createUser(server.ctx.db.knex, { name: unique('pia'), password: 'pia-password-1', roles: [] });
  const context = await browser.newContext({ viewport: { width: 360, height: 740 } });
  const page = await context.newPage();
  try {
    await signIn(page, ADMIN);
    for (const path of ['/farm/people', '/farm/people/new', `/farm/people/${person.uuid}`]) {
      await page.goto(`${server.url}${path}`);
      const width = await page.evaluate(() => document.documentElement.scrollWidth);
      assert.ok(width <= 360, `${path}: ${width} px wide`);
      const small = await page.$$eval(
        'main button, main a.button, main label.choice, main input[type=text], main input[type=email]',
        (els) =>
          els
            .filter((e) => e.getBoundingClientRect().height < 44)
            .map((e) => `${e.tagName} ${e.textContent?.trim()} ${e.getBoundingClientRect().height}`),
      );
      assert.deepEqual(small, [], `${path}: touch targets`);
    }
  } finally {
    await context.close();
  }
});
