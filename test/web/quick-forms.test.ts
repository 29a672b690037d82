// Quick forms written in YAML (issue 42 §2), in Debian's Chromium against a real server: every
// shipped form filled in and submitted as a person would, and what it made read back through the
// API; a failing submission re-renders with what was typed and stores nothing (records counted
// before and after); a viewer is offered none and a direct POST is refused; markup typed into a
// value stays text on every page (the templated names too); axe-core finds nothing serious on
// the new pages, whose controls are 44 px tall at 360 px.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { type Browser, type Page } from 'playwright-core';
import { launchChromium } from '../support/browser.ts';
import { startTestServer, ADMIN, type TestServer } from '../support/server.ts';
import { passwordToken, request } from '../support/http.ts';
import { createUser } from '../../runtime/accounts/users.ts';

const AXE = createRequire(import.meta.url).resolve('axe-core/axe.min.js');

/** A 1×1 PNG. */
const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==',
  'base64',
);

let server: TestServer;
let browser: Browser;
let token: string;
const ids: Record<string, string> = {};

before(async () => {
  server = await startTestServer({ env: { TILTH_FARM_NAME: 'Willow Creek' } });
  token = await passwordToken(server.url, ADMIN.name, ADMIN.password);
  browser = await launchChromium();
  ids.kg = (await post('taxonomy_term--unit', { name: 'kg' })).id;
  ids.sheep = (await post('taxonomy_term--animal_type', { name: 'Sheep' })).id;
  ids.tomato = (await post('taxonomy_term--plant_type', { name: 'Tomato' })).id;
  ids.season = (await post('taxonomy_term--season', { name: '2026' })).id;
  ids.field = (await post('asset--land', { name: 'North field', land_type: 'field', is_location: true })).id;
  ids.south = (await post('asset--land', { name: 'South field', land_type: 'field', is_location: true })).id;
  ids.flock = (await post('asset--group', { name: 'Flock' })).id;
  ids.ewe = (
    await post(
      'asset--animal',
      { name: 'Ewe 1', sex: 'F' },
      { animal_type: { data: { type: 'taxonomy_term--animal_type', id: ids.sheep } } },
    )
  ).id;
  ids.ram = (
    await post(
      'asset--animal',
      { name: 'Ram 1', sex: 'M' },
      { animal_type: { data: { type: 'taxonomy_term--animal_type', id: ids.sheep } } },
    )
  ).id;
  ids.bed = (
    await post(
      'asset--plant',
      { name: 'Tomato bed' },
      { plant_type: { data: [{ type: 'taxonomy_term--plant_type', id: ids.tomato }] } },
    )
  ).id;
});
after(async () => {
  await browser?.close();
  await server?.close();
});

async function post(type: string, attributes: Record<string, unknown>, relationships?: Record<string, unknown>) {
  const [entityType, bundle] = type.split('--');
  const res = await request(`${server.url}/api/${entityType}/${bundle}`, {
    method: 'POST',
    token,
    json: { data: { type, attributes, ...(relationships ? { relationships } : {}) } },
  });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body.data as { id: string; attributes: Record<string, any> };
}

async function get(path: string) {
  const res = await request(`${server.url}/api/${path}`, { token });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body;
}

/** How many records of these types exist, as the API counts them. */
async function counts(): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const path of [
    'log/activity',
    'log/observation',
    'log/harvest',
    'log/birth',
    'log/seeding',
    'log/transplanting',
    'quantity/standard',
    'asset/animal',
    'asset/plant',
    'file/file',
  ]) {
    const body = await get(`${path}?page[limit]=50`);
    out[path] = body.data.length;
  }
  return out;
}

async function signedIn(name = ADMIN.name, password = ADMIN.password, width = 1000): Promise<Page> {
  const page = await (await browser.newContext({ viewport: { width, height: 800 } })).newPage();
  await page.goto(`${server.url}/farm/sign-in`);
  await page.fill('#username', name);
  await page.fill('#password', password);
  await page.click('button[type=submit]');
  await page.waitForURL(`${server.url}/farm`);
  return page;
}

/** Submit the quick form on the page; the record page it lands on: its type path and UUID. */
async function submit(page: Page): Promise<{ path: string; id: string }> {
  await Promise.all([page.waitForNavigation(), page.click('form.record button.primary')]);
  if (!/\/farm\/[a-z_]+\/[a-z_]+\/[0-9a-f-]{36}\?saved=created/.test(page.url()))
    assert.fail(`not saved: ${await page.textContent('main')}`);
  const parts = new URL(page.url()).pathname.split('/');
  return { path: `${parts[2]}/${parts[3]}`, id: parts[4]! };
}

