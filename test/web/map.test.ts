// The farm map (issue 42 part 1), against a real server and Debian's Chromium: the pages' own
// scripts as Tilth serves them (hashed names, long cache, nosniff, the CSP's `script-src 'self'`),
// the features endpoint (who may see it, its parameters, a bounding box, bounded answers, a
// statement count that does not grow with the features), the geometry widget (a paddock drawn
// with the mouse, saved, read back through the API), a flock moved onto it shown at it, and
// every page still whole without script.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { type Browser, type BrowserContext, type Page } from 'playwright-core';
import { launchChromium } from '../support/browser.ts';
import { startTestServer, ADMIN, type TestServer } from '../support/server.ts';
import { passwordToken, request } from '../support/http.ts';
import { createUser } from '../../runtime/accounts/users.ts';
import { SHAPES_MAX } from '../../runtime/farm/map-features.ts';

let server: TestServer;
let browser: Browser;
let token: string;

const VIEWER = { name: 'map-viewer', password: 'map-viewer-password' };
const ACCOUNTS = { name: 'map-accounts', password: 'map-accounts-password' };

before(async () => {
  server = await startTestServer({ env: { TILTH_FARM_NAME: 'Map Farm' } });
  token = await passwordToken(server.url, ADMIN.name, ADMIN.password);
  await createUser(server.ctx.db.knex, { ...VIEWER, roles: ['farm_viewer'] });
  // An account administrator may not view records (farmOS's Account Admin role).
  await createUser(server.ctx.db.knex, { ...ACCOUNTS, roles: ['farm_account_admin'] });
  browser = await launchChromium();
});
after(async () => {
  await browser?.close();
  await server?.close();
});

async function post(path: string, data: unknown) {
  const res = await request(`${server.url}/api/${path}`, { method: 'POST', token, json: { data } });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body.data as { type: string; id: string; attributes: Record<string, any> };
}

/** A square of `size` degrees with its south-west corner at (lon, lat). */
const square = (lon: number, lat: number, size: number) =>
  `POLYGON ((${lon} ${lat}, ${lon + size} ${lat}, ${lon + size} ${lat + size}, ${lon} ${lat + size}, ${lon} ${lat}))`;

const land = (name: string, wkt: string) =>
  post('asset/land', { type: 'asset--land', attributes: { name, land_type: 'field', intrinsic_geometry: wkt } });

/** A browser signed in as `who`, with every page error recorded. */
async function signedIn(
  who: { name: string; password: string } = ADMIN,
  options: Parameters<Browser['newContext']>[0] = {},
): Promise<{ context: BrowserContext; page: Page; errors: string[] }> {
  const context = await browser.newContext(options);
  const page = await context.newPage();
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push(m.text());
  });
  await page.goto(`${server.url}/farm/sign-in`);
  await page.fill('#username', who.name);
  await page.fill('#password', who.password);
  await page.click('button[type=submit]');
  await page.waitForURL(`${server.url}/farm`);
  return { context, page, errors };
}

/** The session cookie of a signed-in context, for plain requests. */
async function cookieOf(context: BrowserContext): Promise<string> {
  return (await context.cookies()).map((c) => `${c.name}=${c.value}`).join('; ');
}

async function features(cookie: string | null, query: string) {
  const res = await fetch(`${server.url}/farm/map/features?${query}`, { headers: cookie ? { Cookie: cookie } : {} });
  return { status: res.status, type: res.headers.get('content-type') ?? '', body: (await res.json()) as any };
}

/** Every SQL statement the server runs while `run` runs. */
async function statementsOf(run: () => Promise<void>): Promise<string[]> {
  const knex = server.ctx.db.knex;
  const log: string[] = [];
  const listener = (q: { sql: string }) => log.push(q.sql);
  knex.on('query', listener);
  try {
    await run();
  } finally {
    knex.removeListener('query', listener);
  }
  return log;
}

