// A record's page (issue 38 screen 4) in Debian's Chromium against a real server: its revisions
// (who, when, message) and what changed between two; an asset's logs newest first and paged, a
// location's contents and a term's uses, each in the same statements whatever the rows; files and
// images with thumbnails and downloads, for readers of files only; long text rendered as the API's
// `processed`; and dates in the farm's configured locale and time zone.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { type Browser, type BrowserContext, type Page } from 'playwright-core';
import { launchChromium } from '../support/browser.ts';
import { startTestServer, ADMIN, type TestServer } from '../support/server.ts';
import { passwordToken, request } from '../support/http.ts';
import { createUser } from '../../runtime/accounts/users.ts';
import { ConfigError, loadConfig } from '../../runtime/config.ts';

let server: TestServer;
let browser: Browser;
let token: string;
// An account administrator: users, but no farm records and no files.
const NOBODY = { name: 'nora-accounts', password: 'nora-password-1' };

before(async () => {
  server = await startTestServer({ env: { TILTH_FARM_NAME: 'Willow Creek' } });
  token = await passwordToken(server.url, ADMIN.name, ADMIN.password);
  await createUser(server.ctx.db.knex, { name: NOBODY.name, password: NOBODY.password, roles: ['farm_account_admin'] });
  browser = await launchChromium();
});
after(async () => {
  await browser?.close();
  await server?.close();
});

/** A signed-in browser with every page error and dialog recorded. */
async function signedIn(
  who: { name: string; password: string } = ADMIN,
  on: TestServer = server,
): Promise<{ context: BrowserContext; page: Page; errors: string[] }> {
  const context = await browser.newContext();
  const page = await context.newPage();
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  page.on('dialog', (d) => {
    errors.push(`a dialog opened: ${d.message()}`);
    void d.dismiss();
  });
  await page.goto(`${on.url}/farm/sign-in`);
  await page.fill('#username', who.name);
  await page.fill('#password', who.password);
  await page.click('button[type=submit]');
  await page.waitForURL(`${on.url}/farm`);
  return { context, page, errors };
}

async function post(path: string, data: unknown, on: TestServer = server, bearer = token) {
  const res = await request(`${on.url}/api/${path}`, { method: 'POST', token: bearer, json: { data } });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body.data as { type: string; id: string; attributes: Record<string, any> };
}

const iso = (s: number) => new Date(s * 1000).toISOString().replace(/\.\d{3}Z$/, '+00:00');

/**
 * The statements a GET of `path` runs, and its page's HTML. The page is left first (the dashboard's
 * map fetches its features after load, and those are not this page's), and the path is fetched once
 * uncounted: the first request after writes reads the session again (kept on SQLite until the
 * database changes, oauth/session.ts), which is not a statement per row.
 */
async function statements(page: Page, path: string): Promise<{ count: number; html: string }> {
  if (page.url() !== 'about:blank') {
    await page.waitForLoadState('networkidle');
    await page.goto('about:blank');
  }
  assert.equal((await page.request.get(`${server.url}${path}`)).status(), 200, path);
  const knex = server.ctx.db.knex;
  const log: string[] = [];
  const listener = (q: { sql: string }) => log.push(q.sql);
  knex.on('query', listener);
  try {
    const res = await page.request.get(`${server.url}${path}`);
    assert.equal(res.status(), 200, path);
    return { count: log.length, html: await res.text() };
  } finally {
    knex.removeListener('query', listener);
  }
}

