// The create and edit forms' widgets (issue 38 screen 5) in Debian's Chromium against a real
// server: a log's quantities edited inline and saved with it in one transaction (a quantity's 422
// beside its field, nothing stored), fields of several values in rows, references offered from
// their target bundles only (with Find for a long list, and a new unit term made by its name),
// and a file uploaded from the edit page. Each step is read back through the API.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { type Browser, type Page } from 'playwright-core';
import { launchChromium } from '../support/browser.ts';
import { startTestServer, ADMIN, type TestServer } from '../support/server.ts';
import { passwordToken, request } from '../support/http.ts';

let server: TestServer;
let browser: Browser;
let token: string;

/** A 1×1 PNG. */
const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==',
  'base64',
);

before(async () => {
  server = await startTestServer();
  token = await passwordToken(server.url, ADMIN.name, ADMIN.password);
  browser = await launchChromium();
});
after(async () => {
  await browser?.close();
  await server?.close();
});

async function signedInPage(): Promise<Page> {
  const page = await (await browser.newContext()).newPage();
  await page.goto(`${server.url}/farm`);
  await page.fill('#username', ADMIN.name);
  await page.fill('#password', ADMIN.password);
  await page.click('button[type=submit]');
  await page.waitForURL(`${server.url}/farm`);
  return page;
}

async function create(type: string, attributes: Record<string, unknown>): Promise<{ id: string }> {
  const [entityType, bundle] = type.split('--');
  const res = await request(`${server.url}/api/${entityType}/${bundle}`, {
    method: 'POST',
    token,
    json: { data: { type, attributes } },
  });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body.data;
}

const idOf = (page: Page) => new URL(page.url()).pathname.split('/').pop()!;

