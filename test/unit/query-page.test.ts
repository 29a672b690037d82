// parsePage: offset paging capped at 50 (farmos-behaviour.md §4.6).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MAX_PAGE_LIMIT, parsePage, parseQueryString, type PageRequest } from '../../runtime/jsonapi/query/index.ts';
import { assertBadParameter, type Bad } from './query-test-helpers.ts';

const pageOf = (query: string): PageRequest => parsePage(parseQueryString(query).page);

test("MAX_PAGE_LIMIT is Drupal's 50", () => {
  assert.equal(MAX_PAGE_LIMIT, 50);
});

const cases: Array<[string, { given: string; want: PageRequest }]> = [
  ['no page', { given: '', want: { offset: 0, limit: 50 } }],
  ['a limit', { given: 'page[limit]=10', want: { offset: 0, limit: 10 } }],
  ['an offset and a limit', { given: 'page[offset]=100&page[limit]=25', want: { offset: 100, limit: 25 } }],
  ['%5B%5D-encoded (farmOS.py)', { given: 'page%5Blimit%5D=10', want: { offset: 0, limit: 10 } }],
  [
    'a limit above 50 is clamped (farmOS.js sends its own limit first)',
    { given: 'page[limit]=500', want: { offset: 0, limit: 50 } },
  ],
  ['a huge limit is clamped', { given: 'page[limit]=99999999999999999999999', want: { offset: 0, limit: 50 } }],
  [
    'page[limit] given twice: the last wins (farmOS.js next link + remainder)',
    { given: 'page[offset]=50&page[limit]=50&page[limit]=7', want: { offset: 50, limit: 7 } },
  ],
  ['leading zeros', { given: 'page[offset]=010&page[limit]=05', want: { offset: 10, limit: 5 } }],
  ['offset 0', { given: 'page[offset]=0', want: { offset: 0, limit: 50 } }],
  [
    'a cursor is passed through',
    {
      given: 'page[cursor]=eyJ0IjoxNzAwMDAwMDAwfQ&page[limit]=50',
      want: { offset: 0, limit: 50, cursor: 'eyJ0IjoxNzAwMDAwMDAwfQ' },
    },
  ],
  [
    'a 2000-character cursor',
    { given: `page[cursor]=${'c'.repeat(2000)}`, want: { offset: 0, limit: 50, cursor: 'c'.repeat(2000) } },
  ],
  ['an empty cursor is no cursor', { given: 'page[cursor]=', want: { offset: 0, limit: 50 } }],
  [
    'other page keys are ignored, as Drupal does',
    { given: 'page[size]=10&page[number]=2', want: { offset: 0, limit: 50 } },
  ],
];

for (const [name, { given, want }] of cases) {
  test(`parsePage: ${name}`, () => {
    assert.deepStrictEqual(pageOf(given), want);
  });
}

const size: Bad = { parameter: 'page[limit]', detail: ['The page size needs to be a positive integer.'] };
const offset: Bad = { parameter: 'page[offset]', detail: ['The page offset needs to be a non-negative integer.'] };

const failures: Array<[string, { given: string; want: Bad }]> = [
  ['a zero limit', { given: 'page[limit]=0', want: size }],
  ['a negative limit', { given: 'page[limit]=-1', want: size }],
  ['a fractional limit', { given: 'page[limit]=1.5', want: size }],
  ['a non-numeric limit', { given: 'page[limit]=ten', want: size }],
  ['an empty limit', { given: 'page[limit]=', want: size }],
  ['a limit with an exponent', { given: 'page[limit]=1e1', want: size }],
  ['a limit that is a list', { given: 'page[limit][]=5', want: size }],
  ['a negative offset', { given: 'page[offset]=-1', want: offset }],
  ['a fractional offset', { given: 'page[offset]=1.5', want: offset }],
  ['a non-numeric offset', { given: 'page[offset]=x', want: offset }],
  ['an offset beyond the safe integers', { given: 'page[offset]=99999999999999999999', want: offset }],
  [
    'page that is not a map',
    { given: 'page=2', want: { parameter: 'page', detail: ['page[offset]=0&page[limit]=50'] } },
  ],
  [
    'a cursor of 2001 characters',
    {
      given: `page[cursor]=${'c'.repeat(2001)}`,
      want: { parameter: 'page[cursor]', detail: ['at most 2000 characters'] },
    },
  ],
  [
    'a cursor that is a map',
    { given: 'page[cursor][a]=1', want: { parameter: 'page[cursor]', detail: ['must be a string'] } },
  ],
];

for (const [name, { given, want }] of failures) {
  test(`parsePage rejects ${name}`, () => {
    assertBadParameter(() => pageOf(given), want);
  });
}
