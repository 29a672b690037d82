// A broken definition stops generation with the file, the line and a plain sentence (issue 2, item 4).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { mkdirSync, readFileSync } from 'node:fs';
import { generate, DefinitionErrors } from '../../generator/index.ts';
import { scratchProject, ROOT } from '../support/project.ts';

const HARVEST = `entity_type: log
bundle: harvest
label: Harvest
fields:
  lot_number:
    type: string
    label: Lot number
`;

async function errorsFor(
  files: Record<string, string>,
): Promise<Array<{ file: string; line: number | undefined; sentence: string }>> {
  const project = scratchProject();
  try {
    for (const [path, text] of Object.entries(files)) {
      mkdirSync(join(project.root, path, '..'), { recursive: true });
      project.write(path, text);
    }
    await generate({ root: project.root, check: true });
    assert.fail('generation should have stopped');
  } catch (error) {
    if (!(error instanceof DefinitionErrors)) throw error;
    return error.errors.map((e) => ({ file: e.file, line: e.line, sentence: e.sentence }));
  } finally {
    project.remove();
  }
}

/** The 1-based line of a shipped definition that holds `text` (so that editing the file does not move the test's target). */
function lineOfText(file: string, text: string): number {
  return readFileSync(join(ROOT, file), 'utf8').split('\n').indexOf(text) + 1;
}

const cases: Array<
  [string, { given: Record<string, string>; want: { file: string; line: number; sentence: RegExp } }]
