// The web interface (issue 38, part 1) in Debian's Chromium against a real server: signing in and
// out with the OAuth login's session cookie, CSRF refusal, a viewer without edit buttons whose
// direct POST is refused, a log created through the generated form read back through the API,
// markup in a string field escaped on the list and the record page, and a stale edit refused.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { type Browser, type BrowserContext, type Page } from 'playwright-core';
import { launchChromium } from '../support/browser.ts';
import { startTestServer, ADMIN, type TestServer } from '../support/server.ts';
import { passwordToken, request } from '../support/http.ts';
import { createUser } from '../../runtime/accounts/users.ts';

let server: TestServer;
let browser: Browser;
let token: string;
const VIEWER = { name: 'vera-viewer', password: 'vera-password-1' };

before(async () => {
  server = await startTestServer({ env: { TILTH_FARM_NAME: 'Willow Creek' } });
  token = await passwordToken(server.url, ADMIN.name, ADMIN.password);
  await createUser(server.ctx.db.knex, { name: VIEWER.name, password: VIEWER.password, roles: ['farm_viewer'] });
  browser = await launchChromium();
});
after(async () => {
  await browser?.close();
  await server?.close();
});

/** A fresh browser (its own cookies), with every console error, uncaught exception and dialog recorded. */
async function openBrowser(): Promise<{ context: BrowserContext; page: Page; errors: string[] }> {
  const context = await browser.newContext();
  const page = await context.newPage();
  const errors: string[] = [];
  // A 4xx page (a 422 form, a 409 conflict) is logged by Chromium as a failed load: expected, not an error of the page's.
  page.on(
    'console',
    (m) =>
      m.type() === 'error' &&
      !/^Failed to load resource: the server responded with a status of 4\d\d/.test(m.text()) &&
      errors.push(m.text()),
  );
  page.on('pageerror', (e) => errors.push(e.message));
  page.on('dialog', (d) => {
    errors.push(`a dialog opened: ${d.message()}`);
    void d.dismiss();
  });
  return { context, page, errors };
}

async function signIn(page: Page, who: { name: string; password: string }): Promise<void> {
  await page.goto(`${server.url}/farm`);
  assert.equal(new URL(page.url()).pathname, '/farm/sign-in', 'a page for signed-in people leads to the sign-in form');
  await page.fill('#username', who.name);
  await page.fill('#password', who.password);
  await page.click('button[type=submit]');
  await page.waitForURL(`${server.url}/farm`);
}

async function createLog(name: string): Promise<{ id: string }> {
  const res = await request(`${server.url}/api/log/activity`, {
    method: 'POST',
    token,
    json: {
      data: { type: 'log--activity', attributes: { name, status: 'pending', timestamp: '2024-03-01T10:00:00+00:00' } },
    },
  });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body.data;
}

