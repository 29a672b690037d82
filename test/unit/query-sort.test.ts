// parseSort: the comma list and Drupal's long form (farmos-behaviour.md §4.5).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseQueryString, parseSort, type SortField } from '../../runtime/jsonapi/query/index.ts';
import { assertBadParameter, type Bad } from './query-test-helpers.ts';

const sortOf = (query: string): SortField[] => parseSort(parseQueryString(query).sort);

const cases: Array<[string, { given: string; want: SortField[] }]> = [
  ['no sort', { given: 'filter[status]=done', want: [] }],
  [
    'comma list with a descending key',
    {
      given: 'sort=-timestamp,name',
      want: [
        { path: 'timestamp', direction: 'DESC' },
        { path: 'name', direction: 'ASC' },
      ],
    },
  ],
  [
    'farmOS.js one key {timestamp: "DESC"}',
    { given: 'sort=-timestamp', want: [{ path: 'timestamp', direction: 'DESC' }] },
  ],
  // farmOS.js 2.0.0-beta.16 drops every key but the last of a multi-key sort (captured request).
  [
    'farmOS.js two keys {timestamp: "DESC", name: "ASC"} arrive as sort=,name',
    { given: 'sort=,name', want: [{ path: 'name', direction: 'ASC' }] },
  ],
  ['a relationship path', { given: 'sort=asset.name', want: [{ path: 'asset.name', direction: 'ASC' }] }],
  [
    '%2C-encoded comma',
    {
      given: 'sort=-timestamp%2Cname',
      want: [
        { path: 'timestamp', direction: 'DESC' },
        { path: 'name', direction: 'ASC' },
      ],
    },
  ],
  [
    'long form',
    {
      given: 'sort[a][path]=timestamp&sort[a][direction]=DESC&sort[b][path]=name',
      want: [
        { path: 'timestamp', direction: 'DESC' },
        { path: 'name', direction: 'ASC' },
      ],
    },
  ],
  [
    'long form, lower-case direction and a langcode',
    {
      given: 'sort[a][path]=name&sort[a][direction]=desc&sort[a][langcode]=en',
      want: [{ path: 'name', direction: 'DESC' }],
    },
  ],
  [
    'long form with numeric keys keeps index order',
    {
      given: 'sort[1][path]=name&sort[0][path]=timestamp',
      want: [
        { path: 'timestamp', direction: 'ASC' },
        { path: 'name', direction: 'ASC' },
      ],
    },
  ],
  [
    'the last sort parameter wins',
    { given: 'sort=name&sort=-timestamp', want: [{ path: 'timestamp', direction: 'DESC' }] },
  ],
];

for (const [name, { given, want }] of cases) {
  test(`parseSort: ${name}`, () => {
    assert.deepStrictEqual(sortOf(given), want);
  });
}

const failures: Array<[string, { given: string | (() => unknown); want: Bad }]> = [
  [
    'an empty sort',
    { given: 'sort=', want: { parameter: 'sort', detail: ['You need to provide a value for the sort parameter.'] } },
  ],
  [
    'a sort of commas only',
    { given: 'sort=,,', want: { parameter: 'sort', detail: ['You need to provide a value for the sort parameter.'] } },
  ],
  [
    'an empty long form',
    {
      given: () => parseSort({}),
      want: { parameter: 'sort', detail: ['You need to provide a value for the sort parameter.'] },
    },
  ],
  [
    'a lone minus',
    {
      given: 'sort=-',
      want: { parameter: 'sort', detail: ['You need to provide a field name for the sort parameter.'] },
    },
  ],
  [
    'an empty path segment',
    { given: 'sort=asset..name', want: { parameter: 'sort', detail: ["'asset..name' has an empty segment"] } },
  ],
  [
    'a bad direction',
    {
      given: 'sort[a][path]=name&sort[a][direction]=UP',
      want: { parameter: 'sort[a][direction]', detail: ["The sort direction 'UP' is not allowed; use ASC or DESC."] },
    },
  ],
  [
    'a direction that is a list',
    {
      given: 'sort[a][path]=name&sort[a][direction][]=ASC',
      want: { parameter: 'sort[a][direction]', detail: ['use ASC or DESC'] },
    },
  ],
  [
    'a missing path',
    {
      given: 'sort[a][direction]=DESC',
      want: { parameter: 'sort[a][path]', detail: ['You need to provide a field name for the sort parameter.'] },
    },
  ],
  [
    'an empty long-form path',
    { given: 'sort[a][path]=', want: { parameter: 'sort[a][path]', detail: ['You need to provide a field name'] } },
  ],
  [
    'a path that is a list',
    { given: 'sort[a][path][]=name', want: { parameter: 'sort[a][path]', detail: ['must be a string'] } },
  ],
  [
    'a long-form item that is a string',
    { given: 'sort[a]=name', want: { parameter: 'sort[a]', detail: ['sort[a][path]=name'] } },
  ],
  [
    'an unknown long-form key',
    {
      given: 'sort[a][path]=name&sort[a][order]=DESC',
      want: { parameter: 'sort[a][order]', detail: ['You have provided an invalid set of sort keys', "'order'"] },
    },
  ],
  [
    'a langcode that is a list',
    {
      given: 'sort[a][path]=name&sort[a][langcode][]=en',
      want: { parameter: 'sort[a][langcode]', detail: ['langcode must be a string'] },
    },
  ],
];

for (const [name, { given, want }] of failures) {
  test(`parseSort rejects ${name}`, () => {
    assertBadParameter(typeof given === 'function' ? given : () => sortOf(given), want);
  });
}
