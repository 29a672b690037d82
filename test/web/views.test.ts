// Issue 42 §5 and §6 in Debian's Chromium against a real server: an asset's timeline (order,
// grouping by day, where it was after each log), saved views (saved, listed on the dashboard,
// shared by a manager only, a worker never sees another's private view), a sensor's readings
// posted through its listener shown on its page (latest value, the range reduced to a table, the
// range's CSV equal to the API's answer, the chart drawn by the page's script), an inventory's
// history, and the readings' summary endpoint (bounded, min and max kept, 400 naming a bad
// parameter, access per role).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { type Browser, type BrowserContext, type Page } from 'playwright-core';
import { launchChromium } from '../support/browser.ts';
import { startTestServer, ADMIN, type TestServer } from '../support/server.ts';
import { passwordToken, request } from '../support/http.ts';
import { createUser } from '../../runtime/accounts/users.ts';
import { insertReadings } from '../../runtime/farm/data-streams.ts';

let server: TestServer;
let browser: Browser;
let token: string;
const WORKER = { name: 'wanda-worker', password: 'wanda-password-1' };
const MANAGER = { name: 'max-manager', password: 'max-password-1' };
const VIEWER = { name: 'vic-viewer', password: 'vic-password-1' };
const ACCOUNTS = { name: 'nora-accounts', password: 'nora-password-1' };

before(async () => {
  server = await startTestServer({ env: { TILTH_FARM_NAME: 'Willow Creek', TILTH_TIME_ZONE: 'UTC' } });
  token = await passwordToken(server.url, ADMIN.name, ADMIN.password);
  const knex = server.ctx.db.knex;
  await createUser(knex, { ...WORKER, roles: ['farm_worker'] });
  await createUser(knex, { ...MANAGER, roles: ['farm_manager'] });
  await createUser(knex, { ...VIEWER, roles: ['farm_viewer'] });
  await createUser(knex, { ...ACCOUNTS, roles: ['farm_account_admin'] });
  browser = await launchChromium();
});
after(async () => {
  await browser?.close();
  await server?.close();
});

async function signedIn(who: { name: string; password: string } = ADMIN): Promise<{
  context: BrowserContext;
  page: Page;
  errors: string[];
}> {
  const context = await browser.newContext();
  const page = await context.newPage();
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  page.on('console', (m) => m.type() === 'error' && errors.push(`console: ${m.text()}`));
  await page.goto(`${server.url}/farm/sign-in`);
  await page.fill('#username', who.name);
  await page.fill('#password', who.password);
  await page.click('button[type=submit]');
  await page.waitForURL(`${server.url}/farm`);
  return { context, page, errors };
}

async function post(path: string, data: unknown, bearer = token) {
  const res = await request(`${server.url}/api/${path}`, { method: 'POST', token: bearer, json: { data } });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body.data as { type: string; id: string; attributes: Record<string, any> };
}

const iso = (s: number) => new Date(s * 1000).toISOString().replace(/\.\d{3}Z$/, '+00:00');
const DAY1 = Date.UTC(2024, 4, 1, 0, 0, 0) / 1000;

