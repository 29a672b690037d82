// The front door and the API documentation (operations issue, item 7), in Debian's Chromium:
// both pages render with no console error; the front door names the farm and the version, says
// whether the browser is signed in, and links to the API, its documentation and the sign-in page
// (once signed in, `/` leads to the web interface);
// /api/openapi.json describes every served bundle and none of a switched-off module.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { chromium, type Browser, type Page } from 'playwright-core';
import { startTestServer, ADMIN, type TestServer } from '../support/server.ts';
import { request } from '../support/http.ts';
import { TILTH_VERSION } from '../../runtime/version.ts';

let server: TestServer;
let browser: Browser;

before(async () => {
  server = await startTestServer({ env: { TILTH_FARM_NAME: 'Willow Creek' } });
  browser = await chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
});
after(async () => {
  await browser?.close();
  await server?.close();
});

/** A page that records every console error and uncaught exception. */
async function openPage(): Promise<{ page: Page; errors: string[] }> {
  const page = await browser.newPage();
  const errors: string[] = [];
  page.on('console', (m) => m.type() === 'error' && errors.push(m.text()));
  page.on('pageerror', (e) => errors.push(e.message));
  return { page, errors };
}

test('the front door names the farm and version, knows who is signed in, and links onwards', async () => {
  const { page, errors } = await openPage();
  try {
    await page.goto(`${server.url}/`);
    assert.equal(await page.textContent('h1'), 'Willow Creek');
    assert.ok((await page.textContent('main'))!.includes(TILTH_VERSION));
    await page.waitForFunction(() => document.getElementById('session')!.textContent === 'Not signed in.');
    for (const href of ['/api', '/api/docs']) assert.ok(await page.$(`a[href="${href}"]`), `a link to ${href}`);

    // Sign in through the link: the login and consent pages, then back to `/`, which leads a
    // signed-in browser on to the web interface's dashboard (issue 38).
    await page.click('#sign-in');
    await page.fill('input[name=username]', ADMIN.name);
    await page.fill('input[name=password]', ADMIN.password);
    await page.click('button[type=submit]');
    await page.click('button[value=allow]');
    await page.waitForURL(`${server.url}/farm`);
    assert.match((await page.textContent('header'))!, /Signed in as admin/);
    // Its script still knows who is signed in (the session cookie is the whole site's).
    assert.equal((await (await page.request.get(`${server.url}/oauth/session`)).json()).name, 'admin');
    assert.deepEqual(errors, [], 'no console errors');
  } finally {
    await page.close();
  }
});

test('the API documentation renders the OpenAPI document, with nothing from a CDN', async () => {
  const { page, errors } = await openPage();
  const foreign: string[] = [];
  page.on('request', (r) => !r.url().startsWith(server.url) && foreign.push(r.url()));
  try {
    const docs = await page.goto(`${server.url}/api/docs`);
    const headers = docs!.headers();
    assert.match(
      headers['content-security-policy'] ?? '',
      /frame-ancestors 'none'/,
      'the docs page has its own Content-Security-Policy',
    );
    assert.equal(headers['x-frame-options'], 'SAMEORIGIN', "and helmet's headers");
    assert.equal(headers['x-content-type-options'], 'nosniff');
    await page.waitForSelector('.swagger-ui .info .title', { timeout: 30_000 });
    assert.match((await page.textContent('.swagger-ui .info .title'))!, /Tilth/);
    await page.waitForFunction(() =>
      [...document.querySelectorAll('.opblock-tag')].some((t) => /logs/i.test(t.textContent ?? '')),
    );
    assert.deepEqual(errors, [], 'no console errors');
    assert.deepEqual(foreign, [], 'every request stays on this server');
  } finally {
    await page.close();
  }
});

test('/api/openapi.json is OpenAPI 3.1 with every served bundle and none of a switched-off module', async () => {
  const res = await request(`${server.url}/api/openapi.json`);
  assert.equal(res.status, 200);
  const doc = JSON.parse(res.text);
  assert.equal(doc.openapi, '3.1.0');
  assert.equal(doc.servers[0].url, server.url);
  assert.ok(doc.paths['/api/log/activity'].post);
  assert.ok(doc.paths['/api/asset/animal/{id}'].patch);
  assert.ok(doc.components.schemas['log--harvest'].allOf, 'the resource schema of /api/schema');
  assert.equal(doc.paths['/api/log/sale'], undefined, 'the ledger module is off');
  assert.ok(!res.text.includes('"$ref":"#/definitions/'), 'every reference resolves within the document');
});
