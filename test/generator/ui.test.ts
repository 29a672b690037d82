// The web interface is generated from the definitions (issue 38, "Shape"): each bundle's UI
// description has defaults from field types, `ui:` hints change them, and a hint that cannot apply
// stops generation with its file, line and field. A site bundle gets its description the same way.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { generate, DefinitionErrors } from '../../generator/index.ts';
import { scratchProject, ROOT } from '../support/project.ts';
import type { BundleUi } from '../../runtime/model/ui.ts';

const readUi = (dir: string, type: string): BundleUi =>
  JSON.parse(readFileSync(join(dir, 'ui', `${type}.json`), 'utf8')) as BundleUi;

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
`;

test("every bundle has a UI description, with farmOS's columns for logs and assets and defaults from field types elsewhere", () => {
  const log = readUi(join(ROOT, 'generated'), 'log--harvest');
  assert.deepEqual(log.list.columns, [
    'name',
    'timestamp',
    'status',
    'flag',
    'asset',
    'category',
    'owner',
    'quantity',
    'location',
  ]);
  assert.equal(log.list.sort, '-timestamp', 'logs newest first');
  const byName = new Map(log.fields.map((f) => [f.name, f]));
  assert.equal(byName.get('status')!.widget, 'radios', 'two allowed values: radios');
  assert.equal(byName.get('flag')!.widget, 'checkboxes', 'several values of a list: checkboxes');
  assert.equal(byName.get('timestamp')!.widget, 'datetime');
  assert.equal(byName.get('asset')!.widget, 'reference');
  assert.equal(byName.get('created')!.widget, null, 'filled in automatically: shown, never edited on the form');
  assert.equal(byName.get('revision_log_message')!.section, 'sidebar');
  assert.ok(!byName.has('langcode'), 'a constant is not shown');
  assert.deepEqual(log.sections, ['main', 'sidebar']);
  for (const f of ['name', 'status', 'timestamp', 'category', 'owner', 'asset', 'location', 'is_movement'])
    assert.ok(
      log.list.filters.some((x) => x.field === f),
      `the log list offers a filter by ${f}`,
    );

  const asset = readUi(join(ROOT, 'generated'), 'asset--plant');
  assert.deepEqual(asset.list.columns, ['name', 'status', 'flag', 'owner', 'parent', 'location']);
  assert.equal(asset.list.sort, 'name');

  const user = readUi(join(ROOT, 'generated'), 'user--user');
  assert.ok(
    !user.fields.some((f) => f.name === 'pass' || f.name === 'mail'),
    'a password hash and a field only its owner sees are never in the description',
  );

  // Every bundle of the model has one.
  const descriptors = readFileSync(join(ROOT, 'generated', 'descriptors', 'index.ts'), 'utf8');
  for (const [, type] of descriptors.matchAll(/from '\.\/([a-z_]+--[a-z_]+)\.ts'/g))
    assert.ok(existsSync(join(ROOT, 'generated', 'ui', `${type}.json`)), `generated/ui/${type}.json exists`);
});

test('a site bundle without hints gets a good interface from its field types; its hints are applied', async () => {
  const p = scratchProject();
  try {
    const site = join(p.root, 'site');
    p.write(
      'site/definitions/asset/beehive.yaml',
      BEEHIVE.replace(
        '    label: Apiary notes\n',
        '    label: Apiary notes\n    ui: { order: -1, section: hive_details, placeholder: "By the gate", list: true, widget: textarea }\n',
      ),
    );
    await generate({ root: p.root, siteDir: site });
    const ui = readUi(join(site, 'generated'), 'asset--beehive');
    assert.ok(
      !existsSync(join(p.root, 'generated', 'ui', 'asset--beehive.json')),
      "only the site's output holds the site's bundle",
    );
    const notes = ui.fields[0]!;
    assert.deepEqual(
      notes,
      {
        name: 'apiary_notes',
        label: 'Apiary notes',
        section: 'hive_details',
        widget: 'textarea',
        placeholder: 'By the gate',
        required: false,
        multiple: false,
      },
      'order -1 puts it first',
    );
    assert.deepEqual(ui.sections, ['main', 'hive_details', 'sidebar']);
    assert.ok(ui.list.columns.includes('apiary_notes'));
    const byName = new Map(ui.fields.map((f) => [f.name, f]));
    assert.equal(byName.get('queen_marked')!.widget, 'checkbox');
    assert.equal(byName.get('frames')!.widget, 'number');
    assert.equal(byName.get('colour')!.widget, 'select', 'four allowed values: a select');
    assert.ok(ui.list.filters.some((f) => f.field === 'colour' && f.kind === 'equals'));
    assert.ok(ui.list.filters.some((f) => f.field === 'queen_marked' && f.kind === 'boolean'));
  } finally {
    p.remove();
  }
});

async function errorsFor(files: Record<string, string>): Promise<string[]> {
  const p = scratchProject();
  try {
    for (const [path, text] of Object.entries(files)) p.write(path, text);
    await generate({ root: p.root, check: true });
    assert.fail('generation should have stopped');
  } catch (error) {
    if (!(error instanceof DefinitionErrors)) throw error;
    return error.errors.map((e) => e.message);
  } finally {
    p.remove();
  }
}

const withHint = (field: string, ui: string) =>
  BEEHIVE.replace(`    label: ${field}\n`, `    label: ${field}\n    ui: ${ui}\n`);

const refusals: Array<[string, { given: string; want: RegExp }]> = [
  [
    'a widget that does not suit the type',
    {
      given: withHint('Frames', '{ widget: checkbox }'),
      want: /^definitions\/asset\/beehive\.yaml:11: field "frames" \(ui\.widget\): "checkbox" does not suit an integer field\. Use one of: number/,
    },
  ],
  [
    'checkboxes on a field of one value',
    {
      given: withHint('Colour', '{ widget: checkboxes }'),
      want: /^definitions\/asset\/beehive\.yaml:14: field "colour" \(ui\.widget\): "checkboxes" is for a field of several values/,
    },
  ],
  [
    'a placeholder on a checkbox',
    {
      given: withHint('Queen marked', '{ placeholder: "yes" }'),
      want: /^definitions\/asset\/beehive\.yaml:8: field "queen_marked" \(ui\.placeholder\): a checkbox widget shows no placeholder/,
    },
  ],
  [
    'an unknown key',
    {
      given: withHint('Frames', '{ colour: red }'),
      want: /^definitions\/asset\/beehive\.yaml:11: field "frames" \(ui\): unknown key "colour"/,
    },
  ],
  [
    'a widget the meta-schema does not know',
    {
      given: withHint('Frames', '{ widget: slider }'),
      want: /^definitions\/asset\/beehive\.yaml:11: field "frames" \(ui\.widget\): "slider" is not allowed here\. Use one of: text, textarea/,
    },
  ],
  [
    'hidden with other hints',
    {
      given: withHint('Frames', '{ hidden: true, list: true }'),
      want: /^definitions\/asset\/beehive\.yaml:11: field "frames" \(ui\.list\): the field is hidden/,
    },
  ],
];

for (const [name, { given, want }] of refusals) {
  test(`a ui: hint is checked: ${name}`, async () => {
    const messages = await errorsFor({ 'definitions/asset/beehive.yaml': given });
    assert.equal(messages.length, 1, messages.join('\n'));
    assert.match(messages[0]!, want);
  });
}