test('an asset’s timeline: newest first, by day, with icons, quantities, movements and where it was after each log', async () => {
  const north = await post('asset/land', {
    type: 'asset--land',
    attributes: { name: 'North paddock', land_type: 'paddock' },
  });
  const south = await post('asset/land', {
    type: 'asset--land',
    attributes: { name: 'South paddock', land_type: 'paddock' },
  });
  const flock = await post('asset/equipment', { type: 'asset--equipment', attributes: { name: 'Ewe flock' } });
  const at = (day: number, hour: number) => DAY1 + day * 86_400 + hour * 3600;
  const ref = (r: { type: string; id: string }) => ({ type: r.type, id: r.id });
  const kg = await post('taxonomy_term/unit', { type: 'taxonomy_term--unit', attributes: { name: 'kg' } });
  const wool = await post('quantity/standard', {
    type: 'quantity--standard',
    attributes: { measure: 'weight', value: { decimal: '12.5' }, label: 'fleece' },
    relationships: { units: { data: ref(kg) } },
  });
  const log = (bundle: string, name: string, time: number, extra: Record<string, unknown> = {}, rel = {}) =>
    post(`log/${bundle}`, {
      type: `log--${bundle}`,
      attributes: { name, status: 'done', timestamp: iso(time), ...extra },
      relationships: { asset: { data: [ref(flock)] }, ...rel },
    });
  await log('observation', 'Counted the ewes', at(0, 9));
  await log('activity', 'Moved to north', at(1, 8), { is_movement: true }, { location: { data: [ref(north)] } });
  await log('harvest', 'Shorn', at(1, 15), {}, { quantity: { data: [ref(wool)] } });
  await log('activity', 'Moved to south', at(2, 7), { is_movement: true }, { location: { data: [ref(south)] } });

  const { context, page, errors } = await signedIn();
  try {
    await page.goto(`${server.url}/farm/asset/equipment/${flock.id}`);
    await page.click('a:text("Timeline")');
    await page.waitForURL(/\/timeline$/);
    assert.equal(await page.textContent('main h1'), 'Ewe flock: timeline');
    const days = await page.$$eval('section.day', (sections) =>
      sections.map((s) => ({
        day: s.querySelector('h2 time')!.getAttribute('datetime'),
        events: [...s.querySelectorAll('li.event')].map((li) => ({
          name: li.querySelector('p.event-head a')!.textContent,
          icon: li.querySelector('.log-icon')!.className,
          where: li.querySelector('p.where')!.textContent,
          movement: li.querySelector('p.movement')?.textContent ?? null,
          quantities: li.querySelector('ul.quantities')?.textContent ?? null,
        })),
      })),
    );
    assert.deepEqual(
      days.map((d) => [d.day, d.events.map((e) => e.name)]),
      [
        ['2024-05-03', ['Moved to south']],
        ['2024-05-02', ['Shorn', 'Moved to north']],
        ['2024-05-01', ['Counted the ewes']],
      ],
    );
    const events = days.flatMap((d) => d.events);
    assert.deepEqual(
      events.map((e) => e.where),
      [
        'Where it was: South paddock',
        'Where it was: North paddock',
        'Where it was: North paddock',
        'Where it was: no location',
      ],
    );
    assert.deepEqual(
      events.map((e) => e.icon),
      [
        'log-icon log-icon-activity',
        'log-icon log-icon-harvest',
        'log-icon log-icon-activity',
        'log-icon log-icon-observation',
      ],
    );
    assert.equal(events[0]!.movement, 'Moved to South paddock');
    assert.equal(events[1]!.quantities, 'weight 12.5 kg (fleece)');
    // The sprite is served, an image.
    const sprite = await page.evaluate(() => getComputedStyle(document.querySelector('.log-icon')!).backgroundImage);
    const spriteUrl = /url\("?([^")]+)"?\)/.exec(sprite)![1]!;
    const res = await fetch(spriteUrl);
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^image\/svg\+xml/);
    assert.deepEqual(errors, []);
  } finally {
    await context.close();
  }
});