test('sign in and out: the cookie is HttpOnly and SameSite=Lax, a new id at sign-in, and signing out ends the session at once', async () => {
  const { context, page, errors } = await openBrowser();
  try {
    await page.goto(`${server.url}/farm/sign-in`);
    const csp = (await page.request.get(`${server.url}/farm/sign-in`)).headers()['content-security-policy'] ?? '';
    assert.match(csp, /frame-ancestors 'none'/);
    assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval/);
    // Scripts only from Tilth itself (its bundles under /farm/assets/, web/assets.ts), never inline.
    assert.match(csp, /script-src 'self'(;|$)/);

    // A wrong password: the form again, with the name kept and no session.
    await page.fill('#username', ADMIN.name);
    await page.fill('#password', 'not-the-password');
    await page.click('button[type=submit]');
    assert.match((await page.textContent('[role=alert]'))!, /user name or password is wrong/);
    assert.equal(await page.inputValue('#username'), ADMIN.name);
    assert.ok(!(await context.cookies()).some((c) => c.name === 'tilth_session'));

    await page.fill('#password', ADMIN.password);
    await page.click('button[type=submit]');
    await page.waitForURL(`${server.url}/farm`);
    assert.equal(await page.textContent('h1'), 'Willow Creek');
    const cookie = (await context.cookies()).find((c) => c.name === 'tilth_session')!;
    assert.ok(cookie, 'a session cookie');
    assert.equal(cookie.httpOnly, true);
    assert.equal(cookie.sameSite, 'Lax');
    assert.equal(cookie.secure, false, 'plain http on loopback: not Secure (https sets it)');
    assert.equal(cookie.path, '/');

    // Signed in on the OAuth pages too: the authorize endpoint shows the consent page, not the login form.
    const authorize = await page.request.get(
      `${server.url}/oauth/authorize?${new URLSearchParams({ response_type: 'code', client_id: 'farm', redirect_uri: server.url, scope: 'user_access', state: 'x' })}`,
    );
    assert.match(await authorize.text(), /Authorize Farm default\?/);
    // And `/` leads a signed-in browser to the dashboard.
    await page.goto(`${server.url}/`);
    assert.equal(new URL(page.url()).pathname, '/farm');

    const before = cookie.value;
    await page.click('header form button[type=submit]');
    await page.waitForURL(/\/farm\/sign-in/);
    assert.match((await page.textContent('[role=status]'))!, /signed out/);
    // The old cookie is no good any more, even sent again by hand.
    await context.addCookies([{ ...cookie, value: before }]);
    await page.goto(`${server.url}/farm`);
    assert.equal(new URL(page.url()).pathname, '/farm/sign-in', 'the session ended at once');
    assert.deepEqual(errors, []);
  } finally {
    await context.close();
  }
});

test('a password change through the API ends the web session at once', async () => {
  const name = `pat-${Date.now()}`;
  const user = await createUser(server.ctx.db.knex, { name, password: 'pat-password-1', roles: ['farm_worker'] });
  const { context, page } = await openBrowser();
  try {
    await signIn(page, { name, password: 'pat-password-1' });
    const res = await request(`${server.url}/api/user/user/${user.uuid}`, {
      method: 'PATCH',
      token,
      json: { data: { type: 'user--user', id: user.uuid, attributes: { pass: { value: 'pat-password-2' } } } },
    });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    await page.goto(`${server.url}/farm`);
    assert.equal(new URL(page.url()).pathname, '/farm/sign-in', 'signed out by the new password');
  } finally {
    await context.close();
  }
});

test('a new id at every sign-in, and blocking the account ends its session', async () => {
  const name = `bea-${Date.now()}`;
  await createUser(server.ctx.db.knex, { name, password: 'bea-password-1', roles: ['farm_worker'] });
  const { context, page } = await openBrowser();
  try {
    await signIn(page, { name, password: 'bea-password-1' });
    const first = (await context.cookies()).find((c) => c.name === 'tilth_session')!.value;
    await page.goto(`${server.url}/farm/sign-in`);
    assert.equal(new URL(page.url()).pathname, '/farm', 'already signed in: the sign-in page leads on');
    await context.clearCookies();
    await signIn(page, { name, password: 'bea-password-1' });
    assert.notEqual((await context.cookies()).find((c) => c.name === 'tilth_session')!.value, first);

    const { setBlocked } = await import('../../runtime/accounts/users.ts');
    await setBlocked(server.ctx.db.knex, name, true);
    await page.goto(`${server.url}/farm`);
    assert.equal(new URL(page.url()).pathname, '/farm/sign-in', 'a blocked account is signed out at once');
  } finally {
    await context.close();
  }
});

test('a POST without the CSRF token is refused with 403 and changes nothing', async () => {
  const log = await createLog('Check the fence');
  const { context, page } = await openBrowser();
  try {
    await signIn(page, ADMIN);
    await page.goto(`${server.url}/farm/log/activity/${log.id}/edit`);
    const version = await page.inputValue('input[name=version]');
    for (const csrf of [undefined, 'forged-token']) {
      const res = await page.request.post(`${server.url}/farm/log/activity/${log.id}/edit`, {
        form: { ...(csrf ? { csrf_token: csrf } : {}), version, name: 'Hijacked', status: 'done' },
      });
      assert.equal(res.status(), 403);
      assert.match(await res.text(), /security token/);
    }
    const sign = await page.request.post(`${server.url}/farm/sign-out`, { form: {} });
    assert.equal(sign.status(), 403, 'sign-out too needs the token');
    const read = await request(`${server.url}/api/log/activity/${log.id}`, { token });
    assert.equal(read.body.data.attributes.name, 'Check the fence');
    assert.equal(read.body.data.attributes.status, 'pending');
  } finally {
    await context.close();
  }
});