test('revisions: who, when and message, and what changed between two picked on the page', async () => {
  const log = await post('log/activity', {
    type: 'log--activity',
    attributes: { name: 'Weed the beds', status: 'pending', notes: { value: 'Row one', format: 'default' } },
  });
  const patch = async (attributes: Record<string, unknown>) => {
    const res = await request(`${server.url}/api/log/activity/${log.id}`, {
      method: 'PATCH',
      token,
      json: { data: { type: 'log--activity', id: log.id, attributes } },
    });
    assert.equal(res.status, 200, JSON.stringify(res.body));
  };
  await patch({ name: 'Weed the beds twice', revision_log_message: 'Twice: it rained' });
  await patch({ status: 'done', notes: { value: 'Rows one and two', format: 'default' } });
  const { context, page, errors } = await signedIn();
  try {
    await page.goto(`${server.url}/farm/log/activity/${log.id}`);
    const rows = await page.$$eval('section[aria-labelledby=revisions] tbody tr', (trs) =>
      trs.map((tr) => [...tr.querySelectorAll('td')].slice(2).map((td) => td.textContent!.trim())),
    );
    assert.equal(rows.length, 3, 'three saves, newest first');
    assert.deepEqual(
      rows.map((r) => [r[2], r[3]]),
      [
        [ADMIN.name, ''],
        [ADMIN.name, 'Twice: it rained'],
        [ADMIN.name, ''],
      ],
    );
    assert.match(rows[0]![1]!, /20\d\d/, 'when');
    const numbers = await page.$$eval('section[aria-labelledby=revisions] input[name=to]', (inputs) =>
      inputs.map((i) => Number((i as HTMLInputElement).value)),
    );
    // Pick the first and the newest: every change between them.
    await page.check(`input[name=from][value="${numbers[2]}"]`);
    await page.check(`input[name=to][value="${numbers[0]}"]`);
    await page.click('section[aria-labelledby=revisions] button[type=submit]');
    await page.waitForURL(/\/revisions\?/);
    assert.match((await page.textContent('h1'))!, /Weed the beds twice: revision \d+ to \d+/);
    const diff = await page.$$eval('section[aria-labelledby=diff] tbody tr', (trs) =>
      trs.map((tr) => [...tr.children].map((c) => c.textContent!.trim())),
    );
    const byField = new Map(diff.map((r) => [r[0], r.slice(1)]));
    assert.deepEqual(byField.get('Name'), ['Weed the beds', 'Weed the beds twice']);
    assert.deepEqual(byField.get('Notes'), ['Row one', 'Rows one and two']);
    assert.deepEqual(byField.get('Status'), ['Pending', 'Done']);
    assert.equal(byField.has('Timestamp'), false, 'a field that did not change is not listed');
    assert.match(
      (await page.textContent('section[aria-labelledby=diff] ul'))!,
      new RegExp(`Revision ${numbers[2]}: saved by admin on .*20\\d\\d.*Revision ${numbers[0]}: saved by admin on`),
    );

    // The row's own "Changes" link: what one save changed.
    await page.goto(`${server.url}/farm/log/activity/${log.id}`);
    await page.click(`a[aria-label="What revision ${numbers[1]} changed"]`);
    await page.waitForURL(new RegExp(`/revisions\\?from=${numbers[2]}&to=${numbers[1]}$`));
    const one = await page.$$eval('section[aria-labelledby=diff] tbody th', (ths) => ths.map((t) => t.textContent));
    assert.deepEqual(one, ['Name'], 'the save changed the name only; who, when and why are above the table');
    assert.match(
      (await page.textContent('section[aria-labelledby=diff] ul'))!,
      /saved by admin on .*“Twice: it rained”/,
    );

    // A revision of another record, or the same twice: no page of its own.
    const other = await post('log/activity', { type: 'log--activity', attributes: { name: 'Other' } });
    const otherRevision = (await request(`${server.url}/api/log/activity/${other.id}`, { token })).body.data.attributes
      .drupal_internal__revision_id;
    const res404 = await page.request.get(
      `${server.url}/farm/log/activity/${log.id}/revisions?from=${numbers[2]}&to=${otherRevision}`,
    );
    assert.equal(res404.status(), 404);
    const res400 = await page.request.get(
      `${server.url}/farm/log/activity/${log.id}/revisions?from=${numbers[0]}&to=${numbers[0]}`,
    );
    assert.equal(res400.status(), 400);
    assert.deepEqual(errors, []);
  } finally {
    await context.close();
  }
  // Whoever may not read logs may not read their revisions either.
  const nobody = await signedIn(NOBODY);
  try {
    const res = await nobody.page.request.get(`${server.url}/farm/log/activity/${log.id}/revisions?from=1&to=2`);
    assert.equal(res.status(), 403);
    assert.doesNotMatch(await res.text(), /Weed the beds/);
  } finally {
    await nobody.context.close();
  }
});