/**
 * A quick form sent as the page's form would send it (its session and CSRF token), without
 * drawing it: the record page it redirects to (type path and UUID), or the status of a refusal.
 */
async function quickPost(
  page: Page,
  name: string,
  form: Record<string, string>,
): Promise<{ path: string; id: string; status: number; text: string }> {
  const csrf = await page.inputValue('header input[name=csrf_token]');
  const res = await page.request.post(`${server.url}/farm/quick/${name}`, {
    form: { csrf_token: csrf, ...form },
    maxRedirects: 0,
  });
  const parts = new URL(res.headers().location ?? '/', server.url).pathname.split('/');
  return { path: `${parts[2]}/${parts[3]}`, id: parts[4] ?? '', status: res.status(), text: await res.text() };
}

const ref = (body: any, rel: string) =>
  [body.data.relationships[rel].data]
    .flat()
    .filter(Boolean)
    .map((r: any) => r.id) as string[];

const names = (body: any, rel: string) =>
  (Array.isArray(body.data.relationships[rel].data)
    ? body.data.relationships[rel].data
    : [body.data.relationships[rel].data]
  )
    .filter(Boolean)
    .map((r: any) => body.included?.find((i: any) => i.id === r.id)?.attributes.name);

test('the dashboard and the navigation offer the quick forms; each shipped form is listed', async () => {
  const page = await signedIn();
  assert.equal(await page.locator('nav.main a[href="/farm/quick"]').count(), 1);
  const offered = await page.$$eval('#quick ~ ul a', (as) => as.map((a) => a.textContent));
  assert.deepEqual(offered.sort(), [
    'Birth',
    'Group assignment',
    'Harvest',
    'Inventory adjustment',
    'Movement',
    'Observation with a photo',
    'Planting',
  ]);
  await page.goto(`${server.url}/farm/quick`);
  assert.equal(await page.locator('main .quick-list a').count(), 7);
  await page.context().close();
});

test('Movement: a done movement activity log, and the assets are where it says', async () => {
  const page = await signedIn();
  await page.goto(`${server.url}/farm/quick/movement`);
  assert.match(await page.inputValue('#field-date'), /T00:00$/, 'today at midnight, as farmOS opens it');
  assert.equal(await page.isChecked('#field-done'), true);
  await page.fill('#field-asset', 'Ewe 1');
  await page.fill('#field-location', 'North field');
  assert.equal(await page.locator('textarea#field-geometry[data-geometry-widget]').count(), 1, 'drawn on the map');
  const { path, id } = await submit(page);
  assert.equal(path, 'log/activity');
  const log = await get(`log/activity/${id}?include=asset,location`);
  const a = log.data.attributes;
  assert.deepEqual([a.name, a.status, a.is_movement], ['Move Ewe 1 to North field', 'done', true]);
  assert.deepEqual(names(log, 'asset'), ['Ewe 1']);
  assert.deepEqual(names(log, 'location'), ['North field']);
  const ewe = await get(`asset/animal/${ids.ewe}`);
  assert.deepEqual(
    ewe.data.relationships.location.data.map((r: any) => r.id),
    [ids.field],
    "the animal's computed location is the field",
  );

  // The assets given in the address are filled in, as farmOS's quick forms take them.
  await page.goto(`${server.url}/farm/quick/movement?asset=${ids.ewe}&asset=${ids.ram}`);
  assert.deepEqual(
    await page.$$eval('input[name=asset]', (inputs) => inputs.map((i) => (i as HTMLInputElement).value)),
    [ids.ewe, ids.ram],
  );

  // A geometry given (farmOS's movement form has its map too) is the log's, and so the asset's.
  const moved = await quickPost(page, 'movement', {
    date: '2026-03-01T00:00',
    asset: 'Ram 1',
    location: 'South field',
    geometry: 'POINT (10 20)',
    done: '1',
  });
  assert.equal(moved.status, 303);
  const drawn = await get(`log/activity/${moved.id}`);
  assert.equal(drawn.data.attributes.geometry.value, 'POINT (10 20)');
  const ram = await get(`asset/animal/${ids.ram}`);
  assert.equal(ram.data.attributes.geometry.value, 'POINT (10 20)', "the asset's geometry is the one drawn");
  assert.deepEqual(ref(ram, 'location'), [ids.south]);
  // A geometry without a location is refused, as farmOS's form refuses it.
  const before = await counts();
  const nowhere = await quickPost(page, 'movement', {
    date: '2026-03-02T00:00',
    asset: 'Ram 1',
    geometry: 'POINT (1 1)',
    done: '1',
  });
  assert.equal(nowhere.status, 422);
  assert.match(nowhere.text, /This needs locations too\./);
  assert.deepEqual(await counts(), before, 'nothing stored');
  await page.context().close();
});