test("the map's script and stylesheet are Tilth's own: hashed names, cached for good, never sniffed, allowed by the CSP", async () => {
  const { context, page } = await signedIn();
  try {
    const res = await page.goto(`${server.url}/farm`);
    const csp = res!.headers()['content-security-policy']!;
    assert.match(csp, /script-src 'self'(;|$)/);
    assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval/);
    assert.match(csp, /img-src 'self';/, 'no tile server: images from here only');
    const script = await page.getAttribute('script[src^="/farm/assets/map."]', 'src');
    const style = await page.getAttribute('link[href^="/farm/assets/map."]', 'href');
    assert.match(script!, /^\/farm\/assets\/map\.[A-Z0-9]+\.js$/);
    assert.match(style!, /^\/farm\/assets\/map\.[A-Z0-9]+\.css$/);
    assert.equal(await page.$$eval('script:not([src])', (s) => s.length), 0, 'no inline script');
    for (const [path, type] of [
      [script!, 'text/javascript'],
      [style!, 'text/css'],
    ] as const) {
      const asset = await fetch(`${server.url}${path}`, { headers: { 'Accept-Encoding': 'gzip' } });
      assert.equal(asset.status, 200);
      assert.ok(asset.headers.get('content-type')!.startsWith(type), path);
      assert.equal(asset.headers.get('cache-control'), 'public, max-age=31536000, immutable');
      assert.equal(asset.headers.get('x-content-type-options'), 'nosniff');
      assert.ok((await asset.arrayBuffer()).byteLength > 1000);
    }
    // OpenLayers is in the script; no CDN is named anywhere in it.
    const js = await (await fetch(`${server.url}${script}`)).text();
    assert.match(js, /openlayers|ol-viewport/i);
    assert.doesNotMatch(js, /https?:\/\/(cdn|unpkg|cdnjs|jsdelivr)/i);
    // A page with no map has no script.
    await page.goto(`${server.url}/farm/log`);
    assert.equal(await page.$$eval('script', (s) => s.length), 0);
    // A made-up asset name is a 404, as any unknown page under /farm.
    const unknown = await fetch(`${server.url}/farm/assets/map.NOPE.js`, {
      headers: { Cookie: await cookieOf(context) },
    });
    assert.equal(unknown.status, 404);
  } finally {
    await context.close();
  }
});

test('the features endpoint: anonymous 401, no right to view assets 403, bad parameters 400 naming them', async () => {
  const anonymous = await features(null, 'bbox=-1,-1,1,1&zoom=10');
  assert.equal(anonymous.status, 401);
  assert.match(anonymous.body.errors[0].detail, /Sign in/);
  const accounts = await signedIn(ACCOUNTS);
  try {
    const refused = await features(await cookieOf(accounts.context), 'bbox=-1,-1,1,1&zoom=10');
    assert.equal(refused.status, 403);
    assert.ok(!('features' in refused.body));
    // Nor is a map offered to them on the dashboard.
    assert.equal(await accounts.page.$$eval('[data-map]', (m) => m.length), 0);
  } finally {
    await accounts.context.close();
  }
  const viewer = await signedIn(VIEWER);
  try {
    const cookie = await cookieOf(viewer.context);
    for (const [query, parameter] of [
      ['zoom=10', 'bbox'],
      ['bbox=1,2,3&zoom=10', 'bbox'],
      ['bbox=a,b,c,d&zoom=10', 'bbox'],
      ['bbox=10,0,5,1&zoom=10', 'bbox'],
      ['bbox=-200,0,5,1&zoom=10', 'bbox'],
      ['bbox=0,0,1,1', 'zoom'],
      ['bbox=0,0,1,1&zoom=99', 'zoom'],
      ['bbox=0,0,1,1&zoom=1.5', 'zoom'],
      ['bbox=0,0,1,1&zoom=3&layers=land,nonsense', 'layers'],
    ]) {
      const res = await features(cookie, query!);
      assert.equal(res.status, 400, query);
      assert.equal(res.body.errors[0].source.parameter, parameter, query);
      assert.ok(res.body.errors[0].detail.startsWith(parameter!), res.body.errors[0].detail);
    }
    const ok = await features(cookie, 'bbox=0,0,1,1&zoom=3');
    assert.equal(ok.status, 200);
    assert.match(ok.type, /^application\/geo\+json/);
    assert.equal(ok.body.type, 'FeatureCollection');
  } finally {
    await viewer.context.close();
  }
});