test('a harvest with two quantities entered inline, a new unit made by its name; then one quantity edited and one removed', async () => {
  const kg = await create('taxonomy_term--unit', { name: 'kg' });
  await create('asset--land', { name: 'North field', land_type: 'field' });
  const page = await signedInPage();
  await page.goto(`${server.url}/farm/log/harvest/new`);
  await page.fill('#field-name', 'Pick the beans');
  await page.fill('#field-asset', 'North field');
  // Add a quantity: the form comes back with a row of the chosen kind, what was typed kept.
  await page.selectOption('#field-quantity-add', 'standard');
  await page.click('input[name="_action:add:quantity"]');
  assert.equal(await page.inputValue('#field-name'), 'Pick the beans', 'typed values kept across Add');
  const units = await page.$$eval('#field-quantity-0-units-options option', (os) =>
    os.map((o) => (o as HTMLOptionElement).value),
  );
  assert.deepEqual(units, [`kg [${kg.id}]`], 'the unit input offers the unit vocabulary only');
  await page.fill('#field-quantity-0-value', '2.5');
  await page.fill('#field-quantity-0-units', units[0]!);
  await page.selectOption('#field-quantity-0-measure', 'weight');
  await page.fill('#field-quantity-0-label', 'Picked');
  await page.click('input[name="_action:add:quantity"]');
  assert.equal(await page.inputValue('#field-quantity-0-value'), '2.5', 'the first row kept as typed');
  await page.fill('#field-quantity-1-value', '12');
  await page.fill('#field-quantity-1-units', 'bunches');
  await page.fill('#field-quantity-1-label', 'Bunched');
  await page.click('form.record button.primary');
  await page.waitForURL(/\/farm\/log\/harvest\/[0-9a-f-]{36}\?saved=created/);
  const id = idOf(page);

  const read = async () => {
    const res = await request(`${server.url}/api/log/harvest/${id}?include=quantity,quantity.units,asset`, { token });
    assert.equal(res.status, 200);
    const included = new Map<string, any>((res.body.included ?? []).map((r: any) => [`${r.type}:${r.id}`, r]));
    const quantities = res.body.data.relationships.quantity.data.map((q: any) => {
      const r = included.get(`${q.type}:${q.id}`);
      const unit = r.relationships.units.data;
      return {
        id: q.id,
        value: r.attributes.value?.decimal,
        label: r.attributes.label,
        measure: r.attributes.measure,
        unit: unit ? included.get(`${unit.type}:${unit.id}`)?.attributes.name : null,
      };
    });
    return { log: res.body.data, quantities, included };
  };
  const first = await read();
  assert.deepEqual(
    first.quantities.map(({ id: _id, ...q }: any) => q),
    [
      { value: '2.5', label: 'Picked', measure: 'weight', unit: 'kg' },
      { value: '12', label: 'Bunched', measure: null, unit: 'bunches' },
    ],
  );
  assert.deepEqual(
    first.log.relationships.asset.data.map((a: any) => first.included.get(`${a.type}:${a.id}`)?.attributes.name),
    ['North field'],
  );
  const bunches = await request(`${server.url}/api/taxonomy_term/unit?filter[name]=bunches`, { token });
  assert.equal(bunches.body.data.length, 1, 'the unit typed by a new name was made, once');

  // Edit: the first quantity changed, the second removed (and deleted: no other log names it).
  await page.goto(`${server.url}/farm/log/harvest/${id}/edit`);
  assert.equal(await page.inputValue('#field-quantity-1-label'), 'Bunched');
  await page.fill('#field-quantity-0-value', '3');
  await page.click('input[name="_action:remove:quantity:1"]');
  assert.equal(await page.inputValue('#field-quantity-0-value'), '3', 'typed values kept across Remove');
  assert.equal(await page.$('#field-quantity-1-value'), null, 'the removed row is gone');
  await page.click('form.record button.primary');
  await page.waitForURL(/\?saved=saved/);
  const second = await read();
  assert.deepEqual(
    second.quantities.map((q: any) => [q.id, q.value, q.unit]),
    [[first.quantities[0].id, '3', 'kg']],
    'the same quantity, updated',
  );
  const gone = await request(`${server.url}/api/quantity/standard/${first.quantities[1].id}`, { token });
  assert.equal(gone.status, 404, 'the removed quantity is deleted');

  // An edit of the log alone leaves its quantity as it is: no new revision of it.
  const revision = async () =>
    (await request(`${server.url}/api/quantity/standard/${first.quantities[0].id}`, { token })).body.data.attributes
      .drupal_internal__revision_id;
  const before = await revision();
  assert.equal(typeof before, 'number');
  await page.goto(`${server.url}/farm/log/harvest/${id}/edit`);
  await page.fill('#field-name', 'Pick the beans again');
  await page.click('form.record button.primary');
  await page.waitForURL(/\?saved=saved/);
  const third = await read();
  assert.equal(third.log.attributes.name, 'Pick the beans again');
  assert.deepEqual(
    third.quantities.map((q: any) => [q.id, q.value]),
    [[first.quantities[0].id, '3']],
  );
  assert.equal(await revision(), before, 'the unchanged quantity got no new revision');
});

test('a quantity the API refuses shows its message beside its field, everything typed kept, and nothing is saved', async () => {
  const page = await signedInPage();
  await page.goto(`${server.url}/farm/log/harvest/new`);
  await page.fill('#field-name', 'Weigh the squash');
  await page.selectOption('#field-quantity-add', 'standard');
  await page.click('input[name="_action:add:quantity"]');
  await page.fill('#field-quantity-0-value', 'lots');
  await page.fill('#field-quantity-0-label', 'Broken');
  const response = await Promise.all([
    page.waitForResponse((r) => r.request().method() === 'POST'),
    page.click('form.record button.primary'),
  ]);
  assert.equal(response[0].status(), 422);
  assert.match((await page.textContent('#field-quantity-0-value-error'))!, /\S/);
  assert.match(
    (await page.getAttribute('#field-quantity-0-value', 'aria-describedby'))!,
    /\bfield-quantity-0-value-error\b/,
    'the message is the input’s description',
  );
  assert.equal(await page.inputValue('#field-quantity-0-value'), 'lots');
  assert.equal(await page.inputValue('#field-quantity-0-label'), 'Broken');
  assert.equal(await page.inputValue('#field-name'), 'Weigh the squash');
  const logs = await request(`${server.url}/api/log/harvest?filter[name]=Weigh the squash`, { token });
  assert.equal(logs.body.data.length, 0, 'no log');
  const quantities = await request(`${server.url}/api/quantity/standard?filter[label]=Broken`, { token });
  assert.equal(quantities.body.data.length, 0, 'no quantity');
});