test('Group assignment: an observation log that puts the assets in the group', async () => {
  const page = await signedIn();
  await page.goto(`${server.url}/farm/quick/group`);
  await page.fill('#field-asset', 'Ewe 1');
  await page.fill('#field-group', 'Flock');
  const { path, id } = await submit(page);
  assert.equal(path, 'log/observation');
  const log = await get(`log/observation/${id}?include=asset,group`);
  const a = log.data.attributes;
  assert.deepEqual([a.name, a.status, a.is_group_assignment], ['Group Ewe 1 into Flock', 'done', true]);
  const ewe = await get(`asset/animal/${ids.ewe}`);
  assert.deepEqual(
    ewe.data.relationships.group.data.map((r: any) => r.id),
    [ids.flock],
  );
  await page.context().close();
});

test('Birth: two children (rows added on the page), each an animal with its mother, and one birth log', async () => {
  const page = await signedIn();
  await page.goto(`${server.url}/farm/quick/birth`);
  await page.fill('#field-mother', 'Ewe 1');
  await page.fill('#field-children-0-name', 'Lamb A');
  await page.check('#field-children-0-sex-0');
  await page.fill('#field-children-0-tag', 'ear_tag: 101');
  await page.click('input[name="_action:add:children"]');
  assert.equal(await page.inputValue('#field-children-0-name'), 'Lamb A', 'what was typed is kept');
  assert.equal(await page.isChecked('#field-children-1-survived'), true, 'a row added opens with its defaults');
  await page.fill('#field-children-1-name', 'Lamb B');
  await page.check('#field-children-1-sex-1');
  await page.fill('#field-date', '2026-03-14T00:00');
  const { path, id } = await submit(page);
  assert.equal(path, 'log/birth');
  const log = await get(`log/birth/${id}?include=asset,mother,location,group`);
  assert.equal(log.data.attributes.name, 'Birth: Lamb A, Lamb B');
  assert.equal(log.data.attributes.status, 'done');
  assert.deepEqual(names(log, 'mother'), ['Ewe 1']);
  // No location or group asked: the mother's (moved and grouped by the tests above), as farmOS's birth log takes them.
  assert.deepEqual(names(log, 'location'), ['North field']);
  assert.deepEqual(names(log, 'group'), ['Flock']);
  assert.deepEqual([log.data.attributes.is_movement, log.data.attributes.is_group_assignment], [true, true]);
  assert.deepEqual(names(log, 'asset').sort(), ['Lamb A', 'Lamb B']);
  for (const child of log.data.relationships.asset.data) {
    const animal = await get(`asset/animal/${child.id}`);
    const a = animal.data.attributes;
    assert.deepEqual(animal.data.relationships.animal_type.data.id, ids.sheep, "the mother's species/breed");
    assert.deepEqual(
      animal.data.relationships.parent.data.map((r: any) => r.id),
      [ids.ewe],
      'the mother is the parent',
    );
    assert.ok(String(a.birthdate).startsWith('2026-03-1'), `birthdate from the log: ${a.birthdate}`);
    if (a.name === 'Lamb A') {
      assert.equal(a.sex, 'F');
      assert.deepEqual(
        a.id_tag.map((t: any) => [t.type, t.id]),
        [['ear_tag', '101']],
      );
    } else assert.equal(a.sex, 'M');
  }
  await page.context().close();
});