test('a log created through the generated form reads back through the API as entered; a stale edit is refused', async () => {
  const { context, page, errors } = await openBrowser();
  try {
    await signIn(page, ADMIN);
    await page.goto(`${server.url}/farm/log/activity`);
    await page.click('text=Add Activity');
    assert.equal(new URL(page.url()).pathname, '/farm/log/activity/new');
    // Everything required is marked, every input has a label (a submit input is named by its value, as a button by its text).
    const unlabelled = await page.$$eval(
      'form.record input:not([type=hidden]):not([type=submit]), form.record select, form.record textarea',
      (els) =>
        els
          .filter((e) => !e.id || !document.querySelector(`label[for="${e.id}"]`))
          .map((e) => (e as HTMLInputElement).name),
    );
    assert.deepEqual(unlabelled, []);

    // A 422: a value the field does not take is shown beside it, with what was typed kept.
    await page.fill('#field-name', 'Mow the orchard');
    await page.fill('#field-timestamp', '2024-05-02T08:30');
    await page.fill('#field-geometry', 'POINT (not a point)');
    await page.check('#field-status-0');
    await page.click('form.record button[type=submit]');
    assert.match((await page.textContent('#field-geometry-error'))!, /\S/);
    assert.equal(await page.inputValue('#field-name'), 'Mow the orchard');
    assert.equal(await page.inputValue('#field-timestamp'), '2024-05-02T08:30');

    await page.fill('#field-geometry', 'POINT (-72.5 42.3)');
    await page.fill('#field-notes', 'Both rows\nand the edges');
    await page.click('form.record button[type=submit]');
    await page.waitForURL(/\/farm\/log\/activity\/[0-9a-f-]{36}\?saved=created/);
    assert.match((await page.textContent('[role=status]'))!, /Created/);
    const id = new URL(page.url()).pathname.split('/').pop()!;

    const read = await request(`${server.url}/api/log/activity/${id}`, { token });
    const attributes = read.body.data.attributes;
    assert.equal(attributes.name, 'Mow the orchard');
    assert.equal(attributes.status, 'pending');
    assert.equal(attributes.notes.value, 'Both rows\nand the edges');
    assert.match(attributes.geometry.value, /^POINT \(-72\.5 42\.3\)$/);
    // The farm's wall clock (the server's time zone here) as the instant the API holds.
    const typed = new Date(attributes.timestamp);
    const shown = new Intl.DateTimeFormat('en-CA', {
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      hourCycle: 'h23',
    })
      .format(typed)
      .replace(', ', 'T');
    assert.equal(shown, '2024-05-02T08:30');
    assert.equal(
      read.body.data.relationships.uid.data.id,
      (await request(`${server.url}/api/user/user?filter[name]=${ADMIN.name}`, { token })).body.data[0].id,
      'the author is the person signed in',
    );

    // The record's page shows it, with its revision.
    assert.equal(await page.textContent('h1'), 'Mow the orchard');
    assert.match((await page.textContent('main'))!, /Revisions/);

    // Two tabs: the second saves after the first; it is refused, nothing it sent is saved, and what it typed is kept.
    const second = await context.newPage();
    await page.goto(`${server.url}/farm/log/activity/${id}/edit`);
    await second.goto(`${server.url}/farm/log/activity/${id}/edit`);
    await page.fill('#field-name', 'Mow the orchard twice');
    await page.click('form.record button[type=submit]');
    await page.waitForURL(/\?saved=saved/);
    await second.fill('#field-name', 'Mow it once');
    const [answer] = await Promise.all([
      second.waitForResponse((r) => r.request().method() === 'POST'),
      second.click('form.record button[type=submit]'),
    ]);
    assert.equal(answer.status(), 409);
    assert.match((await second.textContent('[role=alert]'))!, /changed this record since you opened the form/);
    assert.equal(await second.inputValue('#field-name'), 'Mow it once');
    assert.equal(
      (await request(`${server.url}/api/log/activity/${id}`, { token })).body.data.attributes.name,
      'Mow the orchard twice',
    );
    assert.deepEqual(errors, []);
  } finally {
    await context.close();
  }
});