test('several values in rows: Add another and Remove keep what was typed; a reference offers its target bundles only, with Find for a long list', async () => {
  await create('asset--equipment', { name: 'Tractor' });
  await create('asset--equipment', { name: 'Mower' });
  for (let i = 1; i <= 52; i++)
    await create('asset--land', { name: `Bed ${String(i).padStart(2, '0')}`, land_type: 'bed' });
  const page = await signedInPage();
  await page.goto(`${server.url}/farm/log/activity/new`);
  const offered = (name: string) =>
    page.$$eval(`#field-${name}-options option`, (os) => os.map((o) => (o as HTMLOptionElement).label));
  const equipment = await offered('equipment');
  assert.deepEqual(equipment.sort(), ['Mower', 'Tractor'], 'equipment: the equipment bundle only');
  const locations = await offered('location');
  assert.equal(locations.length, 50, 'a long list offers its first 50');
  assert.ok(!locations.includes('Tractor'), 'no equipment among the locations');
  assert.ok(await page.$('input[name="_action:find:location"]'), 'and Find');

  await page.fill('#field-name', 'Till the beds');
  await page.fill('#field-equipment', 'Tractor');
  await page.click('input[name="_action:add:equipment"]');
  assert.equal(await page.inputValue('#field-equipment'), 'Tractor');
  await page.fill('#field-equipment-row-1', 'Mower');
  await page.click('input[name="_action:add:equipment"]');
  await page.fill('#field-equipment-row-2', 'Tractor');
  await page.click('input[name="_action:remove:equipment:2"]');
  assert.equal(await page.$('#field-equipment-row-2'), null);
  assert.equal(await page.inputValue('#field-equipment-row-1'), 'Mower');

  await page.fill('#field-location', 'Bed 52');
  await page.click('input[name="_action:find:location"]');
  assert.deepEqual(await offered('location'), ['Bed 52'], 'Find offers the records named like what was typed');
  assert.equal(await page.inputValue('#field-location'), 'Bed 52');
  assert.equal(await page.inputValue('#field-name'), 'Till the beds');

  // Enter in a text input saves (the form's first button is Save, not Add another).
  await page.press('#field-name', 'Enter');
  await page.waitForURL(/\/farm\/log\/activity\/[0-9a-f-]{36}\?saved=created/);
  const res = await request(`${server.url}/api/log/activity/${idOf(page)}?include=equipment,location`, { token });
  const names = (field: string) =>
    res.body.data.relationships[field].data.map(
      (r: any) => res.body.included.find((i: any) => i.id === r.id)?.attributes.name,
    );
  assert.deepEqual(names('equipment'), ['Tractor', 'Mower']);
  assert.deepEqual(names('location'), ['Bed 52']);
});

test('an image uploaded from the edit page is on the record and its page; a file of a kind the field refuses is refused', async () => {
  const log = await create('log--observation', { name: 'Leaf spots', status: 'done' });
  const page = await signedInPage();
  await page.goto(`${server.url}/farm/log/observation/${log.id}/edit`);
  await page.setInputFiles('#field-image-upload', { name: 'leaf.png', mimeType: 'image/png', buffer: PNG });
  await page.click('form.upload[action$="/files/image"] button[type=submit]');
  await page.waitForURL(/\/farm\/log\/observation\/[0-9a-f-]{36}\?saved=uploaded/);
  assert.match((await page.textContent('main'))!, /leaf\.png/, 'the record page lists the image');
  const res = await request(`${server.url}/api/log/observation/${log.id}?include=image`, { token });
  assert.equal(res.body.data.relationships.image.data.length, 1);
  assert.equal(res.body.included[0].attributes.filename, 'leaf.png');

  await page.goto(`${server.url}/farm/log/observation/${log.id}/edit`);
  await page.setInputFiles('#field-image-upload', {
    name: 'leaf.txt',
    mimeType: 'text/plain',
    buffer: Buffer.from('no'),
  });
  const [refused] = await Promise.all([
    page.waitForResponse((r) => r.request().method() === 'POST'),
    page.click('form.upload[action$="/files/image"] button[type=submit]'),
  ]);
  assert.equal(refused.status(), 422);
  assert.match((await page.textContent('main'))!, /png gif jpg jpeg/);
  const after = await request(`${server.url}/api/log/observation/${log.id}`, { token });
  assert.equal(after.body.data.relationships.image.data.length, 1, 'nothing added');
});
