// The markup test of issue 38 ("Safe"): every string field of every bundle the server has (text,
// long text, names, labels, ID tags, notes; optional modules' bundles too) is filled through the
// API with markup and script, and then every page kind is visited in Chromium: the dashboard, the
// entity types' indexes, every list (with the payload in its filter too), every record's page,
// create and edit forms, the revision diff, the conflict page and the delete confirmation.
// Nothing may run and nothing may break the layout.
//
// The browser context bypasses the pages' Content-Security-Policy, so that escaping alone is what
// is tested: with the CSP on, an injected script would be blocked and the test could not tell.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { type Browser, type Page } from 'playwright-core';
import { launchChromium } from '../support/browser.ts';
import { startTestServer, ADMIN, type TestServer } from '../support/server.ts';
import { passwordToken, request } from '../support/http.ts';
import { Api, buildFixture, bundlesServed, collectionPath, model } from '../support/fixtures.ts';
import type { BundleDescriptor, FieldDescriptor } from '../../runtime/model/descriptor.ts';

const ALL_MODULES = model.modules.map((m) => m.module);

/** Markup and script, each of which sets window.__pwned if it ever runs. */
const PAYLOAD = [
  `<img src=x onerror=window.__pwned=1>`,
  `"><script>window.__pwned=2</script>`,
  `'><svg onload=window.__pwned=3>`,
  `<a href="javascript:window.__pwned=4">j</a>`,
  `<iframe srcdoc="<script>parent.__pwned=5</script>">`,
  `<style>main{display:none}</style></main>`,
].join('');

let server: TestServer;
let browser: Browser;
let api: Api;

before(async () => {
  server = await startTestServer({ env: { TILTH_MODULES: ALL_MODULES.join(',') } });
  api = new Api(server.url, await passwordToken(server.url, ADMIN.name, ADMIN.password));
  browser = await launchChromium();
});
after(async () => {
  await browser?.close();
  await server?.close();
});

/** The hostile value of a string-holding field (cut to its length), or undefined for other fields. */
function hostile(field: FieldDescriptor, variant: string): unknown {
  const text = `${variant}${PAYLOAD}`.slice(0, field.maxLength ?? Infinity);
  const one = (): unknown => {
    switch (field.type) {
      case 'string':
      case 'string_long':
        return text;
      case 'text_long':
        return { value: text, format: 'default' };
      case 'id_tag':
        return { id: text, type: field.allowedValues?.[0]?.value ?? 'eid', location: text };
      default:
        return undefined;
    }
  };
  const v = one();
  return v === undefined ? undefined : field.multiple ? [v, v] : v;
}

/**
 * A record of the bundle with every string field hostile, created through the API. A field whose
 * rules refuse the payload (a user's name, an e-mail address, a langcode) keeps its fixture's value.
 */
async function createHostile(bundle: BundleDescriptor): Promise<{ id: string; refused: string[] }> {
  const fixture = await buildFixture(api, bundle.type, { full: true, modules: ALL_MODULES });
  const attributes: Record<string, unknown> = { ...fixture.attributes };
  for (const field of bundle.fields) {
    if (field.kind !== 'attribute' || field.readOnly || field.computed || field.internal) continue;
    const v = hostile(field, 'A ');
    if (v !== undefined) attributes[field.name] = v;
  }
  const refused: string[] = [];
  for (let attempt = 0; attempt < 10; attempt++) {
    const res = await api.post(collectionPath(bundle.type), {
      data: { type: bundle.type, attributes, relationships: fixture.relationships },
    });
    if (res.status === 201) return { id: res.body.data.id, refused };
    assert.equal(res.status, 422, `${bundle.type}: ${res.text.slice(0, 500)}`);
    for (const e of res.body.errors as Array<{ source?: { pointer?: string } }>) {
      const name = e.source?.pointer?.split('/')[3];
      assert.ok(name && name in attributes, `${bundle.type}: ${res.text.slice(0, 500)}`);
      refused.push(name);
      if (name in fixture.attributes) attributes[name] = fixture.attributes[name];
      else delete attributes[name];
    }
  }
  assert.fail(`${bundle.type}: not created`);
}

interface Expect {
  /** The page's h1, exactly. */
  title?: string | RegExp;
  /** Headings (h2) the main landmark must hold. */
  headings?: string[];
  status?: number;
}

/** Visit a page and check nothing ran, nothing of the payload is an element, and the layout holds. */
async function check(page: Page, dialogs: string[], path: string, expect: Expect = {}): Promise<void> {
  const res = await page.goto(`${server.url}${path}`);
  assert.ok(res, path);
  assert.equal(res.status(), expect.status ?? 200, `${path}: status`);
  await inspect(page, dialogs, path, expect);
}