test("Birth: the father, a birth weight, a child that did not survive, the location given and the mother's group", async () => {
  const page = await signedIn();
  const before = await counts();
  const { path, id, status } = await quickPost(page, 'birth', {
    date: '2026-04-02T00:00',
    mother: 'Ewe 1',
    father: 'Ram 1',
    'children._rows': '2',
    'children.0.name': 'Lamb C',
    'children.0.sex': 'F',
    'children.0.weight': '3.5',
    'children.0.survived': '1',
    'children.1.name': 'Lamb D',
    'children.1.sex': 'M',
    weight_units: 'kg',
    location: 'South field',
  });
  assert.equal(status, 303);
  assert.equal(path, 'log/birth');
  const log = await get(`log/birth/${id}?include=location,group`);
  assert.deepEqual(names(log, 'location'), ['South field'], 'where the form says');
  assert.deepEqual(names(log, 'group'), ['Flock'], "the mother's group");
  const children = new Map<string, any>();
  for (const child of ref(log, 'asset')) {
    const animal = await get(`asset/animal/${child}`);
    children.set(animal.data.attributes.name, animal);
    assert.deepEqual(ref(animal, 'parent').sort(), [ids.ewe, ids.ram].sort(), 'mother and father are its parents');
    assert.deepEqual(ref(animal, 'location'), [ids.south]);
    assert.deepEqual(ref(animal, 'group'), [ids.flock]);
  }
  assert.deepEqual(
    [...children].map(([name, a]) => [name, a.data.attributes.status]).sort(),
    [
      ['Lamb C', 'active'],
      ['Lamb D', 'archived'],
    ],
    'a child that did not survive is archived',
  );
  // One weight observation, for the child weighed, with its weight quantity.
  const weighed = await get(
    `log/observation?filter[name]=${encodeURIComponent('Weight of Lamb C is 3.5 kg')}&include=quantity,quantity.units`,
  );
  assert.equal(weighed.data.length, 1);
  assert.deepEqual(ref({ data: weighed.data[0] }, 'asset'), [children.get('Lamb C').data.id]);
  const q = weighed.included.find((i: any) => i.type === 'quantity--standard');
  assert.deepEqual(
    [q.attributes.value.decimal, q.attributes.measure, q.relationships.units.data.id],
    ['3.5', 'weight', ids.kg],
  );
  const after = await counts();
  assert.deepEqual(
    ['asset/animal', 'log/observation', 'quantity/standard', 'log/birth'].map((k) => after[k]! - before[k]!),
    [2, 1, 1, 1],
  );
  await page.context().close();
});

test('Harvest: a harvest log with its quantity and lot, named from the template', async () => {
  const page = await signedIn();
  await page.goto(`${server.url}/farm/quick/harvest`);
  const offered = await page.$$eval('#field-asset-options option', (os) => os.map((o) => o.textContent));
  assert.deepEqual(offered, ['Tomato bed'], 'only plant assets are offered');
  assert.equal(await page.inputValue('#field-quantity-measure'), 'weight', 'the default measure');
  await page.fill('#field-asset', 'Tomato bed');
  await page.fill('#field-quantity-value', '4.5');
  await page.fill('#field-quantity-units', 'kg');
  await page.fill('#field-lot', 'L-7');
  const { path, id } = await submit(page);
  assert.equal(path, 'log/harvest');
  const log = await get(`log/harvest/${id}?include=asset,quantity,quantity.units`);
  const a = log.data.attributes;
  assert.deepEqual([a.name, a.status, a.lot_number], ['Harvest 4.5 kg Tomato bed', 'done', 'L-7']);
  const q = log.included.find((i: any) => i.type === 'quantity--standard');
  assert.deepEqual(
    [q.attributes.value.decimal, q.attributes.measure, q.relationships.units.data.id],
    ['4.5', 'weight', ids.kg],
  );
  await page.context().close();
});

test("Inventory adjustment: the quantity adjusts the asset's inventory", async () => {
  const page = await signedIn();
  const adjust = async (kind: number, value: string) => {
    await page.goto(`${server.url}/farm/quick/inventory`);
    await page.fill('#field-asset', 'Tomato bed');
    await page.fill('#field-quantity-value', value);
    await page.fill('#field-quantity-units', 'crates');
    await page.check(`#field-adjustment-${kind}`);
    return submit(page);
  };
  const first = await adjust(2, '10'); // reset
  const second = await adjust(0, '3'); // increment
  await adjust(1, '5'); // decrement
  const log = await get(`log/observation/${first.id}`);
  assert.equal(log.data.attributes.name, 'Reset inventory of Tomato bed to 10 crates');
  assert.equal(
    (await get(`log/observation/${second.id}`)).data.attributes.name,
    'Increment inventory of Tomato bed by 3 crates',
  );
  const bed = await get(`asset/plant/${ids.bed}`);
  assert.deepEqual(
    bed.data.attributes.inventory.map((i: any) => [i.value, i.units]),
    [['8', 'crates']],
    '10, then +3, then −5',
  );
  // The log named as the person names it (farmOS's "Customize log name").
  const named = await quickPost(page, 'inventory', {
    date: '2026-05-01T00:00',
    asset: 'Tomato bed',
    'quantity.value': '8',
    'quantity.units': 'crates',
    adjustment: 'reset',
    name: 'Counted the crates',
    done: '1',
  });
  assert.equal((await get(`log/observation/${named.id}`)).data.attributes.name, 'Counted the crates');
  await page.context().close();
});