test('a paddock drawn on the geometry widget is saved as its WKT; a flock moved onto it is drawn there, at its location', async () => {
  // The farm the widget opens on: one field, far from what the other tests draw.
  const home = await land('Home farm', square(-72.6, 42.3, 0.01));
  const { context, page, errors } = await signedIn();
  try {
    await page.goto(`${server.url}/farm/asset/land/new`);
    await page.fill('#field-name', 'North paddock');
    await page.selectOption('#field-land_type', 'field');
    const map = page.locator('.geometry-widget .map');
    await page.waitForSelector('.geometry-widget .map[data-state=ready]');
    await map.scrollIntoViewIfNeeded();
    const box = (await map.boundingBox())!;
    const at = (dx: number, dy: number) => ({ x: box.x + box.width / 2 + dx, y: box.y + box.height / 2 + dy });
    // A square paddock inside the farm's field, drawn with the mouse, and closed on its first corner.
    await page.click('[data-tool=Polygon]');
    assert.equal(await page.getAttribute('[data-tool=Polygon]', 'aria-pressed'), 'true');
    for (const [dx, dy] of [
      [-40, -40],
      [40, -40],
      [40, 40],
      [-40, 40],
      [-40, -40],
    ]) {
      // As a hand does it: moved there, pressed, released, a moment apart (not a double click).
      const p = at(dx!, dy!);
      await page.mouse.move(p.x, p.y, { steps: 4 });
      await page.mouse.down();
      await page.mouse.up();
      await page.waitForTimeout(350);
    }
    await page.waitForFunction(() =>
      /^POLYGON/.test((document.querySelector('#field-intrinsic_geometry') as HTMLTextAreaElement).value),
    );
    const drawn = await page.inputValue('#field-intrinsic_geometry');
    // Four corners and the first again, inside the farm's field.
    const corners = drawn
      .replace(/^POLYGON\s*\(\(|\)\)$/g, '')
      .split(',')
      .map((p) => p.trim().split(/\s+/).map(Number));
    assert.equal(corners.length, 5, drawn);
    for (const [lon, lat] of corners) {
      assert.ok(lon! > -72.6 && lon! < -72.59 && lat! > 42.3 && lat! < 42.31, drawn);
    }
    await Promise.all([
      page.waitForURL(/\/farm\/asset\/land\/[0-9a-f-]{36}\?saved=created$/),
      page.click('form.record button[type=submit]'),
    ]);
    const paddockId = /land\/([0-9a-f-]{36})/.exec(page.url())![1]!;
    const read = await request(`${server.url}/api/asset/land/${paddockId}`, { token });
    assert.equal(read.body.data.attributes.intrinsic_geometry.value, drawn, 'the WKT the API stores is what was drawn');

    // Typing WKT moves the shape; the map keeps the textarea's text as typed.
    await page.goto(`${server.url}/farm/asset/land/${paddockId}/edit`);
    await page.waitForSelector('.geometry-widget .map[data-state=ready]');
    assert.equal(await page.inputValue('#field-intrinsic_geometry'), drawn);

    // A flock moved onto it through the API: its location and geometry are the paddock's.
    const flock = await post('asset/group', { type: 'asset--group', attributes: { name: 'Flock' } });
    await post('log/activity', {
      type: 'log--activity',
      attributes: { name: 'Move the flock', status: 'done', is_movement: true, timestamp: '2024-05-01T08:00:00+00:00' },
      relationships: {
        asset: { data: [{ type: 'asset--group', id: flock.id }] },
        location: { data: [{ type: 'asset--land', id: paddockId }] },
      },
    });
    const moved = (await request(`${server.url}/api/asset/group/${flock.id}`, { token })).body.data;
    assert.deepEqual(
      moved.relationships.location.data.map((r: any) => r.id),
      [paddockId],
    );
    // The same shape (the computed geometry is written as geoPHP writes WKT, with its own spaces).
    const bare = (wkt: string) => wkt.replace(/\s*([(),])\s*/g, '$1');
    assert.equal(bare(moved.attributes.geometry.value), bare(drawn));

    // The paddock's page: its small map, the flock's marker at its middle; a click names it and where it is.
    await page.goto(`${server.url}/farm/asset/land/${paddockId}`);
    await page.waitForSelector('[data-map][data-state=ready]');
    await page.locator('[data-map]').scrollIntoViewIfNeeded();
    const small = (await page.locator('[data-map]').boundingBox())!;
    await page.mouse.click(small.x + small.width / 2, small.y + small.height / 2);
    const popup = page.locator('.map-popup');
    await popup.waitFor({ state: 'visible' });
    assert.equal(await popup.locator('a').first().textContent(), 'Flock');
    assert.equal(await popup.locator('a').first().getAttribute('href'), `/farm/asset/group/${flock.id}`);
    assert.match((await popup.textContent())!, /Location: North paddock/);
    // "Record a log here": a new log's form with the flock and the paddock filled in.
    await Promise.all([page.waitForURL(/\/farm\/log\/activity\/new\?/), popup.locator('a.button').click()]);
    assert.equal(await page.inputValue('#field-asset'), `Flock [${flock.id}]`);
    assert.equal(await page.inputValue('#field-location'), `North paddock [${paddockId}]`);

    // The dashboard's map draws the farm, and its features hold the flock at the paddock.
    await page.goto(`${server.url}/farm`);
    await page.waitForSelector('[data-map][data-state=ready]');
    assert.ok(await page.isVisible('[data-map-section]'));
    const legend = await page.$$eval('input[data-map-layer]', (boxes) =>
      boxes.map((b) => (b as HTMLInputElement).value),
    );
    assert.ok(legend.includes('land') && legend.includes('group'), legend.join());
    const cookie = await cookieOf(context);
    const answer = await features(cookie, 'bbox=-72.61,42.29,-72.58,42.32&zoom=16');
    const marker = answer.body.features.find((f: any) => f.properties.name === 'Flock');
    assert.equal(marker.properties.kind, 'point');
    assert.equal(marker.properties.location, 'North paddock');
    const centre = read.body.data.attributes.intrinsic_geometry;
    assert.ok(Math.abs(marker.geometry.coordinates[0] - centre.lon) < 1e-6, 'at the paddock');
    assert.ok(Math.abs(marker.geometry.coordinates[1] - centre.lat) < 1e-6, 'at the paddock');
    // Switching the group layer off asks again without it.
    const loads = Number(await page.getAttribute('[data-map]', 'data-loads'));
    await page.uncheck('input[data-map-layer][value=group]');
    await page.waitForFunction(
      (n) => Number((document.querySelector('[data-map]') as HTMLElement).dataset.loads) > n,
      loads,
    );
    assert.deepEqual(errors, []);
    void home;
  } finally {
    await context.close();
  }
});