test('the conflict page: who changed the record and when, the fields that differ, and apply mine to theirs keeps both edits', async () => {
  const log = await createLog('Prune the apples');
  const { context, page, errors } = await openBrowser();
  try {
    await signIn(page, ADMIN);
    // This tab opens the form; meanwhile someone changes the notes through the API.
    await page.goto(`${server.url}/farm/log/activity/${log.id}/edit`);
    const theirs = await request(`${server.url}/api/log/activity/${log.id}`, {
      method: 'PATCH',
      token,
      json: {
        data: {
          type: 'log--activity',
          id: log.id,
          attributes: { notes: { value: 'Start at the north row', format: 'default' } },
        },
      },
    });
    assert.equal(theirs.status, 200, JSON.stringify(theirs.body));
    await page.fill('#field-name', 'Prune the pears');
    const [answer] = await Promise.all([
      page.waitForResponse((r) => r.request().method() === 'POST'),
      page.click('form.record button[type=submit]'),
    ]);
    assert.equal(answer.status(), 409);
    const conflict = (await page.textContent('section[aria-labelledby=conflict]'))!;
    assert.match(conflict, new RegExp(`Changed by ${ADMIN.name} on .*20\\d\\d`), 'who and when');
    const rows = await page.$$eval('section[aria-labelledby=conflict] tbody tr', (trs) =>
      trs.map((tr) => [...tr.children].map((c) => c.textContent!.trim())),
    );
    assert.deepEqual(rows, [
      ['Name', 'Prune the apples', 'Prune the pears'],
      ['Notes', 'Start at the north row', 'Not changed by you: theirs is kept'],
    ]);
    assert.ok(
      await page.$(`section[aria-labelledby=conflict] a[href="/farm/log/activity/${log.id}"]:text("Keep theirs")`),
    );
    // Nothing saved yet; the form holds what was typed, and theirs where nothing was typed.
    assert.equal(
      (await request(`${server.url}/api/log/activity/${log.id}`, { token })).body.data.attributes.name,
      'Prune the apples',
    );
    assert.equal(await page.inputValue('#field-name'), 'Prune the pears');
    assert.equal(await page.inputValue('#field-notes'), 'Start at the north row');
    await page.click('button:text("Apply mine to theirs")');
    await page.waitForURL(/\?saved=saved/);
    const read = (await request(`${server.url}/api/log/activity/${log.id}`, { token })).body.data.attributes;
    assert.equal(read.name, 'Prune the pears', 'mine applied');
    assert.equal(read.notes.value, 'Start at the north row', 'theirs kept');
    assert.deepEqual(errors, []);
  } finally {
    await context.close();
  }
});

test('a viewer sees no edit buttons, and a direct POST of a form is refused', async () => {
  const log = await createLog('Inspect hives');
  const { context, page } = await openBrowser();
  try {
    await signIn(page, VIEWER);
    await page.goto(`${server.url}/farm/log/activity`);
    assert.ok(await page.$(`a[href="/farm/log/activity/${log.id}"]`), 'the viewer sees the log in the list');
    assert.equal(await page.$('text=Add Activity'), null, 'no add button');
    await page.goto(`${server.url}/farm/log/activity/${log.id}`);
    assert.equal(await page.textContent('h1'), 'Inspect hives');
    assert.equal(await page.$('a:text("Edit")'), null, 'no edit button');
    const form = await page.request.get(`${server.url}/farm/log/activity/${log.id}/edit`);
    assert.equal(form.status(), 403);
    const csrf = await page.inputValue('header input[name=csrf_token]');
    const post = await page.request.post(`${server.url}/farm/log/activity/${log.id}/edit`, {
      form: { csrf_token: csrf, name: 'Viewer was here' },
    });
    assert.equal(post.status(), 403);
    const create = await page.request.post(`${server.url}/farm/log/activity/new`, {
      form: { csrf_token: csrf, name: 'Viewer log', status: 'done' },
    });
    assert.equal(create.status(), 403);
    assert.equal(
      (await request(`${server.url}/api/log/activity/${log.id}`, { token })).body.data.attributes.name,
      'Inspect hives',
    );
    assert.equal(
      (await request(`${server.url}/api/log/activity?filter[name]=Viewer log`, { token })).body.data.length,
      0,
    );
  } finally {
    await context.close();
  }
});