test('saved views: saved with filters, columns and sort, listed on the dashboard, shared by a manager only', async () => {
  await post('log/activity', { type: 'log--activity', attributes: { name: 'Fix the gate', status: 'pending' } });
  await post('log/activity', { type: 'log--activity', attributes: { name: 'Paint the barn', status: 'done' } });
  const worker = await signedIn(WORKER);
  const manager = await signedIn(MANAGER);
  try {
    // The worker filters the list, picks two columns and a sort, and saves it.
    const { page } = worker;
    await page.goto(`${server.url}/farm/log/activity?status=pending&col=name&col=status&sort=-name`);
    assert.deepEqual(
      await page.$$eval('main table thead th', (ths) => ths.map((t) => t.textContent!.replace(/ [↑↓]$/, ''))),
      ['Select', 'Name', 'Status'], // the bulk actions' tick boxes, then the columns chosen
    );
    await page.click('summary:text("Save this view")');
    await page.fill('#view-name', 'Open <b>jobs</b>');
    await page.click('form.save-view button[type=submit]');
    await page.waitForSelector('p.notice:text("The view was saved.")');
    await page.goto(`${server.url}/farm`);
    const mine = page.locator('section[aria-labelledby=saved-views] a:text("Open <b>jobs</b>")');
    assert.equal(await mine.count(), 1, 'the name, as text');
    // No share button for a worker, and a share forged by hand is refused.
    assert.equal(
      await page.locator('section[aria-labelledby=saved-views] button:text("Share with everyone")').count(),
      0,
    );
    await mine.click();
    await page.waitForURL(/\/farm\/log\/activity\?/);
    const url = new URL(page.url());
    assert.equal(url.searchParams.get('status'), 'pending');
    assert.deepEqual(url.searchParams.getAll('col'), ['name', 'status']);
    assert.equal(url.searchParams.get('sort'), '-name');
    assert.deepEqual(await page.$$eval('main table tbody tr td:nth-child(2)', (tds) => tds.map((t) => t.textContent)), [
      'Fix the gate',
    ]);
    const csrf = await page.getAttribute('form.save-view input[name=csrf_token]', 'value');
    const viewId = Number(
      (await server.ctx.db.knex('tilth_saved_view').where('name', 'Open <b>jobs</b>').first('id')).id,
    );
    const forged = await page.request.post(`${server.url}/farm/views/${viewId}/share`, {
      form: { csrf_token: csrf!, shared: '1' },
      maxRedirects: 0,
    });
    assert.equal(forged.status(), 403);
    assert.equal((await server.ctx.db.knex('tilth_saved_view').where('id', viewId).first('shared')).shared ? 1 : 0, 0);

    // The manager saves two views and shares one.
    const m = manager.page;
    for (const name of ['Done work', 'Manager only']) {
      await m.goto(`${server.url}/farm/log?status=done`);
      await m.click('summary:text("Save this view")');
      await m.fill('#view-name', name);
      await m.click('form.save-view button[type=submit]');
      await m.waitForSelector('p.notice');
    }
    await m.goto(`${server.url}/farm`);
    await m.click('button[aria-label="Share the view Done work with everyone"]');
    await m.waitForURL(/\/farm#saved-views$/);
    assert.equal(
      await m.locator('section[aria-labelledby=saved-views] .badge:text("Shared with everyone")').count(),
      1,
    );

    // The worker sees the shared one, not the private one, and cannot delete the manager's.
    await page.goto(`${server.url}/farm`);
    const section = (await page.textContent('section[aria-labelledby=saved-views]'))!;
    assert.ok(section.includes('Done work') && section.includes('shared by max-manager'), section);
    assert.ok(!section.includes('Manager only'), section);
    const managers = Number(
      (await server.ctx.db.knex('tilth_saved_view').where('name', 'Manager only').first('id')).id,
    );
    const deleted = await page.request.post(`${server.url}/farm/views/${managers}/delete`, {
      form: { csrf_token: csrf! },
      maxRedirects: 0,
    });
    assert.equal(deleted.status(), 404);
    assert.ok(await server.ctx.db.knex('tilth_saved_view').where('id', managers).first('id'));
    // Same name twice: refused, nothing saved; a path that is not a list: refused.
    for (const [form, status] of [
      [{ name: 'Open <b>jobs</b>', path: '/farm/log/activity', query: '' }, 422],
      [{ name: 'Elsewhere', path: '//evil.example/farm', query: '' }, 422],
      [{ name: 'Elsewhere', path: '/farm/log/activity', query: '' }, 303],
    ] as const) {
      const res = await page.request.post(`${server.url}/farm/views`, {
        form: { csrf_token: csrf!, ...form },
        maxRedirects: 0,
      });
      assert.equal(res.status(), status, JSON.stringify(form));
    }
    assert.equal(Number((await server.ctx.db.knex('tilth_saved_view').count({ n: '*' }))[0]!.n), 4);
    assert.deepEqual([...worker.errors, ...manager.errors], []);
  } finally {
    await worker.context.close();
    await manager.context.close();
  }
});

test('a sensor’s readings posted through its listener: latest value, the range as a table and as CSV equal to the API’s', async () => {
  const sensor = await post('asset/sensor', { type: 'asset--sensor', attributes: { name: 'Greenhouse probe' } });
  const read = await request(`${server.url}/api/asset/sensor/${sensor.id}`, { token });
  const { public_key: publicKey, private_key: privateKey } = read.body.data.attributes;
  const base = Date.UTC(2024, 5, 1) / 1000;
  const points = Array.from({ length: 240 }, (_, i) => ({
    timestamp: base + i * 600,
    temperature: 15 + 10 * Math.sin(i / 20) + (i === 100 ? 40 : 0),
  }));
  const posted = await fetch(`${server.url}/farm/sensor/listener/${publicKey}?private_key=${privateKey}`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify(points),
  });
  assert.equal(posted.status, 201);
  const after = await request(`${server.url}/api/asset/sensor/${sensor.id}`, { token });
  const streamId = after.body.data.relationships.data_stream.data[0].id as string;

  const { context, page, errors } = await signedIn(VIEWER);
  try {
    await page.goto(`${server.url}/farm/asset/sensor/${sensor.id}`);
    const latest = points[points.length - 1]!;
    const block = page.locator('section[aria-labelledby=readings] div.stream').first();
    assert.match((await block.textContent())!, /Latest: /);
    assert.equal(
      await block.locator('time').first().getAttribute('datetime'),
      new Date(latest.timestamp * 1000).toISOString(),
    );
    // The day up to the latest reading, reduced to at most 24 rows; the spike is the highest.
    const rows = await block
      .locator('table[id$=-table] tbody tr')
      .evaluateAll((trs) =>
        trs.map((tr) => ({ min: Number(tr.getAttribute('data-min')), max: Number(tr.getAttribute('data-max')) })),
      );
    assert.ok(rows.length > 0 && rows.length <= 24, `${rows.length} rows`);
    const inDay = points.filter((p) => p.timestamp > latest.timestamp - 86_400);
    assert.equal(Math.max(...rows.map((r) => r.max)), Math.max(...inDay.map((p) => p.temperature)));
    assert.equal(Math.min(...rows.map((r) => r.min)), Math.min(...inDay.map((p) => p.temperature)));
    // The CSV of the range shown is what the API answers for that range.
    const href = (await block.locator('a[download]').getAttribute('href'))!;
    const csv = await page.request.get(`${server.url}${href}`);
    assert.equal(csv.status(), 200);
    assert.match(csv.headers()['content-type']!, /^text\/csv/);
    const range = new URL(href, server.url).searchParams;
    const api = await request(
      `${server.url}/api/data_stream/${streamId}/data?start=${range.get('start')}&end=${range.get('end')}`,
      { token },
    );
    assert.equal(api.status, 200);
    const lines = (await csv.text()).trim().split('\r\n');
    assert.equal(lines[0], 'timestamp,value');
    assert.deepEqual(
      lines.slice(1).map((l) => l.split(',')),
      (api.body as Array<Record<string, string | number>>).map((r) => [String(r.timestamp), String(r.temperature)]),
    );
    assert.equal(lines.length - 1, 144, 'the day up to the latest reading: 24 hours of readings');
    // The chart: drawn by the page's script from the summary, one bucket per pixel at most.
    const chart = page.locator('.readings-chart[data-drawn]').first();
    await chart.waitFor();
    const drawnChart = await chart.evaluate((el) => {
      const canvas = el.querySelector('canvas')!;
      const pixels = canvas.getContext('2d')!.getImageData(0, 0, canvas.width, canvas.height).data;
      let painted = 0;
      for (let i = 3; i < pixels.length; i += 4) if (pixels[i]! > 0) painted++;
      return { points: Number((el as HTMLElement).dataset.points), painted, width: canvas.clientWidth };
    });
    assert.ok(drawnChart.painted > 500, `pixels painted: ${drawnChart.painted}`);
    assert.ok(drawnChart.points > 24 && drawnChart.points <= 144, `points: ${drawnChart.points}`);
    // Zoom: a drag across the chart asks for that part again, at the same width.
    await chart.scrollIntoViewIfNeeded();
    const over = (await chart.locator('.u-over').boundingBox())!;
    const [zoomed] = await Promise.all([
      page.waitForResponse((r) => r.url().includes('/readings?') && r.request().method() === 'GET'),
      (async () => {
        await page.mouse.move(over.x + over.width * 0.4, over.y + over.height / 2);
        await page.mouse.down();
        await page.mouse.move(over.x + over.width * 0.6, over.y + over.height / 2, { steps: 5 });
        await page.mouse.up();
      })(),
    ]);
    const zoomRange = new URL(zoomed.url()).searchParams;
    const wholeRange = new URL(href, server.url).searchParams;
    assert.ok(Number(zoomRange.get('start')) > Number(wholeRange.get('start')), 'a narrower range');
    assert.ok(Number(zoomRange.get('end')) < Number(wholeRange.get('end')), 'a narrower range');
    assert.equal(zoomed.status(), 200);
    // A week: the same readings, fewer rows of them per span.
    await page.selectOption('#range', 'week');
    await page.click('form.range button[type=submit]');
    await page.waitForURL(/range=week/);
    assert.ok((await page.locator('section[aria-labelledby=readings] table[id$=-table] tbody tr').count()) <= 24);
    // The data stream's own page shows the same block.
    await page.goto(`${server.url}/farm/data_stream/basic/${streamId}`);
    assert.equal(await page.locator('section[aria-labelledby=readings] a[download]').count(), 1);
    assert.deepEqual(errors, []);
  } finally {
    await context.close();
  }
});