test('Planting: a plant asset with its crop and season, and a seeding log that moves it to where it was sown', async () => {
  const page = await signedIn();
  await page.goto(`${server.url}/farm/quick/planting`);
  assert.equal(await page.isChecked('#field-seeding-_on'), true, 'a seeding is recorded unless unticked');
  assert.equal(await page.isChecked('#field-transplanting-_on'), false);
  assert.equal(await page.isChecked('#field-harvest-_on'), false);
  // An unticked group shows only its box (the form stays short on a phone), with no script.
  assert.equal(await page.isVisible('#field-harvest-date'), false, 'folded while unticked');
  await page.check('#field-harvest-_on');
  assert.equal(await page.isVisible('#field-harvest-date'), true, 'shown once ticked');
  await page.uncheck('#field-harvest-_on');
  await page.fill('#field-seasons', '2026');
  await page.fill('#field-crops', 'Tomato');
  await page.fill('#field-seeding-location', 'North field');
  await page.fill('#field-seeding-quantity', '200');
  await page.fill('#field-seeding-units', 'seeds');
  await page.selectOption('#field-seeding-measure', 'count');
  const { path, id } = await submit(page);
  assert.equal(path, 'log/seeding');
  const log = await get(`log/seeding/${id}?include=asset,location,quantity`);
  const a = log.data.attributes;
  assert.deepEqual([a.name, a.status, a.is_movement], ['Seed 2026 North field Tomato', 'done', true]);
  assert.deepEqual(names(log, 'location'), ['North field']);
  const [plantRef] = log.data.relationships.asset.data;
  const plant = await get(`asset/plant/${plantRef.id}`);
  assert.equal(plant.data.attributes.name, '2026 North field Tomato', "farmOS's [Season] [Location] [Crop]");
  assert.deepEqual(
    plant.data.relationships.plant_type.data.map((r: any) => r.id),
    [ids.tomato],
  );
  assert.deepEqual(
    plant.data.relationships.season.data.map((r: any) => r.id),
    [ids.season],
  );
  assert.deepEqual(
    plant.data.relationships.location.data.map((r: any) => r.id),
    [ids.field],
    'sown there',
  );
  const q = log.included.find((i: any) => i.type === 'quantity--standard');
  assert.deepEqual([q.attributes.value.decimal, q.attributes.measure], ['200', 'count']);

  // Without a quantity, none is made (the record's `when`); a harvest typed but not ticked is not recorded.
  const seeding = { 'seeding._on': '1', 'seeding.date': '2026-03-01T00:00', 'seeding.location': 'North field' };
  let before = await counts();
  const plain = await quickPost(page, 'planting', {
    seasons: '2026',
    crops: 'Tomato',
    ...seeding,
    'seeding.done': '1',
    'harvest.date': '2026-07-01T00:00',
    'harvest.quantity': '9',
  });
  assert.equal(plain.path, 'log/seeding');
  let after = await counts();
  assert.equal(after['quantity/standard'], before['quantity/standard']);
  assert.equal(after['log/seeding'], before['log/seeding']! + 1);
  assert.equal(after['log/harvest'], before['log/harvest']);

  // A transplanting ticked without its location (required when ticked) stores nothing.
  before = after;
  const refused = await quickPost(page, 'planting', {
    seasons: '2026',
    crops: 'Tomato',
    ...seeding,
    'transplanting._on': '1',
    'transplanting.date': '2026-04-15T00:00',
  });
  assert.equal(refused.status, 422);
  assert.deepEqual(await counts(), before, 'nothing stored');

  // Seeding, transplanting and harvest at once, as farmOS's planting form records them.
  const all = await quickPost(page, 'planting', {
    seasons: '2026',
    crops: 'Tomato',
    ...seeding,
    'seeding.done': '1',
    'transplanting._on': '1',
    'transplanting.date': '2026-04-15T00:00',
    'transplanting.location': 'South field',
    'transplanting.quantity': '150',
    'transplanting.units': 'plants',
    'transplanting.measure': 'count',
    'harvest._on': '1',
    'harvest.date': '2026-07-20T00:00',
    'harvest.quantity': '12',
    'harvest.units': 'kg',
    'harvest.measure': 'weight',
    'harvest.done': '1',
  });
  assert.equal(all.path, 'log/harvest', 'it ends on the last log made');
  const harvest = await get(`log/harvest/${all.id}?include=quantity`);
  assert.deepEqual(
    [harvest.data.attributes.name, harvest.data.attributes.status],
    ['Harvest 2026 South field Tomato', 'done'],
    'named from the transplanting location',
  );
  assert.deepEqual(
    harvest.included.map((i: any) => [i.attributes.value.decimal, i.attributes.measure]),
    [['12', 'weight']],
  );
  const [grown] = ref(harvest, 'asset');
  const moved = await get(
    `log/transplanting?filter[name]=${encodeURIComponent('Transplant 2026 South field Tomato')}&include=location,quantity`,
  );
  assert.equal(moved.data.length, 1);
  const t = moved.data[0];
  assert.deepEqual(
    [t.attributes.status, t.attributes.is_movement],
    ['pending', true],
    'Completed is unticked at first',
  );
  assert.deepEqual(ref({ data: t }, 'asset'), [grown]);
  assert.deepEqual(ref({ data: t }, 'location'), [ids.south]);
  assert.deepEqual(
    moved.included.filter((i: any) => i.type === 'quantity--standard').map((i: any) => i.attributes.value.decimal),
    ['150'],
  );
  const grownPlant = await get(`asset/plant/${grown}`);
  assert.equal(grownPlant.data.attributes.name, '2026 South field Tomato');
  assert.deepEqual(ref(grownPlant, 'location'), [ids.field], 'the pending transplanting has not moved it yet');

  // Nothing ticked, a name typed: the plant asset alone, under that name.
  const bare = await quickPost(page, 'planting', { seasons: '2026', crops: 'Tomato', name: 'Bed 4 tomatoes' });
  assert.equal(bare.path, 'asset/plant');
  assert.equal((await get(`asset/plant/${bare.id}`)).data.attributes.name, 'Bed 4 tomatoes');
  await page.context().close();
});

