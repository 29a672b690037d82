// A quick form definition (issue 42 §2) is checked by the generator like a bundle: a mistake stops
// generation naming the file, the line and what is wrong, and nothing is written; a good one is
// generated into generated/quick/ (a module's too, and a site's into the site's generated/).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { generate, DefinitionErrors } from '../../generator/index.ts';
import { scratchProject } from '../support/project.ts';

const GOOD = `title: Weigh an animal
access:
  roles: [farm_worker, farm_manager]
fields:
  animal:
    like: log--observation.asset
    bundles: [animal]
    multiple: false
    required: true
  weight:
    label: Weight
    group:
      value: { like: quantity--standard.value, required: true }
      units: { like: quantity--standard.units }
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

async function errorsFor(
  path: string,
  text: string,
): Promise<Array<{ file: string; line?: number; sentence: string }>> {
  const project = scratchProject();
  try {
    project.write(path, text);
    await generate({ root: project.root, check: true });
    assert.fail('generation should have stopped');
  } catch (error) {
    if (!(error instanceof DefinitionErrors)) throw error;
    return error.errors.map((e) => ({ file: e.file, line: e.line, sentence: e.sentence }));
  } finally {
    project.remove();
  }
}

const lineOf = (text: string, fragment: string) => text.split('\n').findIndex((l) => l.includes(fragment)) + 1;

const cases: Array<[string, string, string, RegExp]> = [
  [
    'a field like a field that does not exist',
    'log--observation.asset',
    'log--observation.assets',
    /log--observation has no field "assets"/,
  ],
  [
    'a bundle that does not exist',
    'type: log--observation',
    'type: log--observatoin',
    /"log--observatoin" is not a bundle/,
  ],
  [
    'a template naming no field',
    '{{weight.units}}"\n  log:',
    '{{weight.unit}}"\n  log:',
    /the group "weight" has no field "unit"/,
  ],
  ['an unclosed section', 'Weight of {{animal}}', 'Weight of {{#animal}}', /\{\{#animal\}\} is never closed/],
  [
    'a record named before it is made',
    'quantity: { record: weighed }',
    'quantity: { record: later }',
    /names no record made before this one/,
  ],
  [
    'a role that does not exist',
    'roles: [farm_worker, farm_manager]',
    'roles: [farm_worker, farm_boss]',
    /"farm_boss" is not a role/,
  ],
  [
    'a narrowing to a bundle the reference cannot point at',
    'bundles: [animal]',
    'bundles: [unit]',
    /"unit" is not one of the bundles/,
  ],
  [
    'a record field that does not exist',
    '      status: done',
    '      stats: done',
    /log--observation has no field "stats"/,
  ],
  [
    'an optional group that repeats',
    '    group:\n      value: { like: quantity--standard.value, required: true }',
    '    optional: { label: Weigh it }\n    repeat: { max: 3 }\n    group:\n      value: { like: quantity--standard.value, required: true }',
    /a repeating group is not optional/,
  ],
  [
    'a choice by a path naming no field',
    'asset: "{{animal}}"',
    'asset: { if: animl, then: "{{animal}}" }',
    /\(asset, if\): "animl" names no field of this form/,
  ],
  [
    'a field needing a field that does not exist',
    '    bundles: [animal]',
    '    needs: weight.unit\n    bundles: [animal]',
    /field "animal" \(needs\): "weight.unit": the group "weight" has no field "unit"/,
  ],
  ['an unknown key', '    required: true\n  weight:', '    requird: true\n  weight:', /unknown key "requird"/],
];

for (const [name, from, to, sentence] of cases) {
  test(`the generator refuses a quick form with ${name}, naming its file and line`, async () => {
    const text = GOOD.replace(from, to);
    assert.notEqual(text, GOOD, 'the case changes the file');
    const errors = await errorsFor('definitions/quick/weigh.yaml', text);
    assert.equal(errors.length, 1, JSON.stringify(errors));
    const [error] = errors;
    assert.equal(error!.file, 'definitions/quick/weigh.yaml');
    assert.match(error!.sentence, sentence);
    const fragment = to.split('\n')[0]!.trim();
    assert.equal(error!.line, lineOf(text, fragment), `the line of "${fragment}": ${error!.sentence}`);
  });
}

test("a quick form in a module's folder is generated with its module; a good one is written to generated/quick/", async () => {
  const project = scratchProject();
  try {
    project.write('definitions/quick/weigh.yaml', GOOD);
    project.write(
      'definitions/modules/ledger/quick/sell.yaml',
      `title: Sell
fields:
  what: { like: log--sale.name, required: true }
records:
  log:
    type: log--sale
    values: { name: "Sold {{what}}", status: done }
`,
    );
    await generate({ root: project.root });
    const weigh = JSON.parse(readFileSync(join(project.root, 'generated/quick/weigh.json'), 'utf8'));
    assert.equal(weigh.title, 'Weigh an animal');
    assert.deepEqual(weigh.fields[0].field.target.bundles, ['animal'], 'the reference narrowed');
    assert.equal(weigh.fields[0].field.multiple, false);
    const sell = JSON.parse(readFileSync(join(project.root, 'generated/quick/sell.json'), 'utf8'));
    assert.equal(sell.module, 'ledger');
    // A core form may not make a module's records: it would be offered when the module is off.
    const errors = await errorsFor(
      'definitions/quick/sell2.yaml',
      readFileSync(join(project.root, 'definitions/modules/ledger/quick/sell.yaml'), 'utf8'),
    );
    assert.match(errors[0]!.sentence, /belongs to the optional module ledger/);
    assert.ok(!existsSync(join(project.root, 'site/generated')));
  } finally {
    project.remove();
  }
});
