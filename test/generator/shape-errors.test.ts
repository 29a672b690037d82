// A field's `shapes:` (farmOS 2.x and 4.x, issue 39) is checked like every other key: a mistake
// stops generation with the file, the line and a sentence naming it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { mkdirSync } from 'node:fs';
import { generate, DefinitionErrors } from '../../generator/index.ts';
import { scratchProject } from '../support/project.ts';

const bundle = (shapes: string, extra = '') => `entity_type: log
bundle: harvest
label: Harvest
fields:
  grade:
    type: list_string
    label: Grade
    allowed_values:
      - { value: a, label: A }
      - { value: b, label: B }
    shapes:
${shapes}
${extra}`;

async function errorsFor(text: string): Promise<Array<{ line: number | undefined; sentence: string }>> {
  const project = scratchProject();
  try {
    mkdirSync(join(project.root, 'definitions/log'), { recursive: true });
    project.write('definitions/log/harvest.yaml', text);
    await generate({ root: project.root, check: true });
    assert.fail('generation should have stopped');
  } catch (error) {
    if (!(error instanceof DefinitionErrors)) throw error;
    return error.errors.map((e) => ({ line: e.line, sentence: e.sentence }));
  } finally {
    project.remove();
  }
}

const cases: Array<[string, string, string, RegExp]> = [
  [
    'a value that is not allowed',
    '      farmos4: { values: { a: true, c: false } }',
    '',
    /"c" is not an allowed value/,
  ],
  ['values that leave one out', '      farmos4: { values: { a: x } }', '', /"b" has none/],
  ['two values shown as one', '      farmos4: { values: { a: x, b: x } }', '', /would both show as "x"/],
  ['show_values onto a value the shape cannot write', '      farmos2: { show_values: { a: c } }', '', /"c" is not one/],
  ['omit with something else', '      farmos4: { omit: true, name: grade_x }', '', /an omitted field has nothing else/],
  ['an unknown shape', '      farmos3: { name: grade_x }', '', /farmos3/],
  [
    'two fields under one name in a shape',
    '      farmos4: { name: quality }',
    '  quality:\n    type: string\n    label: Quality\n',
    /would show as "quality" in farmos4, which is already field "grade"'s name|field "quality" would show as "quality"/,
  ],
  [
    "a shape named after the entity type's id",
    '      farmos4: { name: drupal_internal__id }',
    '',
    /drupal_internal__id/,
  ],
];

for (const [name, shapes, extra, sentence] of cases) {
  test(`shapes: ${name} is refused with its line`, async () => {
    const errors = await errorsFor(bundle(shapes, extra));
    assert.ok(errors.length >= 1, 'at least one problem');
    const hit = errors.find((e) => sentence.test(e.sentence));
    assert.ok(hit, `a problem matching ${sentence}: ${JSON.stringify(errors)}`);
    assert.ok(hit.line !== undefined && hit.line >= 5, `a line in the field: ${hit.line}`);
  });
}