> = [
  [
    'unknown field type',
    {
      given: { 'definitions/log/harvest.yaml': HARVEST.replace('type: string', 'type: strng') },
      want: {
        file: 'definitions/log/harvest.yaml',
        line: 6,
        sentence: /unknown field type "strng"\. Field types are: boolean, decimal/,
      },
    },
  ],
  [
    'relationship to a bundle that does not exist',
    {
      given: {
        'definitions/log/harvest.yaml': `${HARVEST}  crop:\n    type: entity_reference\n    label: Crop\n    target_type: taxonomy_term\n    target_bundles: [crops]\n`,
      },
      want: {
        file: 'definitions/log/harvest.yaml',
        line: 12,
        sentence: /field "crop": target bundle "crops" does not exist in taxonomy_term\. Known bundles: .*plant_type/,
      },
    },
  ],
  [
    'relationship to an entity type that does not exist',
    {
      given: {
        'definitions/log/harvest.yaml': `${HARVEST}  crop:\n    type: entity_reference\n    label: Crop\n    target_type: crops\n`,
      },
      want: { file: 'definitions/log/harvest.yaml', line: 11, sentence: /field "crop": unknown target_type "crops"/ },
    },
  ],
  [
    'the same field twice in one file',
    {
      given: { 'definitions/log/harvest.yaml': `${HARVEST}  lot_number:\n    type: string\n    label: Again\n` },
      want: { file: 'definitions/log/harvest.yaml', line: 8, sentence: /defined twice .*duplicate field/ },
    },
  ],
  [
    'a bundle field that duplicates a base field',
    {
      given: { 'definitions/log/harvest.yaml': `${HARVEST}  timestamp:\n    type: timestamp\n    label: When\n` },
      want: {
        file: 'definitions/log/harvest.yaml',
        line: 8,
        sentence: /field "timestamp" duplicates a base field that every log already has/,
      },
    },
  ],
  [
    'an allowed value of the wrong shape',
    {
      given: {
        'definitions/log/harvest.yaml': `${HARVEST}  grade:\n    type: list_string\n    label: Grade\n    allowed_values:\n      - premium\n`,
      },
      want: {
        file: 'definitions/log/harvest.yaml',
        line: 12,
        sentence: /each allowed value must be a mapping with "value" and "label"/,
      },
    },
  ],
  [
    'a bundle name that is not a machine name',
    {
      given: { 'definitions/log/Bad-Name.yaml': 'entity_type: log\nbundle: Bad-Name\nlabel: Bad\n' },
      want: { file: 'definitions/log/Bad-Name.yaml', line: 2, sentence: /"Bad-Name" is not a machine name/ },
    },
  ],
  [
    'a field shared by two bundles with different storage',
    {
      given: {
        'definitions/log/activity.yaml':
          'entity_type: log\nbundle: activity\nlabel: Activity\nfields:\n  lot_number:\n    type: integer\n    label: Lot\n',
      },
      want: {
        file: 'definitions/log/activity.yaml',
        line: 5,
        sentence: /field "lot_number" is integer here but string in definitions\/log\/(harvest|input|seeding)\.yaml/,
      },
    },
  ],
  [
    'an unknown key',
    {
      given: {
        'definitions/log/harvest.yaml': HARVEST.replace(
          '    label: Lot number',
          '    label: Lot number\n    requird: true',
        ),
      },
      want: { file: 'definitions/log/harvest.yaml', line: 8, sentence: /unknown key "requird"/ },
    },
  ],
  [
    'a computed field whose source field was renamed',
    {
      // A log's is_movement renamed: asset location would turn off in silence; the generator refuses.
      given: {
        'definitions/entity-types/log.yaml': readFileSync(
          join(ROOT, 'definitions/entity-types/log.yaml'),
          'utf8',
        ).replace('  is_movement:\n', '  is_moving:\n'),
      },
      want: {
        file: 'definitions/entity-types/asset.yaml',
        line: lineOfText('definitions/entity-types/asset.yaml', '    computed: location'),
        sentence:
          /field "location" is computed \(location\) from the log fields .*is_movement.*, but no log bundle has "is_movement" \(renamed or removed\?\)/,
      },
    },
  ],
  [
    'a renamed value that is still allowed',
    {
      given: {
        'definitions/log/harvest.yaml': `${HARVEST}  method:\n    type: list_string\n    label: Method\n    allowed_values:\n      - { value: mob, label: Mob }\n      - { value: mob_grazing, label: Mob grazing }\n    renamed_values: { mob: mob_grazing }\n`,
      },
      want: {
        file: 'definitions/log/harvest.yaml',
        line: 14,
        sentence:
          /field "method": "mob" is still an allowed value; a value renamed or removed must leave allowed_values/,
      },
    },
  ],
  [
    'a removed value whose records would get a value that is not allowed',
    {
      given: {
        'definitions/log/harvest.yaml': `${HARVEST}  method:\n    type: list_string\n    label: Method\n    allowed_values:\n      - { value: rotational, label: Rotational }\n    removed_values:\n      strip: rotatonal\n`,
      },
      want: {
        file: 'definitions/log/harvest.yaml',
        line: 14,
        sentence: /"strip" would become "rotatonal", which is not an allowed value\. Allowed: rotational/,
      },
    },
  ],
  [
    'a type change with no conversion defined',
    {
      given: {
        'definitions/log/harvest.yaml': HARVEST.replace(
          '    label: Lot number',
          '    label: Lot number\n    renamed_from: lot\n    converted_from: boolean',
        ),
      },
      want: {
        file: 'definitions/log/harvest.yaml',
        line: 9,
        sentence: /field "lot_number": no conversion from boolean to string is defined\. Defined: integer → decimal/,
      },
    },
  ],
  [
    'a decimal whose scale is more than its precision',
    {
      given: {
        'definitions/log/harvest.yaml': `${HARVEST}  moisture:\n    type: decimal\n    label: Moisture\n    precision: 4\n    scale: 5\n`,
      },
      want: {
        file: 'definitions/log/harvest.yaml',
        line: 12,
        sentence: /"scale" \(5\) cannot be more than "precision" \(4\)/,
      },
    },
  ],
  [
    'precision on a field that is not a decimal',
    {
      given: {
        'definitions/log/harvest.yaml': HARVEST.replace(
          '    label: Lot number',
          '    label: Lot number\n    precision: 8\n    scale: 2',
        ),
      },
      want: {
        file: 'definitions/log/harvest.yaml',
        line: 8,
        sentence: /"precision" and "scale" only apply to decimal fields/,
      },
    },
  ],
  [
    'a decimal precision SQLite cannot keep',
    {
      given: {
        'definitions/log/harvest.yaml': `${HARVEST}  moisture:\n    type: decimal\n    label: Moisture\n    precision: 20\n    scale: 2\n`,
      },
      want: {
        file: 'definitions/log/harvest.yaml',
        line: 11,
        sentence: /field "moisture" \(precision\): at most 15 digits: SQLite keeps a decimal as a 64-bit float/,
      },
    },
  ],
];