test('markup typed into a string field is shown as text on the list and the record page: nothing runs', async () => {
  const hostile = `<img src=x onerror="alert(1)">"><script>alert(2)</script><a href="javascript:alert(3)">x</a>`;
  const res = await request(`${server.url}/api/asset/equipment`, {
    method: 'POST',
    token,
    json: {
      data: {
        type: 'asset--equipment',
        attributes: { name: hostile, notes: { value: hostile, format: 'default' }, manufacturer: hostile },
      },
    },
  });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  const id = res.body.data.id;
  const { context, page, errors } = await openBrowser();
  try {
    await signIn(page, ADMIN);
    for (const path of [
      '/farm/asset/equipment',
      `/farm/asset/equipment/${id}`,
      `/farm/asset/equipment/${id}/edit`,
      `/farm/asset/equipment?name=${encodeURIComponent(hostile)}`,
    ]) {
      await page.goto(`${server.url}${path}`);
      // No script but Tilth's own bundles (the map's on a form with a geometry, web/assets.ts).
      assert.deepEqual(
        await page.$$eval('script', (s) =>
          s
            .map((e) => e.getAttribute('src') ?? 'inline')
            .filter((src) => !/^\/farm\/assets\/[a-z]+\.[A-Z0-9]+\.js$/.test(src)),
        ),
        [],
        `${path}: no script element of the payload's`,
      );
      assert.equal(await page.$$eval('img', (s) => s.length), 0, `${path}: no image element`);
      assert.equal(await page.$$eval('a[href^="javascript:"]', (s) => s.length), 0, `${path}: no javascript: link`);
      assert.ok(
        (await page.textContent('main'))!.includes('<script>alert(2)</script>'),
        `${path}: the text is shown as typed`,
      );
    }
    assert.deepEqual(errors, [], 'nothing ran');
  } finally {
    await context.close();
  }
});

test('lists: the URL holds the filters and sort, the count is shown; an unknown bundle is a plain 404 page', async () => {
  await createLog('Sort seed trays');
  await createLog('Sharpen tools');
  const { context, page } = await openBrowser();
  try {
    await signIn(page, ADMIN);
    await page.goto(`${server.url}/farm/log/activity?name=Sharpen`);
    // The first cell is the bulk actions' tick box (web/bulk.ts); the name is the first link's.
    const names = await page.$$eval('tbody tr td a', (as) => as.slice(0, 1).map((a) => a.textContent));
    assert.deepEqual(names, ['Sharpen tools']);
    assert.match((await page.textContent('[role=status]'))!, /About 1 record/);
    await page.goto(`${server.url}/farm/log/activity?sort=name`);
    const sorted = await page.$$eval('tbody tr td:first-child', (tds) => tds.map((t) => t.textContent!));
    assert.deepEqual(
      sorted,
      [...sorted].sort((a, b) => a.localeCompare(b)),
    );
    const res = await page.request.get(`${server.url}/farm/log/nonsense`);
    assert.equal(res.status(), 404);
    assert.match(await res.text(), /Not found/);
  } finally {
    await context.close();
  }
});

