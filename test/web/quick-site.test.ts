// A farm's own quick form (issue 42 §2: "a test adds a site quick form with no code and uses
// it"): one YAML file written into the site folder, `npm run generate`'s generator run, and the
// server started on it offers the form on the dashboard; submitted in Chromium, it makes the
// records it says, read back through the API.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { generate } from '../../generator/index.ts';
import { launchChromium } from '../support/browser.ts';
import { scratchProject } from '../support/project.ts';
import { startTestServerAsAdmin, ADMIN } from '../support/server.ts';
import { request } from '../support/http.ts';

/** Weighing an animal: a quantity and an observation log naming the animal (farmOS's quick "weight" form, as YAML). */
const WEIGH = `title: Weigh an animal
description: Record an animal's weight.
access:
  roles: [farm_worker, farm_manager]
fields:
  animal:
    like: log--observation.asset
    label: Animal
    bundles: [animal]
    multiple: false
    required: true
  weight:
    label: Weight
    group:
      value: { like: quantity--standard.value, label: Weight, required: true }
      units: { like: quantity--standard.units, default: kg }
records:
  weighed:
    type: quantity--standard
    values:
      measure: weight
      value: "{{weight.value}}"
      units: "{{weight.units}}"
  log:
    type: log--observation
    values:
      name: "Weight of {{animal}} is {{weight.value}} {{weight.units}}"
      asset: "{{animal}}"
      quantity: { record: weighed }
      status: done
`;

const p = scratchProject({ withGenerated: true });
after(() => p.remove());

test('a quick form written into the site folder is offered and works, with no code', async () => {
  const site = join(p.root, 'site');
  p.write('site/definitions/quick/weigh.yaml', WEIGH);
  await generate({ root: p.root, siteDir: site });
  assert.ok(existsSync(join(site, 'generated/quick/weigh.json')), "generated into the site's generated/");
  assert.ok(!existsSync(join(p.root, 'generated/quick/weigh.json')), "not into Tilth's own generated/");
  const { server, token } = await startTestServerAsAdmin({
    generatedDir: join(p.root, 'generated'),
    env: { TILTH_SITE_DIR: site },
  });
  const browser = await launchChromium();
  try {
    const sheep = await request(`${server.url}/api/taxonomy_term/animal_type`, {
      method: 'POST',
      token,
      json: { data: { type: 'taxonomy_term--animal_type', attributes: { name: 'Sheep' } } },
    });
    const ewe = await request(`${server.url}/api/asset/animal`, {
      method: 'POST',
      token,
      json: {
        data: {
          type: 'asset--animal',
          attributes: { name: 'Ewe 9' },
          relationships: { animal_type: { data: { type: 'taxonomy_term--animal_type', id: sheep.body.data.id } } },
        },
      },
    });
    assert.equal(ewe.status, 201, JSON.stringify(ewe.body));
    const page = await browser.newPage();
    await page.goto(`${server.url}/farm`);
    await page.fill('#username', ADMIN.name);
    await page.fill('#password', ADMIN.password);
    await page.click('button[type=submit]');
    await page.waitForURL(`${server.url}/farm`);
    await page.click('#quick ~ ul a:text("Weigh an animal")');
    await page.waitForURL(`${server.url}/farm/quick/weigh`);
    assert.equal(await page.textContent('h1'), 'Weigh an animal');
    assert.equal(await page.inputValue('#field-weight-units'), 'kg', 'the default');
    await page.fill('#field-animal', 'Ewe 9');
    await page.fill('#field-weight-value', '61.5');
    await Promise.all([page.waitForNavigation(), page.click('form.record button.primary')]);
    assert.match(
      page.url(),
      /\/farm\/log\/observation\/[0-9a-f-]{36}\?saved=created/,
      (await page.textContent('main')) ?? '',
    );
    const id = new URL(page.url()).pathname.split('/').pop()!;
    const log = await request(`${server.url}/api/log/observation/${id}?include=quantity,quantity.units,asset`, {
      token,
    });
    assert.equal(log.body.data.attributes.name, 'Weight of Ewe 9 is 61.5 kg');
    assert.deepEqual(
      log.body.data.relationships.asset.data.map((r: any) => r.id),
      [ewe.body.data.id],
    );
    const q = log.body.included.find((i: any) => i.type === 'quantity--standard');
    assert.deepEqual([q.attributes.value.decimal, q.attributes.measure], ['61.5', 'weight']);
    const unit = log.body.included.find((i: any) => i.type === 'taxonomy_term--unit');
    assert.equal(unit.attributes.name, 'kg', 'a new unit term made by its name');
  } finally {
    await browser.close();
    await server.close();
  }
});