test('without script every page is whole: no map, the geometry a WKT textarea that saves', async () => {
  const { context, page } = await signedIn(ADMIN, { javaScriptEnabled: false });
  try {
    await page.goto(`${server.url}/farm`);
    assert.equal(await page.isVisible('[data-map-section]'), false);
    await page.goto(`${server.url}/farm/asset/land/new`);
    await page.fill('#field-name', 'Typed field');
    await page.selectOption('#field-land_type', 'field');
    await page.fill('#field-intrinsic_geometry', square(5, 5, 0.001));
    await Promise.all([page.waitForURL(/saved=created$/), page.click('form.record button[type=submit]')]);
    const id = /land\/([0-9a-f-]{36})/.exec(page.url())![1]!;
    const read = await request(`${server.url}/api/asset/land/${id}`, { token });
    assert.equal(read.body.data.attributes.intrinsic_geometry.value, square(5, 5, 0.001));
  } finally {
    await context.close();
  }
});

test('a view holds what meets its box, bounded, in the same number of statements however many there are', async () => {
  // Far from anything the other tests draw: a field in the box, one beside it, one far away.
  const inside = await land('Box field', square(30.001, 10.001, 0.001));
  await land('Beside field', square(30.2, 10.2, 0.001));
  await land('Far field', square(-60, -30, 0.001));
  const viewer = await signedIn(VIEWER);
  try {
    // Off the dashboard once its map has fetched its features (the server answers a fetch even after
    // the page has gone): only this test's requests count.
    await viewer.page.waitForLoadState('networkidle');
    await viewer.page.goto('about:blank');
    const cookie = await cookieOf(viewer.context);
    const view = 'bbox=30,10,30.1,10.1&zoom=14';
    const one = await features(cookie, view);
    assert.deepEqual(
      one.body.features.map((f: any) => [f.properties.kind, f.properties.name, f.properties.url]),
      [['shape', 'Box field', `/farm/asset/land/${inside.id}`]],
    );
    assert.equal(one.body.features[0].geometry.type, 'Polygon');
    // The layers asked for only: none of land's.
    assert.equal((await features(cookie, `${view}&layers=animal`)).body.features.length, 0);
    const few = await statementsOf(async () => void (await features(cookie, view)));

    // More than a view draws one by one (a worker's import of many small fields, through the API).
    const many = SHAPES_MAX + 50;
    const queue = Array.from({ length: many }, (_, i) => i);
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        for (let i = queue.shift(); i !== undefined; i = queue.shift())
          await land(`Plot ${i}`, square(30.01 + (i % 40) * 0.001, 10.01 + Math.floor(i / 40) * 0.001, 0.0008));
      }),
    );
    let answer: Awaited<ReturnType<typeof features>> | undefined;
    const crowded = await statementsOf(async () => void (answer = await features(cookie, view)));
    const shapes = answer!.body.features.filter((f: any) => f.properties.kind === 'shape');
    const counted = answer!.body.features
      .filter((f: any) => f.properties.kind === 'cluster')
      .reduce((n: number, f: any) => n + f.properties.count, 0);
    assert.ok(shapes.length <= SHAPES_MAX, `${shapes.length} shapes`);
    assert.equal(answer!.body.truncated, true);
    assert.equal(answer!.body.total, many + 1);
    const singles = answer!.body.features.filter((f: any) => f.properties.kind === 'point').length;
    assert.equal(shapes.length + counted + singles, many + 1, 'every field drawn or counted, once');
    // Closer, every field is big enough to draw, more than SHAPES_MAX of them: the cap cuts the
    // shapes, and those drawn are not counted again in the clusters (they were: 2,051 for 1,051).
    const cut = (await features(cookie, 'bbox=30,10,30.1,10.1&zoom=16')).body;
    const drawn = cut.features.filter((f: any) => f.properties.kind === 'shape').length;
    const rest = cut.features
      .filter((f: any) => f.properties.kind !== 'shape')
      .reduce((n: number, f: any) => n + (f.properties.count ?? 1), 0);
    assert.equal(drawn, SHAPES_MAX);
    assert.equal(drawn + rest, many + 1, `${drawn} drawn and ${rest} counted of ${many + 1}`);
    // Zoomed in on a corner: each field as its shape again.
    const close = await features(cookie, 'bbox=30.01,10.01,30.0125,10.0125&zoom=19');
    assert.ok(close.body.features.every((f: any) => f.properties.kind === 'shape'));
    assert.ok(close.body.features.length >= 4);
    // The session's own statements aside, the same number for one field and for a thousand.
    const own = (log: string[]) => log.filter((sql) => !/oauth|session/i.test(sql)).length;
    // A crowded view adds its clusters, one statement at most (the sign-in's own statements differ
    // between the databases by one: PostgreSQL's session refresh is not always run).
    assert.ok(own(crowded) - own(few) <= 1 && own(crowded) >= own(few), `${own(few)} then ${own(crowded)}`);
    const crowdedAgain = await statementsOf(async () => void (await features(cookie, 'bbox=30,10,30.1,10.1&zoom=13')));
    assert.equal(own(crowdedAgain), own(crowded));
  } finally {
    await viewer.context.close();
  }
});