test('an asset’s inventory history: each adjusting log’s step, the last the inventory the API computes', async () => {
  const seed = await post('asset/equipment', { type: 'asset--equipment', attributes: { name: 'Fuel tank' } });
  const ref = { type: seed.type, id: seed.id };
  const steps: Array<[string, string, number]> = [
    ['reset', '100', 1],
    ['decrement', '30', 2],
    ['increment', '5.5', 3],
  ];
  for (const [kind, value, day] of steps) {
    const q = await post('quantity/standard', {
      type: 'quantity--standard',
      attributes: { measure: 'count', value: { decimal: value }, inventory_adjustment: kind },
      relationships: { inventory_asset: { data: ref } },
    });
    await post('log/activity', {
      type: 'log--activity',
      attributes: { name: `${kind} ${value}`, status: 'done', timestamp: iso(DAY1 + day * 86_400) },
      relationships: { quantity: { data: [{ type: q.type, id: q.id }] } },
    });
  }
  const api = await request(`${server.url}/api/asset/equipment/${seed.id}`, { token });
  const inventory = api.body.data.attributes.inventory as Array<{ value: string }>;
  const { context, page } = await signedIn(VIEWER);
  try {
    await page.goto(`${server.url}/farm/asset/equipment/${seed.id}`);
    const rows = await page.$$eval('section[aria-labelledby=inventory] table[id$=-table] tbody tr', (trs) =>
      trs.map((tr) => [...tr.querySelectorAll('td')].slice(1).map((td) => td.textContent)),
    );
    assert.deepEqual(rows, [
      ['+5.5', '75.5'],
      ['−30', '70'],
      ['reset to 100', '100'],
    ]);
    assert.equal(rows[0]![1], inventory[0]!.value);
    // Drawn as a step chart: a point per step.
    const chart = page.locator('.inventory-chart[data-drawn]');
    await chart.waitFor();
    assert.equal(await chart.getAttribute('data-points'), '3');
    assert.equal(await chart.locator('canvas').count(), 1);
  } finally {
    await context.close();
  }
});

