// The web interface is accessible (issue 38, "Quality that users notice"): axe-core, run in
// Chromium against a real server, reports no serious or critical violation on any page kind.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { type Browser, type Page } from 'playwright-core';
import { launchChromium } from '../support/browser.ts';
import { startTestServer, ADMIN, type TestServer } from '../support/server.ts';
import { passwordToken, request } from '../support/http.ts';
import { createUser } from '../../runtime/accounts/users.ts';

const AXE = createRequire(import.meta.url).resolve('axe-core/axe.min.js');

let server: TestServer;
let browser: Browser;
let token: string;

before(async () => {
  server = await startTestServer({ env: { TILTH_FARM_NAME: 'Willow Creek' } });
  token = await passwordToken(server.url, ADMIN.name, ADMIN.password);
  browser = await launchChromium();
});
after(async () => {
  await browser?.close();
  await server?.close();
});

interface Violation {
  id: string;
  impact: string | null;
  help: string;
  nodes: Array<{ target: unknown[] }>;
}

/** axe-core's serious and critical violations on the page shown, as "rule: help (targets)". */
async function seriousViolations(page: Page): Promise<string[]> {
  // The pages' CSP allows no script at all: the context bypasses it for axe's injected script only.
  await page.addScriptTag({ path: AXE });
  const violations = (await page.evaluate(async () => {
    const axe = (globalThis as unknown as { axe: { run: (o: unknown) => Promise<{ violations: unknown[] }> } }).axe;
    return (await axe.run({ resultTypes: ['violations'] })).violations;
  })) as Violation[];
  return violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.id}: ${v.help} (${v.nodes.map((n) => n.target.join(' ')).join(', ')})`);
}

test('axe-core finds no serious or critical violation on any page kind, at phone and desktop widths', async () => {
  const res = await request(`${server.url}/api/log/activity`, {
    method: 'POST',
    token,
    json: {
      data: {
        type: 'log--activity',
        attributes: { name: 'Walk the fences', status: 'pending', timestamp: '2024-03-01T10:00:00+00:00' },
      },
    },
  });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  const id = res.body.data.id;
  // A record's page beside its fields: a location with something in it and its logs, a term with
  // its uses, an image's thumbnail, and two revisions to compare.
  const post = async (path: string, data: unknown) => {
    const created = await request(`${server.url}/api/${path}`, { method: 'POST', token, json: { data } });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    return created.body.data as { type: string; id: string; attributes: Record<string, any> };
  };
  const land = await post('asset/land', {
    type: 'asset--land',
    // A shape, so that the dashboard's map, the field's own small map and the forms' geometry
    // widget (issue 42 §1) are drawn, and checked, as a farmer with fields sees them.
    attributes: {
      name: 'Home field',
      land_type: 'field',
      intrinsic_geometry: { value: 'POLYGON ((10 50, 10.01 50, 10.01 50.01, 10 50.01, 10 50))' },
    },
  });
  const term = await post('taxonomy_term/log_category', {
    type: 'taxonomy_term--log_category',
    attributes: { name: 'Fences' },
  });
  const tractor = await post('asset/equipment', { type: 'asset--equipment', attributes: { name: 'Tractor' } });
  await post('log/activity', {
    type: 'log--activity',
    attributes: { name: 'Park the tractor', status: 'done', is_movement: true, timestamp: '2024-02-01T10:00:00+00:00' },
    relationships: {
      asset: { data: [{ type: tractor.type, id: tractor.id }] },
      location: { data: [{ type: land.type, id: land.id }] },
      category: { data: [{ type: term.type, id: term.id }] },
    },
  });
  const png = Buffer.from(
    '89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082',
    'hex',
  );
  const uploaded = await fetch(`${server.url}/api/asset/land/${land.id}/image`, {
    method: 'POST',
    headers: {
      Authorization: `Bearer ${token}`,
      'Content-Type': 'application/octet-stream',
      'Content-Disposition': 'attachment; filename="field.png"',
    },
    body: png,
  });
  assert.equal(uploaded.status, 200, await uploaded.text());
  // helper `views`: a sensor with a stream of readings, a view saved (the dashboard lists it).
  const sensor = await post('asset/sensor', { type: 'asset--sensor', attributes: { name: 'Soil probe' } });
  const sensorKeys = (await request(`${server.url}/api/asset/sensor/${sensor.id}`, { token })).body.data.attributes;
  const readings = await fetch(
    `${server.url}/farm/sensor/listener/${sensorKeys.public_key}?private_key=${sensorKeys.private_key}`,
    {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify([1, 2, 3].map((i) => ({ timestamp: 1_700_000_000 + i * 600, moisture: 20 + i }))),
    },
  );
  assert.equal(readings.status, 201);
  const stream = (await request(`${server.url}/api/asset/sensor/${sensor.id}`, { token })).body.data.relationships
    .data_stream.data[0] as { id: string };
  const revision = async () =>
    (await request(`${server.url}/api/log/activity/${id}`, { token })).body.data.attributes
      .drupal_internal__revision_id as number;
  const firstRevision = await revision();
  const renamed = await request(`${server.url}/api/log/activity/${id}`, {
    method: 'PATCH',
    token,
    json: { data: { type: 'log--activity', id, attributes: { name: 'Walk all the fences' } } },
  });
  assert.equal(renamed.status, 200, JSON.stringify(renamed.body));
  const secondRevision = await revision();
  for (const viewport of [
    { width: 360, height: 740 },
    { width: 1440, height: 900 },
  ]) {
    const context = await browser.newContext({ bypassCSP: true, viewport });
    const page = await context.newPage();
    try {
      const found: string[] = [];
      /** Pages whose map axe must see drawn (the script shows its section once it runs). */
      const maps = new Set(['/farm', `/farm/asset/land/${land.id}`, '/farm/log/activity/new']);
      /**
       * At the desktop's width, one page of each layout (the header's navigation opens out, tables
       * and forms widen; nothing else changes with the width): every page kind at the phone's.
       */
      const desktop = new Set([
        '/farm/sign-in',
        '/farm',
        '/farm/log',
        `/farm/log/activity/${id}`,
        `/farm/log/activity/${id}/edit`,
        `/farm/asset/land/${land.id}`,
        '/farm/people',
      ]);
      const check = async (path: string) => {
        if (viewport.width > 360 && !desktop.has(path)) return;
        await page.goto(`${server.url}${path}`);
        if (maps.has(path)) await page.waitForSelector('.ol-viewport');
        for (const v of await seriousViolations(page)) found.push(`${viewport.width}px ${path}: ${v}`);
      };
      await check('/farm/sign-in');
      // A failed sign-in: the form with its alert.
      await page.fill('#username', ADMIN.name);
      await page.fill('#password', 'not-the-password');
      await page.click('button[type=submit]');
      for (const v of await seriousViolations(page)) found.push(`${viewport.width}px sign-in refused: ${v}`);
      await page.fill('#password', ADMIN.password);
      await page.click('button[type=submit]');
      await page.waitForURL(`${server.url}/farm`);
      // helper `views`: a saved view, shared, on the dashboard.
      const csrf = await page.getAttribute('header.top form input[name=csrf_token]', 'value');
      const saved = await page.request.post(`${server.url}/farm/views`, {
        form: { csrf_token: csrf!, name: `Pending ${viewport.width}`, path: '/farm/log', query: 'status=pending' },
        maxRedirects: 0,
      });
      assert.equal(saved.status(), 303);
      for (const path of [
        '/farm',
        '/farm/log',
        '/farm/log/activity',
        `/farm/log/activity/${id}`,
        '/farm/log/activity/new',
        `/farm/log/activity/${id}/edit`,
        `/farm/log/activity/${id}/delete`,
        `/farm/log/activity/${id}/revisions?from=${firstRevision}&to=${secondRevision}`,
        `/farm/asset/land/${land.id}`,
        `/farm/asset/land/${land.id}?logs_before=1900000000.999999`,
        `/farm/taxonomy_term/log_category/${term.id}`,
        '/farm/asset/equipment/new',
        '/farm/account/password',
        '/farm/log/nonsense',
        // helper `views` (issue 42 §5, §6): a timeline, a stream's readings, a list with its view form.
        `/farm/asset/equipment/${tractor.id}/timeline`,
        `/farm/data_stream/basic/${stream.id}`,
        `/farm/asset/sensor/${sensor.id}`,
        '/farm/log/activity?col=name&col=status',
      ])
        await check(path);
      // A form refused with 422: its messages beside the fields.
      await page.goto(`${server.url}/farm/log/activity/new`);
      await page.fill('#field-name', 'Broken');
      await page.fill('#field-geometry', 'POINT (not a point)');
      await page.click('form.record button[type=submit]');
      await page.waitForSelector('#field-geometry-error');
      for (const v of await seriousViolations(page)) found.push(`${viewport.width}px form with errors: ${v}`);
      // A stale edit: the conflict page.
      await page.goto(`${server.url}/farm/log/activity/${id}/edit`);
      const patched = await request(`${server.url}/api/log/activity/${id}`, {
        method: 'PATCH',
        token,
        json: { data: { type: 'log--activity', id, attributes: { name: `Walk the fences ${viewport.width}` } } },
      });
      assert.equal(patched.status, 200, JSON.stringify(patched.body));
      await page.fill('#field-name', 'Walk the hedges');
      await page.click('form.record button[type=submit]');
      await page.waitForSelector('section[aria-labelledby=conflict]');
      for (const v of await seriousViolations(page)) found.push(`${viewport.width}px conflict page: ${v}`);
      // People: the list, the new account's form (and refused: its message beside the field), an
      // account's page, and the page that shows a new password once.
      const person = await createUser(server.ctx.db.knex, {
        name: `axe-person-${viewport.width}`,
        password: 'axe-person-password',
        roles: ['farm_worker'],
      });
      for (const path of ['/farm/people', '/farm/people/new', `/farm/people/${person.uuid}`]) await check(path);
      await page.goto(`${server.url}/farm/people/new`);
      await page.fill('#name', ADMIN.name);
      await page.click('form.record button[type=submit]');
      await page.waitForSelector('#name-error');
      for (const v of await seriousViolations(page)) found.push(`${viewport.width}px people form with errors: ${v}`);
      await page.goto(`${server.url}/farm/people/${person.uuid}`);
      await page.click('button:text("Reset the password")');
      await page.waitForSelector('#password');
      for (const v of await seriousViolations(page)) found.push(`${viewport.width}px new password page: ${v}`);
      assert.deepEqual(found, []);
    } finally {
      await context.close();
    }
  }
});
