// The web interface's "all logs" and "all assets" lists and the dashboard's tasks moved in place
// (issue 38 screens 2 and 3), in Debian's Chromium against a real server: every log type in one
// list with its type, filtered through the API's grammar (type, location with what is inside it,
// movement, quantity shown with its units), sorted by any column, paged by cursor across types
// without a row lost or repeated, in a fixed number of statements; a task moved to another date
// through the update command at the version the dashboard showed, a stale one refused.
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
const VIEWER = { name: 'val-viewer', password: 'val-password-1' };

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

async function post(path: string, data: unknown): Promise<{ type: string; id: string }> {
  const res = await request(`${server.url}/api/${path}`, { method: 'POST', token, json: { data } });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body.data;
}
const ref = (r: { type: string; id: string }) => ({ type: r.type, id: r.id });
const iso = (s: number) => new Date(s * 1000).toISOString().replace(/\.\d{3}Z$/, '+00:00');

async function signedIn(who = ADMIN): Promise<{ context: BrowserContext; page: Page; errors: string[] }> {
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
  await page.goto(`${server.url}/farm/sign-in`);
  await page.fill('#username', who.name);
  await page.fill('#password', who.password);
  await Promise.all([page.waitForURL(`${server.url}/farm`), page.click('button[type=submit]')]);
  return { context, page, errors };
}

/** The text of the column headed `heading`, row by row. */
const column = (page: Page, heading: string): Promise<string[]> =>
  page.$$eval(
    'table',
    (tables, h) => {
      const table = tables[0];
      if (!table) return [];
      const at = [...table.querySelectorAll('thead th')].findIndex(
        (th) => th.textContent!.replace(/[↑↓]/g, '').trim() === h,
      );
      return [...table.querySelectorAll('tbody tr')].map((tr) => tr.children[at]!.textContent!.trim());
    },
    heading,
  );
/** The records' names, row by row. */
const names = (page: Page) => column(page, 'Name');
/** The headings of the list's columns, in order. */
const headings = (page: Page) =>
  page.$$eval('thead th', (ths) => ths.map((th) => th.textContent!.replace(/[↑↓]/g, '').trim()));