test('Observation with a photo: the log and its image, stored together', async () => {
  const page = await signedIn(ADMIN.name, ADMIN.password, 360);
  await page.goto(`${server.url}/farm/quick/observation`);
  assert.equal(await page.getAttribute('form.record', 'enctype'), 'multipart/form-data');
  await page.fill('#field-name', 'Blight on the lower leaves');
  await page.fill('#field-asset', 'Tomato bed');
  await page.setInputFiles('#field-photo', { name: 'leaf.png', mimeType: 'image/png', buffer: PNG });
  const { path, id } = await submit(page);
  assert.equal(path, 'log/observation');
  const log = await get(`log/observation/${id}?include=image`);
  assert.equal(log.data.attributes.name, 'Blight on the lower leaves');
  assert.equal(log.data.relationships.image.data.length, 1);
  const file = log.included.find((i: any) => i.type === 'file--file');
  assert.match(file.attributes.filename, /^leaf.*\.png$/);
  assert.equal(file.attributes.status, true, 'permanent: the log names it');

  // A crafted post: a file sent for fields that take none (the date, the notes) and two for the
  // photo. The fields' own values count, the first photo is the log's, and nothing answers 500.
  const csrf = await page.inputValue('header input[name=csrf_token]');
  const cookie = (await page.context().cookies()).map((c) => `${c.name}=${c.value}`).join('; ');
  const body = new FormData();
  body.append('csrf_token', csrf);
  body.append('name', 'Crafted observation');
  body.append('date', '2026-03-01T08:00');
  body.append('date', new Blob([PNG], { type: 'image/png' }), 'date.png');
  body.append('notes', new Blob(['not a note']), 'notes.txt');
  body.append('photo', new Blob([PNG], { type: 'image/png' }), 'first.png');
  body.append('photo', new Blob([PNG], { type: 'image/png' }), 'second.png');
  const crafted = await fetch(`${server.url}/farm/quick/observation`, {
    method: 'POST',
    body,
    headers: { Cookie: cookie },
    redirect: 'manual',
  });
  assert.equal(crafted.status, 303, await crafted.text());
  const craftedId = new URL(crafted.headers.get('location')!, server.url).pathname.split('/')[4]!;
  const stored = await get(`log/observation/${craftedId}?include=image`);
  assert.equal(stored.data.attributes.timestamp, '2026-03-01T08:00:00+00:00');
  assert.equal(stored.data.attributes.notes, null);
  assert.deepEqual(
    stored.included
      .filter((i: any) => i.type === 'file--file')
      .map((f: any) => f.attributes.filename.replace(/_\d+(?=\.)/, '')),
    ['first.png'],
  );
  await page.context().close();
});