test('an asset’s logs newest first across log types, paged, in the same statements for 32 logs as for 2', async () => {
  const tractor = await post('asset/equipment', { type: 'asset--equipment', attributes: { name: 'Red tractor' } });
  const start = 1_700_000_000;
  const names: string[] = [];
  const logOf = async (n: number) => {
    // Two log types, and every fourth pair at the same date (ties broken the same way on every page).
    const bundle = n % 2 ? 'observation' : 'maintenance';
    const name = `Tractor log ${String(n).padStart(2, '0')}`;
    names.push(name);
    await post(`log/${bundle}`, {
      type: `log--${bundle}`,
      attributes: {
        name,
        status: 'done',
        timestamp: iso(start + Math.floor(n / 4) * 4 * 3600 + (n % 4 === 3 ? 0 : n * 60)),
      },
      relationships: { asset: { data: [{ type: tractor.type, id: tractor.id }] } },
    });
  };
  const { context, page, errors } = await signedIn();
  try {
    for (let n = 0; n < 2; n++) await logOf(n);
    const path = `/farm/asset/equipment/${tractor.id}`;
    const few = await statements(page, path);
    for (let n = 2; n < 32; n++) await logOf(n);
    const many = await statements(page, path);
    assert.equal(many.count, few.count, `statements for 32 logs (${many.count}) = for 2 (${few.count})`);

    // Every log once, newest first, over two pages; the API's order is the truth.
    const api = async (bundle: string) =>
      (await request(`${server.url}/api/log/${bundle}?filter[asset.id]=${tractor.id}`, { token })).body.data as Array<{
        attributes: { name: string; timestamp: string; drupal_internal__id: number };
      }>;
    const expected = [...(await api('observation')), ...(await api('maintenance'))]
      .sort(
        (a, b) =>
          Date.parse(b.attributes.timestamp) - Date.parse(a.attributes.timestamp) ||
          b.attributes.drupal_internal__id - a.attributes.drupal_internal__id,
      )
      .map((l) => l.attributes.name);
    assert.equal(expected.length, 32);
    await page.goto(`${server.url}${path}`);
    const shown = async () =>
      page.$$eval('section[aria-labelledby=logs] tbody tr td:nth-child(2)', (tds) => tds.map((t) => t.textContent!));
    const first = await shown();
    assert.equal(first.length, 20);
    await page.click('section[aria-labelledby=logs] a[rel=next]');
    await page.waitForURL(/logs_before=/);
    const second = await shown();
    assert.deepEqual([...first, ...second], expected);
    assert.equal(await page.$('section[aria-labelledby=logs] a[rel=next]'), null, 'no third page');
    assert.match(
      (await page.textContent('section[aria-labelledby=logs] tbody'))!,
      /Observation[\s\S]*Maintenance|Maintenance[\s\S]*Observation/,
    );
    assert.deepEqual(errors, []);
  } finally {
    await context.close();
  }
});

test('a location shows what is in it now; a term shows the records that use it, in the same statements for more', async () => {
  const paddock = await post('asset/land', {
    type: 'asset--land',
    attributes: { name: 'East paddock', land_type: 'paddock' },
  });
  const category = await post('taxonomy_term/log_category', {
    type: 'taxonomy_term--log_category',
    attributes: { name: 'Grazing' },
  });
  const move = async (name: string) => {
    const asset = await post('asset/equipment', { type: 'asset--equipment', attributes: { name } });
    await post('log/activity', {
      type: 'log--activity',
      attributes: { name: `Move ${name}`, status: 'done', is_movement: true, timestamp: iso(1_700_000_000) },
      relationships: {
        asset: { data: [{ type: asset.type, id: asset.id }] },
        location: { data: [{ type: paddock.type, id: paddock.id }] },
        category: { data: [{ type: category.type, id: category.id }] },
      },
    });
  };
  const { context, page, errors } = await signedIn();
  try {
    await move('Water trough');
    await move('Feeder');
    const few = await statements(page, `/farm/asset/land/${paddock.id}`);
    const fewTerm = await statements(page, `/farm/taxonomy_term/log_category/${category.id}`);
    for (let n = 0; n < 12; n++) await move(`Hurdle ${n}`);
    const many = await statements(page, `/farm/asset/land/${paddock.id}`);
    const manyTerm = await statements(page, `/farm/taxonomy_term/log_category/${category.id}`);
    assert.equal(
      many.count,
      few.count,
      `a location's page: ${many.count} statements for 14 assets, ${few.count} for 2`,
    );
    assert.equal(manyTerm.count, fewTerm.count, `a term's page: ${manyTerm.count} for 14 logs, ${fewTerm.count} for 2`);

    await page.goto(`${server.url}/farm/asset/land/${paddock.id}`);
    const inside = await page.$$eval('section[aria-labelledby=contents] tbody tr td:first-child', (tds) =>
      tds.map((t) => t.textContent),
    );
    assert.equal(inside.length, 14);
    assert.deepEqual(inside.slice(0, 2), ['Feeder', 'Hurdle 0'], 'by name');
    assert.ok(inside.includes('Water trough'));
    // The movements name the paddock: they are its logs too.
    assert.match((await page.textContent('section[aria-labelledby=logs]'))!, /Move Water trough/);

    await page.goto(`${server.url}/farm/taxonomy_term/log_category/${category.id}`);
    const uses = await page.$$eval('section[aria-labelledby=uses] tbody tr td:first-child', (tds) =>
      tds.map((t) => t.textContent!),
    );
    assert.equal(uses.length, 10, 'the first ten of each type');
    assert.ok(uses.every((u) => u.startsWith('Move ')));
    assert.match((await page.textContent('section[aria-labelledby=uses]'))!, /and more/);
    const link = await page.getAttribute('section[aria-labelledby=uses] tbody a', 'href');
    assert.match(link!, /^\/farm\/log\/activity\/[0-9a-f-]{36}$/);
    assert.deepEqual(errors, []);
  } finally {
    await context.close();
  }
});

