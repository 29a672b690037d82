// The web interface is accessible (issue 38, "Quality that users notice"): axe-core, run in
// Chromium against a real server, reports no serious or critical violation on any page kind.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { chromium, type Browser, type Page } from 'playwright-core';
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
  browser = await chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking'],
  });
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
  for (const viewport of [
    { width: 360, height: 740 },
    { width: 1440, height: 900 },
  ]) {
    const context = await browser.newContext({ bypassCSP: true, viewport });
    const page = await context.newPage();
    try {
      const found: string[] = [];
      const check = async (path: string) => {
        await page.goto(`${server.url}${path}`);
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
      for (const path of [
        '/farm',
        '/farm/log',
        '/farm/log/activity',
        `/farm/log/activity/${id}`,
        '/farm/log/activity/new',
        `/farm/log/activity/${id}/edit`,
        `/farm/log/activity/${id}/delete`,
        '/farm/asset/equipment/new',
        '/farm/account/password',
        '/farm/log/nonsense',
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
