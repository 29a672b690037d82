// A farm's own bundle (the site folder) gets its screens with no code (issue 38, "Done when"): its
// generated UI description is merged in at start, its form renders with the widgets its field
// types and `ui:` hints give, a record created through it reads back through the API as entered,
// and its list shows the hinted column and filters by an offered filter.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { generate } from '../../generator/index.ts';
import { launchChromium } from '../support/browser.ts';
import { scratchProject } from '../support/project.ts';
import { startTestServerAsAdmin, ADMIN } from '../support/server.ts';
import { request } from '../support/http.ts';

const BEEHIVE = `entity_type: asset
bundle: beehive
label: Beehive
fields:
  queen_marked:
    type: boolean
    label: Queen marked
  frames:
    type: integer
    label: Frames
  colour:
    type: list_string
    label: Colour
    allowed_values:
      - { value: white, label: White }
      - { value: yellow, label: Yellow }
      - { value: red, label: Red }
      - { value: green, label: Green }
  apiary_notes:
    type: string
    label: Apiary notes
    ui: { order: -1, list: true, placeholder: "By the gate" }
`;

const p = scratchProject({ withGenerated: true });
after(() => p.remove());

test("a site bundle's form, page and list, generated with no code", async () => {
  const site = join(p.root, 'site');
  p.write('site/definitions/asset/beehive.yaml', BEEHIVE);
  await generate({ root: p.root, siteDir: site });
  const { server, token } = await startTestServerAsAdmin({
    generatedDir: join(p.root, 'generated'),
    env: { TILTH_SITE_DIR: site },
  });
  const browser = await launchChromium();
  try {
    const page = await browser.newPage();
    await page.goto(`${server.url}/farm/asset/beehive/new`);
    await page.fill('#username', ADMIN.name);
    await page.fill('#password', ADMIN.password);
    await page.click('button[type=submit]');
    await page.waitForURL(`${server.url}/farm/asset/beehive/new`);
    assert.equal(await page.textContent('h1'), 'New Beehive');
    // Widgets from the field types, the hint's order and placeholder.
    assert.equal(
      await page.getAttribute('form.record input[type=checkbox][name=queen_marked]', 'id'),
      'field-queen_marked',
    );
    assert.equal(await page.getAttribute('#field-frames', 'type'), 'number');
    assert.equal(await page.$eval('#field-colour', (e) => e.tagName), 'SELECT', 'four allowed values: a select');
    assert.equal(await page.getAttribute('#field-apiary_notes', 'placeholder'), 'By the gate');
    const order = await page.$$eval('form.record [name]:not([type=hidden])', (els) =>
      els.map((e) => (e as HTMLInputElement).name),
    );
    assert.equal(order[0], 'apiary_notes', 'order: -1 puts it first');

    await page.fill('#field-name', 'Hive 7');
    await page.fill('#field-apiary_notes', 'Under the walnut');
    await page.fill('#field-frames', '10');
    await page.selectOption('#field-colour', 'yellow');
    await page.check('#field-queen_marked');
    await page.click('form.record button[type=submit]');
    await page.waitForURL(/\/farm\/asset\/beehive\/[0-9a-f-]{36}\?saved=created/);
    const id = new URL(page.url()).pathname.split('/').pop()!;
    const read = await request(`${server.url}/api/asset/beehive/${id}`, { token });
    const a = read.body.data.attributes;
    assert.deepEqual(
      [a.name, a.apiary_notes, a.frames, a.colour, a.queen_marked, a.status],
      ['Hive 7', 'Under the walnut', 10, 'yellow', true, 'active'],
    );
    assert.match((await page.textContent('main'))!, /Yellow/, 'the page shows the value by its label');

    await request(`${server.url}/api/asset/beehive`, {
      method: 'POST',
      token,
      json: { data: { type: 'asset--beehive', attributes: { name: 'Hive 8', colour: 'red' } } },
    });
    await page.goto(`${server.url}/farm/asset/beehive?colour=yellow`);
    const rows = await page.$$eval('tbody tr', (trs) => trs.map((tr) => tr.textContent));
    assert.equal(rows.length, 1);
    assert.match(rows[0]!, /Hive 7/);
    assert.match(rows[0]!, /Under the walnut/, 'the hinted column');
  } finally {
    await browser.close();
    await server.close();
  }
});