test('files and images: a thumbnail of the image and download links, for readers of files only', async () => {
  const log = await post('log/observation', { type: 'log--observation', attributes: { name: 'Broken gate' } });
  const upload = async (field: string, body: BodyInit, filename: string) => {
    const res = await fetch(`${server.url}/api/log/observation/${log.id}/${field}`, {
      method: 'POST',
      headers: {
        Authorization: `Bearer ${token}`,
        'Content-Type': 'application/octet-stream',
        'Content-Disposition': `attachment; filename="${filename}"`,
      },
      body,
    });
    assert.equal(res.status, 200, await res.clone().text());
    return ((await res.json()) as { data: Array<{ id: string }> }).data.at(-1)!.id;
  };
  const png = Buffer.from(
    '89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082',
    'hex',
  );
  const image = await upload('image', png, 'gate.png');
  const file = await upload('file', '<html><script>window.__pwned = 1</script></html>', 'report.txt');
  const { context, page, errors } = await signedIn();
  try {
    await page.goto(`${server.url}/farm/log/observation/${log.id}`);
    const img = await page.waitForSelector(`img[src="/farm/files/${image}/image"]`);
    assert.equal(await img.getAttribute('width'), '160');
    assert.equal(await img.getAttribute('height'), '160');
    assert.equal(await img.getAttribute('alt'), 'Image gate.png');
    await page.waitForFunction((el) => (el as HTMLImageElement).complete, img);
    assert.equal(
      await img.evaluate((el) => (el as HTMLImageElement).naturalWidth),
      1,
      'the image loaded with the session',
    );
    const links = await page.$$eval('ul.files a[download]', (as) =>
      as.map((a) => [a.getAttribute('href'), a.textContent]),
    );
    assert.deepEqual(
      links.map((l) => l[0]),
      [`/farm/files/${file}`, `/farm/files/${image}`],
      'the Files field, then the Images field',
    );
    assert.match(links[0]![1]!, /^Download report\.txt \(48 (byte|B)\)$/);
    assert.match(links[1]![1]!, /^Download gate\.png \(\d+ (byte|B)\)$/);
    const download = await page.request.get(`${server.url}/farm/files/${file}`);
    assert.equal(download.status(), 200);
    assert.match(download.headers()['content-disposition']!, /^attachment; filename="report.txt"/);
    assert.equal(await download.text(), '<html><script>window.__pwned = 1</script></html>');
    // Only images are served inline, and then under a sandbox.
    assert.equal((await page.request.get(`${server.url}/farm/files/${file}/image`)).status(), 404);
    const inline = await page.request.get(`${server.url}/farm/files/${image}/image`);
    assert.equal(inline.headers()['content-type'], 'image/png');
    assert.match(inline.headers()['content-security-policy']!, /sandbox/);
    assert.deepEqual(errors, []);
  } finally {
    await context.close();
  }
  // Not signed in: the sign-in page, never the bytes. No right to files: 403.
  const anonymous = await fetch(`${server.url}/farm/files/${image}`, { redirect: 'manual' });
  assert.equal(anonymous.status, 303);
  const nobody = await signedIn(NOBODY);
  try {
    assert.equal((await nobody.page.request.get(`${server.url}/farm/files/${file}`)).status(), 403);
    assert.equal((await nobody.page.request.get(`${server.url}/farm/files/${image}/image`)).status(), 403);
  } finally {
    await nobody.context.close();
  }
});