/** Check the page shown: nothing ran, no element or handler of the payload's, the frame and its h1 in place. */
async function inspect(page: Page, dialogs: string[], path: string, expect: Expect = {}): Promise<void> {
  const found = await page.evaluate(() => {
    const all = [...document.querySelectorAll('*')];
    const handlers = all.flatMap((el) =>
      [...el.attributes].filter((a) => a.name.toLowerCase().startsWith('on')).map((a) => `${el.tagName}[${a.name}]`),
    );
    const main = document.querySelector('body > main#content');
    return {
      pwned: (window as unknown as { __pwned?: number }).__pwned ?? null,
      forbidden: all
        .filter((el) => ['SCRIPT', 'IFRAME', 'SVG', 'STYLE', 'OBJECT', 'EMBED', 'svg'].includes(el.tagName))
        // Tilth's own: the map's script (issue 42, served from /farm/assets/) and its legend's swatches.
        .filter(
          (el) =>
            !(el.tagName === 'SCRIPT' && /^\/farm\/assets\/[a-z]+\.[A-Z0-9]+\.js$/.test(el.getAttribute('src') ?? '')),
        )
        .filter((el) => !(el.tagName.toLowerCase() === 'svg' && el.closest('fieldset.map-layers')))
        .map((el) => el.tagName),
      images: [...document.images].map((i) => i.getAttribute('src')).filter((src) => !src?.startsWith('/farm/files/')),
      handlers,
      scriptLinks: [...document.querySelectorAll('a[href], form[action]')]
        .map((el) => el.getAttribute('href') ?? el.getAttribute('action') ?? '')
        .filter((href) => /^\s*javascript:/i.test(href) || /^\s*(https?:)?\/\/(?!127\.0\.0\.1)/i.test(href))
        .filter((href) => !href.startsWith('https://example.com')),
      layout: {
        main: Boolean(main),
        mains: document.querySelectorAll('main').length,
        firstIsH1: main?.firstElementChild?.tagName === 'H1',
        h1s: document.querySelectorAll('h1').length,
        header: Boolean(document.querySelector('body > header.top')),
        visible: main ? getComputedStyle(main).display !== 'none' : false,
      },
      title: main?.querySelector('h1')?.textContent ?? null,
      headings: [...(main?.querySelectorAll('h2') ?? [])].map((h) => h.textContent),
    };
  });
  assert.equal(found.pwned, null, `${path}: a payload ran`);
  assert.deepEqual(dialogs, [], `${path}: a dialog opened`);
  assert.deepEqual(found.forbidden, [], `${path}: elements from the payload`);
  assert.deepEqual(found.images, [], `${path}: images from the payload`);
  assert.deepEqual(found.handlers, [], `${path}: event handler attributes`);
  assert.deepEqual(found.scriptLinks, [], `${path}: javascript: or foreign links`);
  assert.deepEqual(
    found.layout,
    { main: true, mains: 1, firstIsH1: true, h1s: 1, header: true, visible: true },
    `${path}: layout`,
  );
  if (typeof expect.title === 'string') assert.equal(found.title, expect.title, `${path}: title`);
  else if (expect.title) assert.match(found.title ?? '', expect.title, `${path}: title`);
  for (const h of expect.headings ?? [])
    assert.ok(found.headings.includes(h), `${path}: heading ${h} in ${JSON.stringify(found.headings)}`);
}

