// The authorization code flow in a real browser (Debian's Chromium driven by playwright-core):
// open /oauth/authorize, sign in, see the consent page naming the client and the scopes, allow,
// and land on a loopback redirect URI served by this test with code and state; exchange the code
// with PKCE and use the token. Chromium enforces the pages' CSP, form-action included, on the
// redirect that follows the consent form; any CSP violation fails the test.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { chromium, type Browser, type Page } from 'playwright-core';
import { startTestServer, ADMIN, type TestServer } from '../support/server.ts';
import { addClient, addUser, api, pkce, token } from './helpers.ts';

let server: TestServer;
let browser: Browser;
let callback: Server;
let callbackBase: string;
/** Requests to the callback path (the browser also asks for /favicon.ico). */
const received: URL[] = [];

before(async () => {
  server = await startTestServer();
  browser = await chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  // The "native app": a loopback listener on a port the OS picks (RFC 8252 §7.3).
  callback = createServer((req, res) => {
    const url = new URL(req.url!, callbackBase);
    if (url.pathname === '/callback') received.push(url);
    res
      .writeHead(200, { 'Content-Type': 'text/html' })
      .end('<!DOCTYPE html><title>Done</title><p>You can close this window.</p>');
  });
  await new Promise<void>((resolve) => callback.listen(0, '127.0.0.1', resolve));
  callbackBase = `http://127.0.0.1:${(callback.address() as AddressInfo).port}`;
});
after(async () => {
  await browser?.close();
  // When before() failed early (no browser) there is no callback server, and nothing to wait for.
  if (callback) await new Promise((resolve) => callback.close(resolve));
  await server?.close();
});

/** A page that records CSP violations reported on the console. */
async function newPage(): Promise<{ page: Page; violations: string[] }> {
  const context = await browser.newContext();
  const page = await context.newPage();
  page.setDefaultTimeout(15_000);
  const violations: string[] = [];
  page.on('console', (m) => {
    if (/Content Security Policy|Refused to/i.test(m.text())) violations.push(m.text());
  });
  return { page, violations };
}

test('allow: the browser lands on the loopback redirect with code and state; the code becomes tokens', async () => {
  const { client } = await addClient(server, {
    label: 'Field Notebook',
    confidential: false,
    grantTypes: ['authorization_code', 'refresh_token'],
    redirectUris: ['http://127.0.0.1/callback'],
    defaultScopes: ['farm_worker'],
  });
  const worker = await addUser(server, ['farm_worker']);
  const { verifier, challenge } = pkce();
  const redirectUri = `${callbackBase}/callback`;
  const query = new URLSearchParams({
    response_type: 'code',
    client_id: client.clientId,
    redirect_uri: redirectUri,
    scope: 'farm_worker',
    state: 'state-123',
    code_challenge: challenge,
    code_challenge_method: 'S256',
  });
  const { page, violations } = await newPage();

  await page.goto(`${server.url}/oauth/authorize?${query}`);
  assert.match((await page.textContent('h1')) ?? '', /Sign in to authorize Field Notebook/);
  await page.fill('#username', worker.name);
  await page.fill('#password', worker.password);
  await Promise.all([page.waitForURL(/\/oauth\/authorize\?/), page.click('button[type=submit]')]);

  const consent = (await page.textContent('main')) ?? '';
  assert.match(consent, /Authorize Field Notebook\?/);
  assert.match(consent, /farm_worker \(Worker\)/);
  assert.match(consent, new RegExp(worker.name));
  assert.match(consent, new RegExp(redirectUri.replace(/[.]/g, '\\.')));

  await Promise.all([page.waitForURL((url) => url.href.startsWith(callbackBase)), page.click('button[value=allow]')]);
  assert.equal(await page.title(), 'Done');
  const landed = received.at(-1)!;
  assert.equal(landed.pathname, '/callback');
  assert.equal(landed.searchParams.get('state'), 'state-123');
  const code = landed.searchParams.get('code');
  assert.ok(code);
  assert.deepEqual(violations, []);

  const res = await token(server, {
    grant_type: 'authorization_code',
    code,
    client_id: client.clientId,
    redirect_uri: redirectUri,
    code_verifier: verifier,
  });
  assert.equal(res.status, 200, res.text);
  assert.equal(res.body.scope, 'farm_worker');
  const me = await api(`${server.url}/api`, res.body.access_token);
  assert.equal(me.status, 200);
  assert.equal(me.body.meta.links.me.meta.id, worker.uuid);
  await page.context().close();
});

test('deny: the browser lands on the loopback redirect with error=access_denied and the state', async () => {
  const redirectUri = `${callbackBase}/callback`;
  const query = new URLSearchParams({
    response_type: 'code',
    client_id: 'farm',
    redirect_uri: redirectUri,
    scope: 'farm_manager',
    state: 'no-thanks',
  });
  const { page, violations } = await newPage();
  await page.goto(`${server.url}/oauth/authorize?${query}`);
  await page.fill('#username', ADMIN.name);
  await page.fill('#password', ADMIN.password);
  await Promise.all([page.waitForURL(/\/oauth\/authorize\?/), page.click('button[type=submit]')]);
  assert.match((await page.textContent('main')) ?? '', /Authorize Farm default\?/);
  await Promise.all([page.waitForURL((url) => url.href.startsWith(callbackBase)), page.click('button[value=deny]')]);
  const landed = received.at(-1)!;
  assert.equal(landed.searchParams.get('error'), 'access_denied');
  assert.equal(landed.searchParams.get('state'), 'no-thanks');
  assert.equal(landed.searchParams.get('code'), null);
  assert.deepEqual(violations, []);
  await page.context().close();
});

test('a wrong password shows the login page again with a message', async () => {
  const query = new URLSearchParams({
    response_type: 'code',
    client_id: 'farm',
    redirect_uri: `${callbackBase}/callback`,
  });
  const { page, violations } = await newPage();
  await page.goto(`${server.url}/oauth/authorize?${query}`);
  await page.fill('#username', ADMIN.name);
  await page.fill('#password', 'wrong password');
  await Promise.all([page.waitForLoadState('load'), page.click('button[type=submit]')]);
  assert.match((await page.textContent('.error')) ?? '', /wrong/);
  assert.deepEqual(violations, []);
  await page.context().close();
});