test('long text is rendered per its format, as the API’s notes.processed; nothing else is markup', async () => {
  const notes =
    'Fix the <strong>north</strong> gate.\n\nSee https://example.com/gate <script>window.__pwned = 1</script> <a href="javascript:alert(1)">here</a>';
  const log = await post('log/activity', {
    type: 'log--activity',
    attributes: { name: '<em>Gate</em> work', notes: { value: notes, format: 'default' } },
  });
  const { context, page, errors } = await signedIn();
  try {
    await page.goto(`${server.url}/farm/log/activity/${log.id}`);
    assert.equal(await page.textContent('h1'), '<em>Gate</em> work', 'a name is text, not markup');
    const shown = await page.$eval('dd .text', (el) => el.innerHTML);
    // The API's processed, as the browser parses it.
    const processed = log.attributes.notes.processed as string;
    const parsed = await page.evaluate((p) => {
      const div = document.createElement('div');
      div.innerHTML = p;
      return div.innerHTML;
    }, processed);
    assert.equal(shown, parsed);
    assert.equal(await page.textContent('dd .text strong'), 'north');
    assert.equal(await page.getAttribute('dd .text a[href^="https"]', 'href'), 'https://example.com/gate');
    assert.equal(await page.$('dd .text a[href^="javascript"]'), null);
    assert.equal(await page.$$eval('script', (s) => s.length), 0);
    assert.deepEqual(errors, []);
  } finally {
    await context.close();
  }
});

test('dates and numbers in the farm’s locale and time zone (TILTH_LOCALE, TILTH_TIME_ZONE); bad ones refused at start', async () => {
  const farm = await startTestServer({ env: { TILTH_TIME_ZONE: 'Asia/Kathmandu', TILTH_LOCALE: 'de-DE' } });
  try {
    const admin = await passwordToken(farm.url, ADMIN.name, ADMIN.password);
    const log = await post(
      'log/harvest',
      { type: 'log--harvest', attributes: { name: 'Apples', status: 'done', timestamp: '2024-03-01T10:00:00+00:00' } },
      farm,
      admin,
    );
    const { context, page } = await signedIn(ADMIN, farm);
    try {
      await page.goto(`${farm.url}/farm/log/harvest/${log.id}`);
      // 10:00 UTC is 15:45 in Kathmandu (UTC+5:45), written the German way.
      assert.match((await page.textContent('main'))!, /01\.03\.2024, 15:45/);
      await page.goto(`${farm.url}/farm/log/harvest/${log.id}/edit`);
      assert.equal(await page.inputValue('#field-timestamp'), '2024-03-01T15:45', 'the form’s wall clock too');
    } finally {
      await context.close();
    }
  } finally {
    await farm.close();
  }
  assert.throws(
    () => loadConfig({ TILTH_TIME_ZONE: 'Mars/Olympus_Mons' }),
    (e: unknown) => {
      assert.ok(e instanceof ConfigError);
      assert.match(e.message, /^TILTH_TIME_ZONE must be an IANA time zone .*"Mars\/Olympus_Mons"/);
      return true;
    },
  );
  assert.throws(
    () => loadConfig({ TILTH_LOCALE: 'not a locale!' }),
    /^ConfigError: TILTH_LOCALE must be a language tag/,
  );
  const config = loadConfig({ TILTH_TIME_ZONE: 'europe/paris', TILTH_LOCALE: 'en-gb' });
  assert.equal(config.timeZone, 'Europe/Paris');
  assert.equal(config.locale, 'en-GB');
  const defaults = loadConfig({});
  assert.equal(defaults.timeZone, Intl.DateTimeFormat().resolvedOptions().timeZone, 'the server’s by default');
});