test('a failing submission re-renders with what was typed and its message at the field, and stores nothing', async () => {
  const page = await signedIn();
  const before = await counts();
  // The quantity (the first record) is invalid.
  await page.goto(`${server.url}/farm/quick/harvest`);
  await page.fill('#field-asset', 'Tomato bed');
  await page.fill('#field-quantity-value', 'four');
  await page.fill('#field-lot', 'L-8');
  await page.click('form.record button.primary');
  await page.waitForSelector('.error[role=alert]');
  assert.equal(await page.inputValue('#field-quantity-value'), 'four', 'kept as typed');
  assert.equal(await page.inputValue('#field-lot'), 'L-8');
  assert.ok(await page.locator('#field-quantity-value-error').count(), 'the message is beside the value');
  assert.equal(await page.getAttribute('#field-quantity-value', 'aria-invalid'), 'true');
  // The log (the second record) is invalid after the quantity was made: the quantity goes too.
  await page.fill('#field-quantity-value', '2');
  // Past the input's maxlength, as a hand-made POST would send it.
  await page.$eval('#field-lot', (e) => ((e as HTMLInputElement).value = 'x'.repeat(300)));
  await page.click('form.record button.primary');
  await page.waitForSelector('#field-lot-error');
  // A required field left empty, and a reference to nothing.
  await page.goto(`${server.url}/farm/quick/movement`);
  await page.fill('#field-location', 'Nowhere at all');
  await page.click('form.record button.primary');
  await page.waitForSelector('#field-asset-error');
  assert.deepEqual(await counts(), before, 'nothing stored');
  await page.context().close();
});

test('a viewer is offered no quick form, and a POST of one sent directly is refused', async () => {
  const who = { name: 'quick-viewer', password: 'viewer-password-1' };
  await createUser(server.ctx.db.knex, { ...who, roles: ['farm_viewer'] });
  const page = await signedIn(who.name, who.password);
  assert.equal(await page.locator('a[href^="/farm/quick"]').count(), 0, 'no link on the dashboard or in the menu');
  await page.goto(`${server.url}/farm/quick`);
  assert.equal(await page.locator('main .quick-list a').count(), 0);
  const form = await page.request.get(`${server.url}/farm/quick/harvest`);
  assert.equal(form.status(), 403);
  const csrf = await page.inputValue('header input[name=csrf_token]');
  const before = await counts();
  const res = await page.request.post(`${server.url}/farm/quick/harvest`, {
    form: { csrf_token: csrf, asset: 'Tomato bed', 'quantity.value': '1', date: '2026-01-01T00:00' },
    maxRedirects: 0,
  });
  assert.equal(res.status(), 403);
  assert.deepEqual(await counts(), before, 'nothing stored');
  await page.context().close();
});

test('markup typed into a value stays text: in a templated name, the form again, and the record page', async () => {
  const markup = '<img src=x id=injected>Bed';
  await post(
    'asset--plant',
    { name: markup },
    { plant_type: { data: [{ type: 'taxonomy_term--plant_type', id: ids.tomato }] } },
  );
  const page = await signedIn();
  await page.goto(`${server.url}/farm/quick/harvest`);
  assert.equal(await page.locator('#injected').count(), 0, 'the offered records');
  await page.fill('#field-asset', markup);
  await page.fill('#field-quantity-value', '1');
  await page.fill('#field-lot', '<b id=bold>lot</b>');
  await page.fill('#field-quantity-units', '<i id=unit>u</i>');
  const { id } = await submit(page);
  const log = await get(`log/harvest/${id}`);
  assert.equal(log.data.attributes.name, `Harvest 1 <i id=unit>u</i> ${markup}`, 'stored as typed');
  assert.equal(await page.locator('#injected, #bold, #unit').count(), 0, 'shown as text on the record page');
  assert.match((await page.textContent('main'))!, /Harvest 1 <i id=unit>u<\/i> <img src=x id=injected>Bed/);
  // The form again after a failure, with the markup in its inputs.
  await page.goto(`${server.url}/farm/quick/harvest`);
  await page.fill('#field-asset', markup);
  await page.fill('#field-quantity-value', '"><b id=bold2>');
  await page.click('form.record button.primary');
  await page.waitForSelector('.error[role=alert]');
  assert.equal(await page.locator('#injected, #bold2').count(), 0);
  assert.equal(await page.inputValue('#field-quantity-value'), '"><b id=bold2>');
  await page.context().close();
});