test('the geometry widget keeps the WKT and the map in step: a shape moved, typed WKT drawn, a shape deleted, a point snapped to a field, my location', async () => {
  // Far from what the other tests draw; a browser that knows where it is.
  const [lon, lat, size] = [120.5, -33.2, 0.01];
  const field = await land('Snap field', square(lon, lat, size));
  const here = { longitude: 120.503, latitude: -33.197 };
  const { context, page, errors } = await signedIn(ADMIN, { geolocation: here, permissions: ['geolocation'] });
  try {
    await page.goto(`${server.url}/farm/asset/land/${field.id}/edit`);
    await page.waitForSelector('.geometry-widget .map[data-state=ready]');
    const map = page.locator('.geometry-widget .map');
    await map.scrollIntoViewIfNeeded();
    const box = (await map.boundingBox())!;
    const [cx, cy] = [box.x + box.width / 2, box.y + box.height / 2];
    const wkt = () => page.inputValue('#field-intrinsic_geometry');
    const changed = (from: string) =>
      page.waitForFunction(
        (f) => (document.querySelector('#field-intrinsic_geometry') as HTMLTextAreaElement).value !== f,
        from,
      );
    const points = (w: string) =>
      [...w.matchAll(/(-?\d+(?:\.\d+)?(?:e-?\d+)?)\s+(-?\d+(?:\.\d+)?(?:e-?\d+)?)/g)].map(
        (m) => [Number(m[1]), Number(m[2])] as const,
      );
    const drag = async (dx: number) => {
      await page.mouse.move(cx, cy);
      await page.mouse.down();
      await page.mouse.move(cx + dx, cy, { steps: 8 });
      await page.mouse.up();
    };

    // Move: the field dragged east; every corner moves by the same longitude, none in latitude.
    await page.click('[data-tool=move]');
    const before = await wkt();
    await drag(40);
    await changed(before);
    const [was, now] = [points(before), points(await wkt())];
    assert.equal(now.length, 5, await wkt());
    const east = now[0]![0] - was[0]![0];
    assert.ok(east > 0, 'moved east');
    for (const [i, [x, y]] of now.entries()) {
      assert.ok(Math.abs(x - was[i]![0] - east) < 1e-9 && Math.abs(y - was[i]![1]) < 1e-9, `corner ${i}: ${x} ${y}`);
    }

    // Typed WKT is drawn: a square around the whole view, typed, then dragged as a shape of the map.
    const typed = square(lon - 1, lat - 1, 2 + size);
    await page.fill('#field-intrinsic_geometry', typed);
    await drag(30);
    await changed(typed);
    const dragged = points(await wkt());
    assert.equal(dragged.length, 5, 'the typed square, moved: the map drew what was typed');
    assert.ok(dragged[0]![0] > lon - 1 && Math.abs(dragged[0]![1] - (lat - 1)) < 1e-9);

    // Delete: a click on the shape with the delete tool empties the field.
    await page.click('[data-tool=delete]');
    await page.mouse.click(cx, cy);
    await page.waitForFunction(
      () => (document.querySelector('#field-intrinsic_geometry') as HTMLTextAreaElement).value === '',
    );

    // Snap: a point placed 4 px inside the field's north edge (as saved, drawn around) lands on it.
    // The view still fits the field as it was, 24 px of padding around it (browser/map.ts viewFor).
    const merc = (deg: number) => Math.log(Math.tan(Math.PI / 4 + (deg * Math.PI) / 360));
    const tall = (merc(lat + size) - merc(lat)) / ((size * Math.PI) / 180);
    const half = Math.min(box.height - 48, (box.width - 48) * tall) / 2;
    await page.click('[data-tool=Point]');
    await page.mouse.click(cx, cy - half + 4);
    await changed('');
    const [[, north]] = points(await wkt()) as Array<readonly [number, number]>;
    assert.ok(Math.abs(north! - (lat + size)) < 1e-9, `snapped to the north edge: ${await wkt()}`);

    // My location, where the browser allows it: a point where the browser says it is.
    await page.click('[data-tool=clear]');
    await page.click('[data-tool=here]');
    await changed('');
    const [[x, y]] = points(await wkt()) as Array<readonly [number, number]>;
    assert.ok(Math.abs(x! - here.longitude) < 1e-7 && Math.abs(y! - here.latitude) < 1e-7, await wkt());
    assert.deepEqual(errors, []);
  } finally {
    await context.close();
  }
});