test('a list page costs the same statements for 30 rows as for 2: no query per row', async () => {
  const post = async (path: string, data: unknown) => {
    const res = await request(`${server.url}/api/${path}`, { method: 'POST', token, json: { data } });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    return res.body.data as { type: string; id: string };
  };
  const asset = await post('asset/equipment', { type: 'asset--equipment', attributes: { name: 'Tractor' } });
  const category = await post('taxonomy_term/log_category', {
    type: 'taxonomy_term--log_category',
    attributes: { name: 'Machinery' },
  });
  const admin = (await request(`${server.url}/api/user/user?filter[name]=${ADMIN.name}`, { token })).body.data[0];
  const observe = (n: number) =>
    post('log/observation', {
      type: 'log--observation',
      attributes: { name: `Look at the tractor ${n}`, status: 'done' },
      relationships: {
        asset: { data: [{ type: asset.type, id: asset.id }] },
        category: { data: [{ type: category.type, id: category.id }] },
        owner: { data: [{ type: 'user--user', id: admin.id }] },
      },
    });
  const { context, page } = await openBrowser();
  try {
    await signIn(page, ADMIN);
    // The dashboard's map fetches its features after the page has loaded: wait for it, then leave, so that the
    // statements counted are the list's only.
    await page.waitForLoadState('networkidle');
    await page.goto('about:blank');
    const statements = async () => {
      // Once first: the first page after writes reads the session again (kept on SQLite until the
      // database changes, oauth/session.ts), which is not a statement per row.
      assert.equal((await page.request.get(`${server.url}/farm/log/observation?status=done`)).status(), 200);
      const knex = server.ctx.db.knex;
      const log: string[] = [];
      const listener = (q: { sql: string }) => log.push(q.sql);
      knex.on('query', listener);
      try {
        const res = await page.request.get(`${server.url}/farm/log/observation?status=done`);
        assert.equal(res.status(), 200);
        return { count: log.length, html: await res.text() };
      } finally {
        knex.removeListener('query', listener);
      }
    };
    for (let n = 0; n < 2; n++) await observe(n);
    const few = await statements();
    assert.equal((few.html.match(/>Look at the tractor/g) ?? []).length, 2);
    for (let n = 2; n < 30; n++) await observe(n);
    const many = await statements();
    assert.equal((many.html.match(/>Look at the tractor/g) ?? []).length, 30);
    assert.match(many.html, /Tractor<\/a>/, 'the asset column names the asset');
    assert.match(many.html, /Machinery<\/a>/, 'the category column names the term');
    // 28 more rows, not 28 more statements: a query per row would add at least 28.
    assert.equal(many.count, few.count, `statements for 30 rows (${many.count}) = for 2 (${few.count})`);
  } finally {
    await context.close();
  }
});

test('the dashboard: late and upcoming tasks, all or mine, and a late task marked done in place', async () => {
  const now = Math.floor(Date.now() / 1000);
  const iso = (s: number) => new Date(s * 1000).toISOString().replace(/\.\d{3}Z$/, '+00:00');
  const admin = (await request(`${server.url}/api/user/user?filter[name]=${ADMIN.name}`, { token })).body.data[0];
  // A log without an owner is its author's (farmOS's default): the others' are the viewer's.
  const vera = (await request(`${server.url}/api/user/user?filter[name]=${VIEWER.name}`, { token })).body.data[0];
  const post = async (name: string, at: number, mine: boolean) => {
    const res = await request(`${server.url}/api/log/maintenance`, {
      method: 'POST',
      token,
      json: {
        data: {
          type: 'log--maintenance',
          attributes: { name, status: 'pending', timestamp: iso(at) },
          relationships: { owner: { data: [{ type: 'user--user', id: mine ? admin.id : vera.id }] } },
        },
      },
    });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    return res.body.data.id as string;
  };
  const late = await post('Grease the baler', now - 3 * 86_400, true);
  await post('Oil the chainsaw', now - 86_400, false);
  await post('Service the tractor', now + 3 * 86_400, false);
  await post('Next month', now + 30 * 86_400, true);
  const { context, page, errors } = await openBrowser();
  try {
    await signIn(page, ADMIN);
    const section = async (id: string) => (await page.textContent(`section[aria-labelledby=${id}]`))!;
    assert.match(await section('late'), /Grease the baler[\s\S]*Oil the chainsaw/, 'late tasks, oldest first');
    assert.match(await section('upcoming'), /Service the tractor/);
    assert.doesNotMatch(await section('upcoming'), /Next month/, 'the next 14 days only');
    assert.match(await section('week'), /Maintenance/, 'logs this week by type');

    await Promise.all([page.waitForURL(`${server.url}/farm?tasks=mine`), page.click('a[href="/farm?tasks=mine"]')]);
    assert.match(await section('late'), /Grease the baler/);
    assert.doesNotMatch(await section('late'), /Oil the chainsaw/, 'mine: owned by me');

    await page.click('button[aria-label="Mark Grease the baler done"]');
    await page.waitForURL(`${server.url}/farm?tasks=mine`);
    assert.doesNotMatch(await section('late'), /Grease the baler/);
    assert.equal(
      (await request(`${server.url}/api/log/maintenance/${late}`, { token })).body.data.attributes.status,
      'done',
    );
    assert.deepEqual(errors, []);
  } finally {
    await context.close();
  }
});