interface Violation {
  id: string;
  impact: string | null;
  help: string;
  nodes: Array<{ target: unknown[] }>;
}

async function seriousViolations(page: Page): Promise<string[]> {
  await page.addScriptTag({ path: AXE });
  const violations = (await page.evaluate(async () => {
    const axe = (globalThis as unknown as { axe: { run: (o: unknown) => Promise<{ violations: unknown[] }> } }).axe;
    return (await axe.run({ resultTypes: ['violations'] })).violations;
  })) as Violation[];
  return violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.id}: ${v.help} (${v.nodes.map((n) => n.target.join(' ')).join(', ')})`);
}

test('axe-core finds nothing serious on the quick form pages; at 360 px every control is 44 px tall and reachable by keyboard', async () => {
  for (const width of [360, 1000]) {
    const context = await browser.newContext({ viewport: { width, height: 800 }, bypassCSP: true });
    const page = await context.newPage();
    await page.goto(`${server.url}/farm/sign-in`);
    await page.fill('#username', ADMIN.name);
    await page.fill('#password', ADMIN.password);
    await page.click('button[type=submit]');
    await page.waitForURL(`${server.url}/farm`);
    const pages: Array<[string, () => Promise<void>]> = [
      ['/farm', async () => {}],
      ['/farm/quick', async () => {}],
      ...['movement', 'group', 'harvest', 'inventory', 'planting', 'observation'].map(
        (n): [string, () => Promise<void>] => [`/farm/quick/${n}`, async () => {}],
      ),
      [
        '/farm/quick/birth (two children)',
        async () => {
          await page.click('input[name="_action:add:children"]');
        },
      ],
      [
        '/farm/quick/harvest (a failed submission)',
        async () => {
          await page.fill('#field-quantity-value', 'four');
          await page.click('form.record button.primary');
          await page.waitForSelector('.error[role=alert]');
        },
      ],
    ];
    for (const [label, then] of pages) {
      await page.goto(`${server.url}${label.split(' ')[0]}`);
      await then();
      // axe at the phone's width on every page (quick forms are for the phone); at the desktop's on
      // the index and the form with the most in it (the layout's one change is the width). The
      // whole dashboard is axe-checked at both widths by accessibility.test.ts.
      const axed = width === 360 ? label !== '/farm' : label.startsWith('/farm/quick/birth') || label === '/farm/quick';
      if (axed) assert.deepEqual(await seriousViolations(page), [], `${label} at ${width} px`);
      // The dashboard's own lists are issue 38's; its quick forms block is checked here.
      if (width !== 360) continue;
      const scope = label === '/farm' ? '#quick ~ ul' : 'main';
      const small = await page.$$eval(
        ['a', 'button', 'input:not([type=hidden]):not(.default-submit)', 'select', 'textarea']
          .map((t) => `${scope} ${t}`)
          .join(', '),
        (els) =>
          els
            .filter(
              (e) =>
                (e as HTMLElement).offsetParent !== null &&
                (e as HTMLInputElement).type !== 'radio' &&
                (e as HTMLInputElement).type !== 'checkbox',
            )
            .filter((e) => e.getBoundingClientRect().height < 44)
            .map((e) => e.outerHTML.slice(0, 80)),
      );
      assert.deepEqual(small, [], `${label}: targets 44 px tall at 360 px`);
      const wide = await page.evaluate(() => document.documentElement.scrollWidth);
      assert.ok(wide <= 360, `${label}: no sideways scrolling at 360 px (${wide})`);
    }
    // From the keyboard: Tab reaches Save on the harvest form, and Enter in a text input submits it.
    await page.goto(`${server.url}/farm/quick/harvest`);
    await page.focus('#field-lot');
    let reached = false;
    for (let i = 0; i < 60 && !reached; i++) {
      await page.keyboard.press('Tab');
      reached = await page.evaluate(() => document.activeElement?.classList.contains('primary') ?? false);
    }
    assert.ok(reached, 'Save is reached with Tab');
    await context.close();
  }
});