for (const [name, { given, want }] of cases) {
  test(`definition error: ${name}`, async () => {
    const errors = await errorsFor(given);
    const hit = errors.find((e) => e.file === want.file && want.sentence.test(e.sentence));
    assert.ok(
      hit,
      `expected an error matching ${want.sentence} in ${want.file}; got ${JSON.stringify(errors, null, 2)}`,
    );
    assert.equal(hit.line, want.line, `line of: ${hit.sentence}`);
  });
}

test('the CLI prints file:line: sentence and exits 1, without a stack trace', () => {
  const project = scratchProject();
  try {
    project.write('definitions/log/harvest.yaml', HARVEST.replace('type: string', 'type: strng'));
    const run = spawnSync(
      process.execPath,
      [join(ROOT, 'bin/tilth.js'), 'generate', '--check', '--root', project.root],
      { encoding: 'utf8' },
    );
    assert.equal(run.status, 1);
    assert.match(run.stderr, /definitions\/log\/harvest\.yaml:6: field "lot_number": unknown field type "strng"/);
    assert.doesNotMatch(run.stderr, /\n\s+at /, 'no stack trace');
  } finally {
    project.remove();
  }
});

// A YAML mistake is one error where it is, with its column: not a cascade of follow-on errors
// (some far away, one a false "duplicate field"), and the document is not validated further
// (issue 29 Part A, item B).
const REAL_HARVEST = readFileSync(join(ROOT, 'definitions/log/harvest.yaml'), 'utf8');
const yamlMistakes: Array<[string, string, { line: number; column: number; sentence: RegExp }]> = [
  [
    'a tab as indentation',
    REAL_HARVEST.replace('    label: Lot number', '\tlabel: Lot number'),
    { line: 9, column: 1, sentence: /Tabs are not allowed as indentation/ },
  ],
  [
    'a field key one space short',
    REAL_HARVEST.replace('    max_length: 255', '   max_length: 255'),
    { line: 11, column: 1, sentence: /All mapping items must start at the same column/ },
  ],
  [
    'a field key indented too far',
    REAL_HARVEST.replace('    label: Lot number', '      label: Lot number'),
    { line: 8, column: 11, sentence: /Nested mappings are not allowed in compact mappings.*indent/ },
  ],
];
for (const [name, text, want] of yamlMistakes) {
  test(`a YAML mistake is one error at its line and column: ${name}`, async () => {
    assert.notEqual(text, REAL_HARVEST, 'the mistake was made');
    const project = scratchProject();
    try {
      project.write('definitions/log/harvest.yaml', text);
      const run = spawnSync(
        process.execPath,
        [join(ROOT, 'bin/tilth.js'), 'generate', '--check', '--root', project.root],
        { encoding: 'utf8' },
      );
      assert.equal(run.status, 1);
      const lines = run.stderr.trim().split('\n');
      assert.equal(lines.length, 2, `a heading and one error; got:\n${run.stderr}`);
      assert.match(lines[0]!, /1 problem/);
      assert.equal(lines[1]!.startsWith(`definitions/log/harvest.yaml:${want.line}:${want.column}: `), true, lines[1]);
      assert.match(lines[1]!, want.sentence);
      assert.doesNotMatch(run.stderr, /defined twice|duplicate/);
    } finally {
      project.remove();
    }
  });
}