test('change my password: the current one is asked for, and every sign-in of the account ends', async () => {
  const name = `cam-${Date.now()}`;
  await createUser(server.ctx.db.knex, { name, password: 'cam-password-1', roles: ['farm_worker'] });
  const { context, page, errors } = await openBrowser();
  try {
    await signIn(page, { name, password: 'cam-password-1' });
    await page.click(`a:text("Signed in as ${name}")`);
    await page.waitForURL(`${server.url}/farm/account/password`);
    const change = async (current: string, next: string, again: string) => {
      await page.fill('#current', current);
      await page.fill('#new', next);
      await page.fill('#again', again);
      await page.click('form.record button[type=submit]');
    };
    await change('cam-password-1', 'cam-password-2', 'cam-password-3');
    assert.match((await page.textContent('[role=alert]'))!, /two new passwords differ/);
    await change('not-my-password', 'cam-password-2', 'cam-password-2');
    assert.match((await page.textContent('[role=alert]'))!, /\S/, 'a wrong current password is refused');
    await assert.rejects(passwordToken(server.url, name, 'cam-password-2'), 'nothing changed yet');

    await change('cam-password-1', 'cam-password-2', 'cam-password-2');
    await page.waitForURL(/\/farm\/sign-in\?password_changed=1/);
    assert.match((await page.textContent('[role=status]'))!, /password is changed/);
    await page.goto(`${server.url}/farm`);
    assert.equal(new URL(page.url()).pathname, '/farm/sign-in', 'this sign-in ended too');
    assert.ok(await passwordToken(server.url, name, 'cam-password-2'), 'the new password is the account’s');
    assert.deepEqual(errors, []);
  } finally {
    await context.close();
  }
});

test('delete: the confirmation names the log’s quantities, and they go with it; archive and reactivate an asset', async () => {
  const post = async (path: string, data: unknown) => {
    const res = await request(`${server.url}/api/${path}`, { method: 'POST', token, json: { data } });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    return res.body.data as { type: string; id: string };
  };
  const unit = await post('taxonomy_term/unit', { type: 'taxonomy_term--unit', attributes: { name: 'kg' } });
  const quantity = await post('quantity/standard', {
    type: 'quantity--standard',
    attributes: { value: { decimal: '12.5' }, measure: 'weight', label: 'Apples' },
    relationships: { units: { data: { type: unit.type, id: unit.id } } },
  });
  const log = await post('log/harvest', {
    type: 'log--harvest',
    attributes: { name: 'Pick the orchard', status: 'done' },
    relationships: { quantity: { data: [{ type: quantity.type, id: quantity.id }] } },
  });
  const asset = await post('asset/equipment', { type: 'asset--equipment', attributes: { name: 'Old plough' } });
  const { context, page, errors } = await openBrowser();
  try {
    await signIn(page, ADMIN);
    await page.goto(`${server.url}/farm/log/harvest/${log.id}`);
    await page.click('a:text("Delete")');
    await page.waitForURL(`${server.url}/farm/log/harvest/${log.id}/delete`);
    assert.equal(await page.textContent('h1'), 'Delete Pick the orchard?');
    assert.match((await page.textContent('main'))!, /This goes with it:\s*Quantity 12\.5 kg \(Apples\)/);
    await page.click('button:text("Delete for good")');
    await page.waitForURL(/\/farm\/log\/harvest\?deleted=/);
    assert.match((await page.textContent('main .notice'))!, /Deleted Pick the orchard\./);
    assert.equal((await request(`${server.url}/api/log/harvest/${log.id}`, { token })).status, 404);
    assert.equal(
      (await request(`${server.url}/api/quantity/standard/${quantity.id}`, { token })).status,
      404,
      'its quantity went with it',
    );
    assert.equal((await request(`${server.url}/api/taxonomy_term/unit/${unit.id}`, { token })).status, 200);

    await page.goto(`${server.url}/farm/asset/equipment/${asset.id}`);
    await page.click('button:text("Archive")');
    await page.waitForURL(/\?saved=archived/);
    assert.match((await page.textContent('[role=status]'))!, /Archived/);
    const read = async () =>
      (await request(`${server.url}/api/asset/equipment/${asset.id}`, { token })).body.data.attributes;
    assert.equal((await read()).status, 'archived');
    assert.ok((await read()).archived, 'the time it was archived is kept');
    await page.click('button:text("Reactivate")');
    await page.waitForURL(/\?saved=reactivated/);
    assert.equal((await read()).status, 'active');
    assert.deepEqual(errors, []);
  } finally {
    await context.close();
  }
});

