// A farmer's first day in the web interface (issue 38, Tests), in Debian's Chromium against a real
// server: sign in; add a crop to the vocabulary, a field (a land asset) and a planting (a plant
// asset); record the seeding and a harvest; mark a late task done and move another to a new date;
// edit a log in two tabs and meet the conflict page; sign out. Each step is read back through the
// API: the record is there, exactly as entered.
//
// With TILTH_SCREENSHOTS=<folder> (e.g. docs/screenshots) the test also saves screenshots of the
// dashboard, a list, a record and a form, at 390 px and 1,280 px wide (README "The web interface").
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { type Browser, type Page } from 'playwright-core';
import { launchChromium } from '../support/browser.ts';
import { startTestServer, ADMIN, type TestServer } from '../support/server.ts';
import { passwordToken, request } from '../support/http.ts';

let server: TestServer;
let browser: Browser;
let token: string;
const SCREENSHOTS = process.env.TILTH_SCREENSHOTS;
const WIDTHS = [390, 1280] as const;

before(async () => {
  server = await startTestServer({ env: { TILTH_FARM_NAME: 'Willow Creek' } });
  token = await passwordToken(server.url, ADMIN.name, ADMIN.password);
  browser = await launchChromium();
  if (SCREENSHOTS) mkdirSync(SCREENSHOTS, { recursive: true });
});
after(async () => {
  await browser?.close();
  await server?.close();
});

const api = async (path: string) => {
  const res = await request(`${server.url}/api/${path}`, { token });
  assert.equal(res.status, 200, `${path}: ${JSON.stringify(res.body)}`);
  return res.body;
};
const iso = (s: number) => new Date(s * 1000).toISOString().replace(/\.\d{3}Z$/, '+00:00');
/** An instant as the farm's wall clock (the server's time zone: the test's own), as a datetime-local input holds it. */
const wallClock = (at: string) =>
  new Intl.DateTimeFormat('en-CA', {
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
    hour: '2-digit',
    minute: '2-digit',
    hourCycle: 'h23',
  })
    .format(new Date(at))
    .replace(', ', 'T');
const ids = (data: Array<{ id: string }> | null) => (data ?? []).map((r) => r.id);

/** The page at each width, saved as <folder>/<name>-<width>.png, when TILTH_SCREENSHOTS asks for it. */
async function screenshot(page: Page, name: string): Promise<void> {
  if (!SCREENSHOTS) return;
  const size = page.viewportSize()!;
  for (const width of WIDTHS) {
    await page.setViewportSize({ width, height: width < 600 ? 844 : 800 });
    await page.screenshot({ path: join(SCREENSHOTS, `${name}-${width}.png`) });
  }
  await page.setViewportSize(size);
}

/** Fill and save the form shown; the record's page follows. Returns the new record's UUID. */
/** Add a standard quantity row to a log's form and fill it (row n, 0-based). */
async function addQuantity(page: Page, n: number, q: { value: string; units: string; measure: string }): Promise<void> {
  await page.selectOption('#field-quantity-add', 'standard');
  await page.click('input[name="_action:add:quantity"]');
  await page.fill(`#field-quantity-${n}-value`, q.value);
  await page.fill(`#field-quantity-${n}-units`, q.units);
  await page.selectOption(`#field-quantity-${n}-measure`, q.measure);
}

async function save(page: Page): Promise<string> {
  await Promise.all([
    page.waitForURL(/\/[0-9a-f-]{36}\?saved=(created|saved)$/),
    page.click('form.record button[type=submit]'),
  ]);
  assert.match((await page.textContent('[role=status]'))!, /Created|Saved/);
  return new URL(page.url()).pathname.split('/').pop()!;
}