test('the readings summary: at most the buckets asked whatever the range, min and max kept, 400 naming a bad parameter, access per role', async () => {
  const stream = await post('data_stream/basic', { type: 'data_stream--basic', attributes: { name: 'moisture' } });
  const row = await server.ctx.db.knex('data_stream').where('uuid', stream.id).first('id', 'private_key');
  const start = 1_600_000_000;
  const readings = Array.from({ length: 20_000 }, (_, i) => ({
    streamId: Number(row.id),
    timestamp: start + i * 30,
    value: i === 12_345 ? 999.5 : i === 777 ? -42.25 : (i % 100) / 10,
  }));
  await server.ctx.db.knex.transaction((trx) => insertReadings(trx, readings));
  const end = start + 20_000 * 30;
  const summary = (q: string, bearer: string | undefined = token) =>
    request(`${server.url}/api/data_stream/${stream.id}/data/summary?${q}`, { token: bearer });
  for (const buckets of [1, 7, 100, 4000]) {
    const res = await summary(`start=${start}&end=${end}&buckets=${buckets}`);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const got = res.body.buckets as Array<{ min: number; max: number; count: number; first: number; last: number }>;
    assert.ok(got.length <= buckets, `${got.length} ≤ ${buckets}`);
    assert.equal(
      got.reduce((n, b) => n + b.count, 0),
      20_000,
    );
    assert.equal(Math.max(...got.map((b) => b.max)), 999.5);
    assert.equal(Math.min(...got.map((b) => b.min)), -42.25);
    assert.ok(
      got.every((b, i) => i === 0 || b.first > got[i - 1]!.last),
      'in time order, not overlapping',
    );
  }
  // Each bucket is exactly its readings, with a range starting and ending inside hours (a long
  // range reads whole hours from their sums, the partial first and last hours reading by reading).
  for (const [from, to, buckets] of [
    [start + 1234, end - 777, 7],
    [start + 1234, end - 777, 90],
    [start + 7200 - 1, start + 7200 * 3, 2],
    [start + 100, start + 3000, 3],
  ] as const) {
    const res = await summary(`start=${from}&end=${to}&buckets=${buckets}`);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const got = res.body.buckets as Array<{ min: number; max: number; count: number; first: number; last: number }>;
    const inRange = readings.filter((r) => r.timestamp >= from && r.timestamp <= to);
    assert.equal(
      got.reduce((n, b) => n + b.count, 0),
      inRange.length,
      `${from}..${to}: every reading in range counted once`,
    );
    for (const b of got) {
      const mine = inRange.filter((r) => r.timestamp >= b.first && r.timestamp <= b.last);
      assert.deepEqual(
        [b.count, b.min, b.max, b.first, b.last],
        [
          mine.length,
          Math.min(...mine.map((r) => r.value)),
          Math.max(...mine.map((r) => r.value)),
          mine[0]!.timestamp,
          mine[mine.length - 1]!.timestamp,
        ],
        `${from}..${to} in ${buckets}: the bucket from ${b.first}`,
      );
    }
  }
  // A day asked in 24 spans, starting inside an hour (the pages' table): 24 spans of an hour, not
  // fewer wider ones.
  const day = await summary(`start=${start + 1234}&end=${start + 1234 + 86_399}&buckets=24`);
  assert.equal(day.body.buckets.length, 24, JSON.stringify(day.body).slice(0, 300));
  // A range far wider than the readings: still bounded.
  const wide = await summary(`start=0&end=4000000000&buckets=50`);
  assert.ok(wide.body.buckets.length <= 50);
  for (const [q, parameter] of [
    [`start=abc&end=${end}`, 'start'],
    [`start=${end}&end=${start}`, 'start'],
    [`start=${start}&end=1e9`, 'end'],
    [`buckets=0`, 'buckets'],
    [`buckets=4001`, 'buckets'],
  ] as const) {
    const res = await summary(q);
    assert.equal(res.status, 400, q);
    assert.equal(res.body.errors[0].source.parameter, parameter, q);
  }
  // Access: a viewer's token, the private key; not a stranger, nor an account administrator.
  assert.equal(
    (await summary(`start=${start}&end=${end}`, await passwordToken(server.url, VIEWER.name, VIEWER.password))).status,
    200,
  );
  assert.equal((await summary(`start=${start}&end=${end}&private_key=${row.private_key}`, '')).status, 200);
  assert.equal((await summary(`start=${start}&end=${end}`, '')).status, 403);
  assert.equal(
    (await summary(`start=${start}&end=${end}`, await passwordToken(server.url, ACCOUNTS.name, ACCOUNTS.password)))
      .status,
    403,
  );
  // The pages' own summary: the viewer's session, not the account administrator's.
  const viewer = await signedIn(VIEWER);
  const accounts = await signedIn(ACCOUNTS);
  try {
    const path = `/farm/data_stream/basic/${stream.id}/readings?start=${start}&end=${end}&buckets=10`;
    const seen = await viewer.page.request.get(`${server.url}${path}`);
    assert.equal(seen.status(), 200);
    assert.ok(((await seen.json()) as { buckets: unknown[] }).buckets.length <= 10);
    const bad = await viewer.page.request.get(
      `${server.url}/farm/data_stream/basic/${stream.id}/readings?start=${start}&end=x`,
    );
    assert.equal(bad.status(), 400);
    assert.equal(((await bad.json()) as any).errors[0].source.parameter, 'end');
    assert.equal((await accounts.page.request.get(`${server.url}${path}`)).status(), 403);
    assert.equal(
      (await accounts.page.request.get(`${server.url}${path.replace('readings?', 'readings.csv?')}`)).status(),
      403,
    );
  } finally {
    await viewer.context.close();
    await accounts.context.close();
  }
});