test('a viewer is offered no delete or archive, and their direct POSTs are refused', async () => {
  const log = await createLog('Count the sheep');
  const asset = await request(`${server.url}/api/asset/equipment`, {
    method: 'POST',
    token,
    json: { data: { type: 'asset--equipment', attributes: { name: 'Seed drill' } } },
  });
  assert.equal(asset.status, 201);
  const { context, page } = await openBrowser();
  try {
    await signIn(page, VIEWER);
    await page.goto(`${server.url}/farm/log/activity/${log.id}`);
    assert.equal(await page.$('a:text("Delete")'), null, 'no delete button');
    await page.goto(`${server.url}/farm/asset/equipment/${asset.body.data.id}`);
    assert.equal(await page.$('button:text("Archive")'), null, 'no archive button');
    const csrf = await page.inputValue('header input[name=csrf_token]');
    assert.equal((await page.request.get(`${server.url}/farm/log/activity/${log.id}/delete`)).status(), 403);
    const del = await page.request.post(`${server.url}/farm/log/activity/${log.id}/delete`, {
      form: { csrf_token: csrf },
    });
    assert.equal(del.status(), 403);
    const archive = await page.request.post(`${server.url}/farm/asset/equipment/${asset.body.data.id}/status`, {
      form: { csrf_token: csrf, status: 'archived' },
    });
    assert.equal(archive.status(), 403);
    assert.equal((await request(`${server.url}/api/log/activity/${log.id}`, { token })).status, 200, 'still there');
    assert.equal(
      (await request(`${server.url}/api/asset/equipment/${asset.body.data.id}`, { token })).body.data.attributes.status,
      'active',
    );
  } finally {
    await context.close();
  }
});

test('an edit through the form keeps the seconds of a log’s time: only what the person changed changes', async () => {
  const res = await request(`${server.url}/api/log/activity`, {
    method: 'POST',
    token,
    json: {
      data: {
        type: 'log--activity',
        attributes: { name: 'Check the hives', status: 'pending', timestamp: '2024-03-01T10:00:42+00:00' },
      },
    },
  });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  const id = res.body.data.id as string;
  const { context, page, errors } = await openBrowser();
  try {
    await signIn(page, ADMIN);
    await page.goto(`${server.url}/farm/log/activity/${id}/edit`);
    await page.fill('#field-name', 'Check the hives again');
    await Promise.all([page.waitForURL(/\?saved=saved$/), page.click('form.record button[type=submit]')]);
    const after = (await request(`${server.url}/api/log/activity/${id}`, { token })).body.data.attributes;
    assert.equal(after.name, 'Check the hives again');
    assert.equal(
      Date.parse(after.timestamp),
      Date.parse('2024-03-01T10:00:42+00:00'),
      'the time as it was, to the second',
    );
    assert.deepEqual(errors, []);
  } finally {
    await context.close();
  }
});