test('a farmer’s first day: every step in the browser, each read back through the API as entered', async () => {
  const context = await browser.newContext({ viewport: { width: 390, height: 844 } });
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
  const now = Math.floor(Date.now() / 1000);

  // Two tasks were left from before: one to finish, one to move.
  const task = async (name: string, at: number) => {
    const res = await request(`${server.url}/api/log/activity`, {
      method: 'POST',
      token,
      json: { data: { type: 'log--activity', attributes: { name, status: 'pending', timestamp: iso(at) } } },
    });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    return res.body.data.id as string;
  };
  // The units the quantities are counted in, as the vocabulary holds them.
  const units: Record<string, string> = {};
  for (const name of ['seeds', 'kg', 'crates']) {
    const res = await request(`${server.url}/api/taxonomy_term/unit`, {
      method: 'POST',
      token,
      json: { data: { type: 'taxonomy_term--unit', attributes: { name } } },
    });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    units[name] = res.body.data.id;
  }
  const fence = await task('Mend the north fence', now - 2 * 86_400);
  const compost = await task('Turn the compost', now - 86_400);
  await task('Order seed potatoes', now + 3 * 86_400);

  try {
    // 1. Sign in.
    await page.goto(`${server.url}/farm`);
    assert.equal(new URL(page.url()).pathname, '/farm/sign-in');
    await page.fill('#username', ADMIN.name);
    await page.fill('#password', ADMIN.password);
    await Promise.all([page.waitForURL(`${server.url}/farm`), page.click('button[type=submit]')]);
    assert.equal(await page.textContent('h1'), 'Willow Creek');
    assert.match(
      (await page.textContent('section[aria-labelledby=late]'))!,
      /Mend the north fence[\s\S]*Turn the compost/,
    );

    // 2. A crop in the vocabulary, then a field and a planting of it.
    await page.goto(`${server.url}/farm/taxonomy_term/plant_type/new`);
    await page.fill('#field-name', 'Tomato');
    const tomato = await save(page);
    assert.equal((await api(`taxonomy_term/plant_type/${tomato}`)).data.attributes.name, 'Tomato');

    await page.goto(`${server.url}/farm/asset/land`);
    await page.click('text=Add Land');
    await page.fill('#field-name', 'North field');
    await page.selectOption('#field-land_type', 'field');
    await page.fill('#field-intrinsic_geometry', 'POINT (-72.5 42.3)');
    const field = await save(page);
    const land = (await api(`asset/land/${field}`)).data.attributes;
    assert.equal(land.name, 'North field');
    assert.equal(land.land_type, 'field');
    assert.equal(land.status, 'active');
    assert.equal(land.is_location, true, 'land is a location (its bundle’s default)');
    assert.match(land.intrinsic_geometry.value, /^POINT \(-72\.5 42\.3\)$/);

    await page.goto(`${server.url}/farm/asset/plant/new`);
    await screenshot(page, 'form');
    await page.fill('#field-name', 'Tomatoes, bed 1');
    await page.fill('#field-plant_type', 'Tomato');
    const planting = await save(page);
    const plant = (await api(`asset/plant/${planting}`)).data;
    assert.equal(plant.attributes.name, 'Tomatoes, bed 1');
    assert.deepEqual(ids(plant.relationships.plant_type.data), [tomato]);

    // 3. The seeding: the planting sown in the field (a movement: the planting is there now).
    await page.goto(`${server.url}/farm/log/seeding/new`);
    await page.fill('#field-name', 'Sow tomatoes');
    await page.fill('#field-timestamp', '2026-04-02T09:15');
    await page.check('#field-status-1');
    await page.fill('#field-asset', 'Tomatoes, bed 1');
    await page.fill('#field-location', 'North field');
    await page.fill('#field-lot_number', 'TOM-2026-A');
    // A quantity on the seeding: its kind chosen, then a row added (the form comes back with it).
    await addQuantity(page, 0, { value: '120', units: 'seeds', measure: 'count' });
    const sown = await save(page);
    const seeding = (await api(`log/seeding/${sown}`)).data;
    assert.equal(seeding.attributes.name, 'Sow tomatoes');
    assert.equal(seeding.attributes.status, 'done');
    assert.equal(seeding.attributes.lot_number, 'TOM-2026-A');
    assert.equal(wallClock(seeding.attributes.timestamp), '2026-04-02T09:15');
    assert.equal(seeding.attributes.is_movement, true, 'a seeding moves its planting (its bundle’s default)');
    assert.deepEqual(ids(seeding.relationships.asset.data), [planting]);
    assert.deepEqual(ids(seeding.relationships.location.data), [field]);
    assert.deepEqual(ids((await api(`asset/plant/${planting}`)).data.relationships.location.data), [field]);
    const sownQuantities = (await api(`log/seeding/${sown}?include=quantity`)).included.filter((r: any) =>
      r.type.startsWith('quantity--'),
    );
    assert.deepEqual(
      sownQuantities.map((q: any) => [
        Number(q.attributes.value.decimal),
        q.attributes.measure,
        q.relationships.units.data.id,
      ]),
      [[120, 'count', units.seeds]],
    );
    await screenshot(page, 'record');

    // 4. A harvest from the planting.
    await page.goto(`${server.url}/farm/log/harvest/new`);
    await page.fill('#field-name', 'First tomatoes');
    await page.fill('#field-timestamp', '2026-07-20T17:00');
    await page.check('#field-status-1');
    await page.fill('#field-asset', 'Tomatoes, bed 1');
    await addQuantity(page, 0, { value: '12.5', units: 'kg', measure: 'weight' });
    await addQuantity(page, 1, { value: '3', units: 'crates', measure: 'count' });
    const picked = await save(page);
    const harvest = (await api(`log/harvest/${picked}`)).data;
    assert.equal(harvest.attributes.name, 'First tomatoes');
    assert.equal(harvest.attributes.status, 'done');
    assert.equal(wallClock(harvest.attributes.timestamp), '2026-07-20T17:00');
    assert.deepEqual(ids(harvest.relationships.asset.data), [planting]);
    const picks = (await api(`log/harvest/${picked}?include=quantity`)).included.filter((r: any) =>
      r.type.startsWith('quantity--'),
    );
    assert.deepEqual(
      picks
        .map((q: any) => [Number(q.attributes.value.decimal), q.attributes.measure, q.relationships.units.data.id])
        .sort(),
      [
        [12.5, 'weight', units.kg],
        [3, 'count', units.crates],
      ].sort(),
    );
    // The logs of the day in the all-logs list, newest first, with their types and the planting.
    await page.goto(`${server.url}/farm/log?asset=Tomatoes`);
    const rows = await page.$$eval('tbody tr', (trs) => trs.map((tr) => tr.textContent!));
    assert.equal(rows.length, 2);
    assert.match(rows[0]!, /First tomatoes[\s\S]*Harvest[\s\S]*Tomatoes, bed 1/);
    assert.match(rows[1]!, /Sow tomatoes[\s\S]*Seeding[\s\S]*North field/);
    await page.goto(`${server.url}/farm/log`);
    await screenshot(page, 'list');

    // 5. The dashboard: a late task marked done, another moved to a date next week.
    await page.goto(`${server.url}/farm`);
    await screenshot(page, 'dashboard');
    await Promise.all([
      page.waitForURL(`${server.url}/farm`),
      page.click('button[aria-label="Mark Mend the north fence done"]'),
    ]);
    assert.equal((await api(`log/activity/${fence}`)).data.attributes.status, 'done');
    assert.doesNotMatch((await page.textContent('section[aria-labelledby=late]'))!, /Mend the north fence/);
    const before = (await api(`log/activity/${compost}`)).data.attributes.timestamp;
    const day = wallClock(iso(now + 5 * 86_400)).slice(0, 10);
    await page.fill('input[aria-label="New date for Turn the compost"]', day);
    await Promise.all([
      page.waitForURL(/\/farm\?moved=1$/),
      page.click('button[aria-label="Move Turn the compost to the date chosen"]'),
    ]);
    const moved = (await api(`log/activity/${compost}`)).data.attributes;
    assert.equal(moved.status, 'pending');
    assert.equal(
      wallClock(moved.timestamp),
      `${day}${wallClock(before).slice(10)}`,
      'the day chosen, at the same time',
    );
    assert.match((await page.textContent('section[aria-labelledby=upcoming]'))!, /Turn the compost/);
    assert.doesNotMatch((await page.textContent('section[aria-labelledby=late]'))!, /Turn the compost/);

    // 6. The harvest edited in two tabs: the second save meets the conflict page, and nothing of the first is lost.
    const other = await context.newPage();
    await page.goto(`${server.url}/farm/log/harvest/${picked}/edit`);
    await other.goto(`${server.url}/farm/log/harvest/${picked}/edit`);
    await page.fill('#field-name', 'First tomatoes of the year');
    await save(page);
    await other.fill('#field-lot_number', 'TOM-H1');
    const [answer] = await Promise.all([
      other.waitForResponse((r) => r.request().method() === 'POST'),
      other.click('form.record button[type=submit]'),
    ]);
    assert.equal(answer.status(), 409);
    assert.match(
      (await other.textContent('section[aria-labelledby=conflict]'))!,
      new RegExp(`Changed by ${ADMIN.name}`),
    );
    assert.equal((await api(`log/harvest/${picked}`)).data.attributes.name, 'First tomatoes of the year');
    await Promise.all([other.waitForURL(/\?saved=saved$/), other.click('button:text("Apply mine to theirs")')]);
    const both = (await api(`log/harvest/${picked}`)).data.attributes;
    assert.equal(both.name, 'First tomatoes of the year', 'theirs kept');
    assert.equal(both.lot_number, 'TOM-H1', 'mine applied');
    await other.close();

    // 7. An image of the planting, uploaded from its edit page.
    const PNG = Buffer.from(
      'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==',
      'base64',
    );
    await page.goto(`${server.url}/farm/asset/plant/${planting}/edit`);
    await page.setInputFiles('#field-image-upload', { name: 'tomatoes.png', mimeType: 'image/png', buffer: PNG });
    await Promise.all([
      page.waitForURL(/\?saved=uploaded$/),
      page.click('form.upload[action$="/files/image"] button[type=submit]'),
    ]);
    const image = (await api(`asset/plant/${planting}?include=image`)).included.find(
      (r: any) => r.type === 'file--file',
    );
    assert.equal(image.attributes.filename, 'tomatoes.png');
    const bytes = await fetch(new URL(image.attributes.uri.url, server.url), {
      headers: { authorization: `Bearer ${token}` },
    });
    assert.deepEqual(Buffer.from(await bytes.arrayBuffer()), PNG, 'the bytes as uploaded');

    // 8. Sign out: the dashboard asks for a sign-in again.
    await Promise.all([page.waitForURL(/\/farm\/sign-in/), page.click('header form button[type=submit]')]);
    await page.goto(`${server.url}/farm`);
    assert.equal(new URL(page.url()).pathname, '/farm/sign-in');
    assert.deepEqual(errors, []);
  } finally {
    await context.close();
  }
});