test('all logs: every type in one list with a type column; filters by type, location (with what is inside it), movement; quantities with their units', async () => {
  const farm = await post('asset/land', {
    type: 'asset--land',
    attributes: { name: 'Home farm', land_type: 'property' },
  });
  const bed = await post('asset/land', {
    type: 'asset--land',
    attributes: { name: 'Bed 3', land_type: 'bed' },
    relationships: { parent: { data: [ref(farm)] } },
  });
  const beans = await post('asset/plant', {
    type: 'asset--plant',
    attributes: { name: 'Runner beans' },
    relationships: {
      plant_type: {
        data: [
          ref(
            await post('taxonomy_term/plant_type', { type: 'taxonomy_term--plant_type', attributes: { name: 'Bean' } }),
          ),
        ],
      },
    },
  });
  const kg = await post('taxonomy_term/unit', { type: 'taxonomy_term--unit', attributes: { name: 'kg' } });
  const picked = await post('quantity/standard', {
    type: 'quantity--standard',
    attributes: { value: { decimal: '12.5' }, measure: 'weight' },
    relationships: { units: { data: ref(kg) } },
  });
  await post('log/activity', {
    type: 'log--activity',
    attributes: { name: 'Weed bed 3', status: 'done', timestamp: '2024-06-03T10:00:00+00:00', is_movement: true },
    relationships: { asset: { data: [ref(beans)] }, location: { data: [ref(bed)] } },
  });
  await post('log/observation', {
    type: 'log--observation',
    attributes: { name: 'Walk the farm', status: 'done', timestamp: '2024-06-02T10:00:00+00:00' },
    relationships: { location: { data: [ref(farm)] } },
  });
  await post('log/harvest', {
    type: 'log--harvest',
    attributes: { name: 'Pick beans', status: 'done', timestamp: '2024-06-04T10:00:00+00:00' },
    relationships: { asset: { data: [ref(beans)] }, quantity: { data: [ref(picked)] } },
  });

  const { context, page, errors } = await signedIn();
  try {
    await page.goto(`${server.url}/farm/log?timestamp_from=2024-06-01&timestamp_to=2024-06-05`);
    assert.equal(await page.textContent('h1'), 'All logs');
    assert.deepEqual(await names(page), ['Pick beans', 'Weed bed 3', 'Walk the farm'], 'newest first, all types');
    assert.deepEqual(await column(page, 'Type'), ['Harvest', 'Activity', 'Observation']);
    assert.deepEqual(
      await headings(page),
      // The bulk actions' tick boxes first (web/bulk.ts), then farmOS's columns.
      [
        'Select',
        'Status',
        'Timestamp',
        'Name',
        'Type',
        'Assets',
        'Location',
        'Quantity',
        'Log category',
        'Assigned to',
        'Flags',
      ],
      'farmOS’s columns, in the order of its Logs view',
    );
    assert.equal((await column(page, 'Quantity'))[0], '12.5 kg', 'the quantity with its units');
    assert.match((await page.textContent('[role=status]'))!, /About 3 records/);
    // Every column the API can sort by is a link; the type sorts by the type's name.
    await page.goto(`${server.url}/farm/log?timestamp_from=2024-06-01&timestamp_to=2024-06-05&sort=type`);
    assert.deepEqual(await column(page, 'Type'), ['Activity', 'Harvest', 'Observation']);
    await page.goto(`${server.url}/farm/log?timestamp_from=2024-06-01&timestamp_to=2024-06-05&sort=-name`);
    assert.deepEqual(await names(page), ['Weed bed 3', 'Walk the farm', 'Pick beans']);

    const shown = async (query: string) => {
      await page.goto(`${server.url}/farm/log?timestamp_from=2024-06-01&timestamp_to=2024-06-05&${query}`);
      return (await names(page)).sort();
    };
    assert.deepEqual(await shown('type=harvest'), ['Pick beans']);
    assert.deepEqual(
      await shown('location=Home+farm'),
      ['Walk the farm', 'Weed bed 3'],
      'the farm, and the bed inside it',
    );
    assert.deepEqual(await shown('location=Bed+3'), ['Weed bed 3']);
    assert.deepEqual(await shown('is_movement=1'), ['Weed bed 3']);
    assert.deepEqual(await shown('is_movement=0'), ['Pick beans', 'Walk the farm']);
    assert.deepEqual(await shown('asset=Runner'), ['Pick beans', 'Weed bed 3']);
    assert.deepEqual(await shown('name=beans'), ['Pick beans']);
    assert.deepEqual(await shown('type=nonsense'), [], 'an unknown type shows nothing');
    // The filters offered, type first, each with a label.
    await page.goto(`${server.url}/farm/log`);
    const offered = await page.$$eval('form.filters [name]', (els) => els.map((e) => (e as HTMLInputElement).name));
    for (const name of [
      'type',
      'name',
      'timestamp_from',
      'timestamp_to',
      'status',
      'flag',
      'is_movement',
      'asset',
      'category',
      'owner',
      'location',
    ])
      assert.ok(offered.includes(name), `the ${name} filter is offered`);

    // All assets: the planting is in the bed, so in the farm too.
    await page.goto(`${server.url}/farm/asset?location=Home+farm`);
    assert.equal(await page.textContent('h1'), 'All assets');
    assert.deepEqual(await names(page), ['Runner beans']);
    assert.deepEqual(await column(page, 'Type'), ['Plant']);
    assert.deepEqual(
      await headings(page),
      // The bulk actions' tick boxes first (web/bulk.ts), then farmOS's columns.
      ['Select', 'Name', 'Type', 'Current location', 'Flags', 'Parents', 'Owners', 'Status'],
      'farmOS’s columns, in the order of its Assets view',
    );
    assert.match((await column(page, 'Current location'))[0]!, /Bed 3/);
    await page.goto(`${server.url}/farm/asset?type=land&sort=name`);
    assert.deepEqual(await names(page), ['Bed 3', 'Home farm']);
    assert.deepEqual(errors, []);
  } finally {
    await context.close();
  }
});