test('every string field of every bundle filled with markup and script: nothing runs and nothing breaks on any page kind', async () => {
  const ui = server.ctx.generated.ui;
  const bundles = bundlesServed(ALL_MODULES).filter((b) => b.entityType !== 'file' && ui.get(b.type));
  assert.ok(bundles.length > 30, `every bundle: ${bundles.length}`);
  const created = new Map<string, { id: string; refused: string[] }>();
  for (const bundle of bundles) created.set(bundle.type, await createHostile(bundle));
  // Every record's label is hostile (but a user's name, whose rules refuse it); a few fields with
  // rules of their own (a langcode, a time zone) keep their fixture's value.
  for (const bundle of bundles) {
    const label = model.entityTypes[bundle.entityType]!.labelField;
    if (bundle.entityType !== 'user')
      assert.ok(!created.get(bundle.type)!.refused.includes(label), `${bundle.type}: its label refused the payload`);
  }

  // A hub log naming hostile records (an asset, a term, a location), pending and late: on the
  // dashboard, in the asset's logs, the term's uses, the location's contents.
  const id = (type: string) => ({ type, id: created.get(type)!.id });
  const hub = await api.create(
    'log--activity',
    { name: `Hub ${PAYLOAD}`, status: 'pending', timestamp: 1_700_000_000, is_movement: true },
    {
      asset: { data: [id('asset--equipment')] },
      location: { data: [id('asset--land')] },
      category: { data: [id('taxonomy_term--log_category')] },
    },
  );
  // A second revision of every record that keeps them: a diff to show.
  for (const bundle of bundles) {
    const et = model.entityTypes[bundle.entityType]!;
    const label = bundle.fields.find((f) => f.name === et.labelField);
    if (!et.revisionId || !label || label.readOnly || label.computed) continue;
    const value = hostile(label, 'B ');
    if (value === undefined || bundle.entityType === 'user') continue;
    const res = await api.patch(`${collectionPath(bundle.type)}/${created.get(bundle.type)!.id}`, {
      data: { type: bundle.type, id: created.get(bundle.type)!.id, attributes: { [label.name]: value } },
    });
    assert.equal(res.status, 200, `${bundle.type}: ${res.text.slice(0, 300)}`);
  }

  const context = await browser.newContext({ bypassCSP: true });
  const page = await context.newPage();
  const dialogs: string[] = [];
  page.on('dialog', (d) => {
    dialogs.push(d.message());
    void d.dismiss();
  });
  page.on('pageerror', (e) => dialogs.push(`page error: ${e.message}`));
  try {
    await page.goto(`${server.url}/farm/sign-in`);
    await page.fill('#username', ADMIN.name);
    await page.fill('#password', ADMIN.password);
    await page.click('button[type=submit]');
    await page.waitForURL(`${server.url}/farm`);

    await check(page, dialogs, '/farm', { headings: ['Late tasks', 'Upcoming tasks (next 14 days)'] });
    assert.ok(
      (await page.textContent('section[aria-labelledby=late]'))!.includes('<script>'),
      'the hub is a late task, as text',
    );
    for (const et of new Set(bundles.map((b) => b.entityType))) await check(page, dialogs, `/farm/${et}`);

    // Every bundle's list, record page and edit form: where its values are shown. The pages that
    // show a bundle's values only in its title or not at all (the create form, the delete
    // confirmation, a list filtered by the payload) and the revision diff: one bundle of each
    // entity type, so the test stays a few minutes long.
    const sampled = new Set<string>();
    for (const bundle of bundles) {
      const { id: uuid } = created.get(bundle.type)!;
      const base = `/farm/${bundle.entityType}/${bundle.bundle}`;
      const label = ui.get(bundle.type)!.label;
      const read = await api.get(`${collectionPath(bundle.type)}/${uuid}`);
      const et = model.entityTypes[bundle.entityType]!;
      const title = read.body.data.attributes[et.labelField];
      const shown = typeof title === 'string' && title.trim() ? title : undefined;
      const every = !sampled.has(bundle.entityType);
      sampled.add(bundle.entityType);
      await check(page, dialogs, base, { title: label });
      await check(page, dialogs, `${base}/${uuid}`, { title: shown, headings: et.revisionId ? ['Revisions'] : [] });
      if (every && et.revisionId) {
        const revisions = await page.$$eval('section[aria-labelledby=revisions] input[name=to]', (inputs) =>
          inputs.map((i) => (i as HTMLInputElement).value),
        );
        if (revisions.length > 1) {
          await check(page, dialogs, `${base}/${uuid}/revisions?from=${revisions[1]}&to=${revisions[0]}`, {
            title: /: revision \d+ to \d+$/,
          });
          assert.ok((await page.$$('section[aria-labelledby=diff] tbody tr')).length > 0, `${bundle.type}: a diff`);
        }
      }
      await check(page, dialogs, `${base}/${uuid}/edit`, { title: `Edit ${label}` });
      if (!every) continue;
      await check(page, dialogs, `${base}?${new URLSearchParams({ name: PAYLOAD, sort: PAYLOAD, cursor: PAYLOAD })}`, {
        title: label,
      });
      await check(page, dialogs, `${base}/new`, { title: `New ${label}` });
      await check(page, dialogs, `${base}/${uuid}/delete`, { title: shown ? `Delete ${shown}?` : /^Delete / });
    }
    // The hub's page names the hostile asset, location and term as links, as text.
    await check(page, dialogs, `/farm/log/activity/${hub.id}`, { title: `Hub ${PAYLOAD}` });
    assert.ok((await page.textContent('main'))!.includes(`B ${PAYLOAD}`.slice(0, 40)), 'the asset’s name, as text');
    await check(page, dialogs, `/farm/asset/land/${created.get('asset--land')!.id}`, {
      headings: ['In it now', 'Logs'],
    });
    await check(page, dialogs, `/farm/asset/equipment/${created.get('asset--equipment')!.id}`, { headings: ['Logs'] });
    await check(page, dialogs, `/farm/taxonomy_term/log_category/${created.get('taxonomy_term--log_category')!.id}`, {
      headings: ['Records that use it'],
    });

    // --- helper `views` (issue 42 §5, §6): the timeline, saved views, readings and inventory ---
    const equipment = created.get('asset--equipment')!.id;
    const unit = created.get('taxonomy_term--unit')!.id;
    const adjustment = await api.create(
      'quantity--standard',
      { measure: 'count', value: { decimal: '3' }, inventory_adjustment: 'increment' },
      {
        inventory_asset: { data: { type: 'asset--equipment', id: equipment } },
        units: { data: { type: 'taxonomy_term--unit', id: unit } },
      },
    );
    await api.create(
      'log--activity',
      { name: `Stock ${PAYLOAD}`, status: 'done', timestamp: 1_600_000_000 },
      {
        asset: { data: [{ type: 'asset--equipment', id: equipment }] },
        quantity: { data: [{ type: 'quantity--standard', id: adjustment.id }] },
      },
    );
    await check(page, dialogs, `/farm/asset/equipment/${equipment}/timeline`, { title: /: timeline$/ });
    assert.ok((await page.$$('ol.timeline li.event')).length >= 2, 'the hub and the stock log');
    await check(page, dialogs, `/farm/asset/equipment/${equipment}`, { headings: ['Inventory history', 'Logs'] });
    const stream = created.get('data_stream--basic')!.id;
    const streamRow = await server.ctx.db.knex('data_stream').where('uuid', stream).first('id');
    await server.ctx.db
      .knex('data_stream_basic')
      .insert({ stream_id: streamRow.id, timestamp: 1_600_000_000, value: 1.5 });
    await check(page, dialogs, `/farm/data_stream/basic/${stream}?range=custom&from=${encodeURIComponent(PAYLOAD)}`, {
      headings: ['Readings'],
    });
    const csrf = await page.getAttribute('header.top form input[name=csrf_token]', 'value');
    const saved = await page.request.post(`${server.url}/farm/views`, {
      form: {
        csrf_token: csrf!,
        name: PAYLOAD.slice(0, 128),
        path: '/farm/log',
        query: `name=${encodeURIComponent(PAYLOAD)}`,
      },
      maxRedirects: 0,
    });
    assert.equal(saved.status(), 303);
    await check(page, dialogs, '/farm', { headings: ['Saved views'] });
    await page.click(`section[aria-labelledby=saved-views] a >> nth=0`);
    await inspect(page, dialogs, 'a saved view of a hostile filter', { title: 'All logs' });
    // --- end of helper `views` ---

    // The conflict page: the hub edited here while the API changed it.
    await page.goto(`${server.url}/farm/log/activity/${hub.id}/edit`);
    const patched = await api.patch(`/api/log/activity/${hub.id}`, {
      data: { type: 'log--activity', id: hub.id, attributes: { notes: { value: `C ${PAYLOAD}`, format: 'default' } } },
    });
    assert.equal(patched.status, 200, patched.text);
    await page.fill('#field-name', `D ${PAYLOAD}`);
    const [answer] = await Promise.all([
      page.waitForResponse((r) => r.request().method() === 'POST'),
      page.click('form.record button[type=submit]'),
    ]);
    assert.equal(answer.status(), 409);
    await page.waitForSelector('section[aria-labelledby=conflict]');
    await inspect(page, dialogs, 'the conflict page', {
      title: 'Edit Activity',
      headings: ['Someone else changed this record'],
    });
    assert.equal(
      await page.$$eval('section[aria-labelledby=conflict] tbody tr', (trs) => trs.length),
      2,
      'name and notes differ',
    );

    // A bulk action (issue 42 §3): the confirmation names the record ticked, and so does the summary.
    await page.goto(`${server.url}/farm/log/activity?name=Hub`);
    await page.check(`input[name=id][value="${hub.id}"]`);
    await page.selectOption('#bulk-action', 'done');
    await Promise.all([page.waitForURL(/\/bulk$/), page.click('fieldset.bulk button[type=submit]')]);
    assert.equal(await page.locator('ol.bulk-records li').count(), 1);
    await inspect(page, dialogs, 'a bulk action’s confirmation');
    await Promise.all([page.waitForLoadState(), page.click('form.card button.primary')]);
    assert.match((await page.textContent('[role=status]')) ?? '', /1 record/);
    await inspect(page, dialogs, 'a bulk action’s summary');
  } finally {
    await context.close();
  }
  // The records are as sent: the API returns the payload unchanged.
  const read = await request(`${server.url}/api/log/activity/${hub.id}`, { token: api.token });
  assert.equal(read.body.data.attributes.name, `Hub ${PAYLOAD}`);
});
