// parseInclude and parseFields (farmos-behaviour.md §4.7).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseFields, parseInclude, parseQueryString } from '../../runtime/jsonapi/query/index.ts';
import { assertBadParameter, type Bad } from './query-test-helpers.ts';

const includeOf = (query: string) => parseInclude(parseQueryString(query).include);
const fieldsOf = (query: string) => parseFields(parseQueryString(query).fields);

const includes: Array<[string, { given: string; want: string[][] }]> = [
  ['no include', { given: '', want: [] }],
  ['an empty include is none, as in Drupal', { given: 'include=', want: [] }],
  ['farmOS.js include=asset,quantity', { given: 'include=asset,quantity', want: [['asset'], ['quantity']] }],
  [
    'dot paths split into segments',
    {
      given: 'include=asset.location,quantity.units',
      want: [
        ['asset', 'location'],
        ['quantity', 'units'],
      ],
    },
  ],
  [
    'duplicates are dropped, first order kept',
    { given: 'include=quantity,asset,quantity', want: [['quantity'], ['asset']] },
  ],
  ['items are trimmed, as in Drupal', { given: 'include=asset,+quantity', want: [['asset'], ['quantity']] }],
  [
    'segments are trimmed, as in Drupal',
    { given: 'include=asset+.+location,asset.location', want: [['asset', 'location']] },
  ],
  ['%2C-encoded comma', { given: 'include=asset%2Cquantity', want: [['asset'], ['quantity']] }],
];

for (const [name, { given, want }] of includes) {
  test(`parseInclude: ${name}`, () => {
    assert.deepStrictEqual(includeOf(given), want);
  });
}

const includeFailures: Array<[string, { given: string; want: Bad }]> = [
  [
    'an empty item',
    { given: 'include=asset,,quantity', want: { parameter: 'include', detail: ['The include path is empty.'] } },
  ],
  ['a trailing comma', { given: 'include=asset,', want: { parameter: 'include', detail: ['is empty'] } }],
  [
    'an empty segment',
    {
      given: 'include=asset..location',
      want: { parameter: 'include', detail: ["'asset..location' has an empty segment"] },
    },
  ],
  ['a trailing dot', { given: 'include=asset.', want: { parameter: 'include', detail: ['empty segment'] } }],
  [
    'a blank segment',
    {
      given: 'include=asset.+.location',
      want: { parameter: 'include', detail: ["'asset. .location' has an empty segment"] },
    },
  ],
  ['a list', { given: 'include[]=asset', want: { parameter: 'include', detail: ['comma-separated list'] } }],
];

for (const [name, { given, want }] of includeFailures) {
  test(`parseInclude rejects ${name}`, () => {
    assertBadParameter(() => includeOf(given), want);
  });
}

const fieldsets: Array<[string, { given: string; want: Array<[string, string[]]> }]> = [
  ['no fields', { given: '', want: [] }],
  [
    'two types',
    {
      given: 'fields[log--activity]=name,status&fields[asset--land]=name',
      want: [
        ['log--activity', ['name', 'status']],
        ['asset--land', ['name']],
      ],
    },
  ],
  ['%5B%5D-encoded', { given: 'fields%5Blog--activity%5D=name', want: [['log--activity', ['name']]] }],
  ['an empty list means no fields', { given: 'fields[log--activity]=', want: [['log--activity', []]] }],
  [
    'names are trimmed, empty ones dropped, duplicates merged',
    { given: 'fields[log--activity]=name,+status,,name', want: [['log--activity', ['name', 'status']]] },
  ],
];

for (const [name, { given, want }] of fieldsets) {
  test(`parseFields: ${name}`, () => {
    const got = [...fieldsOf(given)].map(([type, names]) => [type, [...names]]);
    assert.deepStrictEqual(got, want);
  });
}

const fieldsFailures: Array<[string, { given: string; want: Bad }]> = [
  [
    'fields that is not a map',
    { given: 'fields=name', want: { parameter: 'fields', detail: ['fields[log--activity]=name,status'] } },
  ],
  [
    'a fieldset that is a list',
    {
      given: 'fields[log--activity][]=name',
      want: { parameter: 'fields[log--activity]', detail: ['comma-separated list of field names'] },
    },
  ],
];

for (const [name, { given, want }] of fieldsFailures) {
  test(`parseFields rejects ${name}`, () => {
    assertBadParameter(() => fieldsOf(given), want);
  });
}