test('all logs: cursor pages across types lose and repeat nothing, in the API’s order, at a fixed number of statements', async () => {
  const base = Date.parse('2023-01-01T00:00:00Z') / 1000;
  // 60 logs of three types, with equal dates in pairs so the id breaks the ties.
  for (let n = 0; n < 60; n++) {
    const bundle = ['activity', 'observation', 'maintenance'][n % 3]!;
    await post(`log/${bundle}`, {
      type: `log--${bundle}`,
      attributes: {
        name: `Paged ${String(n).padStart(2, '0')}`,
        status: 'done',
        timestamp: iso(base + Math.floor(n / 2) * 3600),
      },
    });
  }
  const { context, page } = await signedIn();
  try {
    const statements = async (path: string) => {
      // Once first: the first page after writes reads again what is kept until the database
      // changes (the session, oauth/session.ts), which is not a statement per row.
      await page.goto(`${server.url}${path}`);
      const knex = server.ctx.db.knex;
      let count = 0;
      const listener = () => count++;
      knex.on('query', listener);
      try {
        await page.goto(`${server.url}${path}`);
        return count;
      } finally {
        knex.removeListener('query', listener);
      }
    };
    const view = '/farm/log?name=Paged&timestamp_from=2023-01-01&timestamp_to=2023-01-03';
    const first = await statements(view);
    const one = await names(page);
    assert.equal(one.length, 50);
    const next = await page.getAttribute('a[rel=next]', 'href');
    assert.ok(next && next.includes('cursor='), 'the next page by cursor');
    const second = await statements(next!);
    const two = await names(page);
    assert.equal(two.length, 10);
    assert.equal(await page.$('a[rel=next]'), null, 'the last page');
    const all = [...one, ...two];
    assert.equal(new Set(all).size, 60, 'no row lost or repeated');
    // The API's own order: newest first, the later id first among equal dates.
    const expected = Array.from({ length: 60 }, (_, n) => n)
      .sort((a, b) => Math.floor(b / 2) - Math.floor(a / 2) || b - a)
      .map((n) => `Paged ${String(n).padStart(2, '0')}`);
    assert.deepEqual(all, expected);
    // 40 rows fewer, not 40 statements fewer: a query per row would make the difference at least 40.
    assert.ok(
      Math.abs(first - second) < 10,
      `a page of 10 (${second} statements) costs what a page of 50 does (${first})`,
    );
    const few = await statements('/farm/log?name=Paged+0');
    assert.equal((await names(page)).length, 10);
    assert.equal(few, first, 'and so does a page of a few rows');
  } finally {
    await context.close();
  }
});

test('the dashboard: a task moved to another date in place; a stale move and a bad date are refused and change nothing; a viewer may not', async () => {
  const now = Math.floor(Date.now() / 1000);
  const task = await post('log/maintenance', {
    type: 'log--maintenance',
    attributes: { name: 'Sharpen the mower', status: 'pending', timestamp: iso(now - 86_400) },
  });
  const read = async () =>
    (await request(`${server.url}/api/log/maintenance/${task.id}`, { token })).body.data.attributes;
  const { context, page, errors } = await signedIn();
  try {
    await page.goto(`${server.url}/farm`);
    // Meanwhile someone else moves it: the dashboard's version is stale.
    const theirs = await request(`${server.url}/api/log/maintenance/${task.id}`, {
      method: 'PATCH',
      token,
      json: { data: { type: 'log--maintenance', id: task.id, attributes: { timestamp: iso(now - 2 * 86_400) } } },
    });
    assert.equal(theirs.status, 200);
    await page.fill('input[aria-label="New date for Sharpen the mower"]', '2031-01-15');
    const [stale] = await Promise.all([
      page.waitForResponse((r) => r.request().method() === 'POST'),
      page.click('button[aria-label="Move Sharpen the mower to the date chosen"]'),
    ]);
    assert.equal(stale.status(), 409);
    assert.match((await page.textContent('[role=alert]'))!, /changed this task since the dashboard was loaded/);
    assert.equal((await read()).timestamp, iso(now - 2 * 86_400), 'theirs kept, nothing moved');

    // The dashboard shown with the refusal has the version now: moving from it works.
    await page.fill('input[aria-label="New date for Sharpen the mower"]', '2031-01-15');
    await Promise.all([
      page.waitForURL(/\/farm\?moved=1$/),
      page.click('button[aria-label="Move Sharpen the mower to the date chosen"]'),
    ]);
    assert.match((await page.textContent('[role=status]'))!, /Moved/);
    assert.match((await read()).timestamp, /^2031-01-1[456]T/);

    // A date that is not one: 422, nothing changed.
    const csrf = await (async () => {
      await page.goto(`${server.url}/farm/log/maintenance/${task.id}`);
      return page.getAttribute('header form input[name=csrf_token]', 'value');
    })();
    const before = (await read()).timestamp;
    const bad = await page.request.post(`${server.url}/farm/log/maintenance/${task.id}/move`, {
      form: { csrf_token: csrf!, date: 'next tuesday', version: '' },
    });
    assert.equal(bad.status(), 422);
    assert.match(await bad.text(), /Choose a date/);
    assert.equal((await read()).timestamp, before);
    assert.deepEqual(errors, []);
  } finally {
    await context.close();
  }

  const viewer = await signedIn(VIEWER);
  try {
    await viewer.page.goto(`${server.url}/farm`);
    assert.equal(await viewer.page.$('input[type=date]'), null, 'a viewer is offered no move');
    const csrf = await viewer.page.getAttribute('header form input[name=csrf_token]', 'value');
    const before = (await read()).timestamp;
    const res = await viewer.page.request.post(`${server.url}/farm/log/maintenance/${task.id}/move`, {
      form: { csrf_token: csrf!, date: '2032-02-02', version: '' },
    });
    assert.equal(res.status(), 403);
    assert.equal((await read()).timestamp, before);
  } finally {
    await viewer.context.close();
  }
});
