// parseJsonApiQuery (all parameters together, Drupal's unknown-parameter rule) and buildQueryString.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { ApiError } from '../../runtime/errors.ts';
import { buildQueryString, parseJsonApiQuery, parseQueryString } from '../../runtime/jsonapi/query/index.ts';
import { assertBadParameter, cond, plain, queryOf, root, type Bad } from './query-test-helpers.ts';

test('parseJsonApiQuery: a farmOS.js fetch with filter, limit, sort and include', () => {
  const target =
    '/api/log/activity?filter[status-0-filter][condition][path]=status&filter[status-0-filter][condition][operator]=%3D&filter[status-0-filter][condition][value]=done&page[limit]=10&sort=-timestamp&include=asset,quantity';
  const query = parseJsonApiQuery(queryOf(target));
  assert.deepStrictEqual(query.filter, root(cond('status-0-filter', 'status', '=', 'done')));
  assert.deepStrictEqual(query.sort, [{ path: 'timestamp', direction: 'DESC' }]);
  assert.deepStrictEqual(query.page, { offset: 0, limit: 10 });
  assert.deepStrictEqual(query.include, [['asset'], ['quantity']]);
  assert.deepStrictEqual(query.fields, new Map());
  assert.deepStrictEqual(plain(query.extra), {});
});

test('parseJsonApiQuery: the empty query of /api/user/user? gives the defaults', () => {
  const query = parseJsonApiQuery(queryOf('/api/user/user?'));
  assert.deepStrictEqual(query.filter, root());
  assert.deepStrictEqual(query.sort, []);
  assert.deepStrictEqual(query.page, { offset: 0, limit: 50 });
  assert.deepStrictEqual(query.include, []);
  assert.equal(query.fields.size, 0);
  assert.deepStrictEqual(plain(query.params), {});
});

test('parseJsonApiQuery: a leading ? is accepted', () => {
  assert.deepStrictEqual(parseJsonApiQuery('?page[limit]=5').page, { offset: 0, limit: 5 });
});

const extras: Array<[string, { given: string; want: unknown }]> = [
  ['camelCase', { given: 'resourceVersion=rel:latest-version', want: { resourceVersion: 'rel:latest-version' } }],
  ['a leading underscore', { given: '_format=json', want: { _format: 'json' } }],
  ['a capital letter', { given: 'Filter=x', want: { Filter: 'x' } }],
  ['a digit or a dash', { given: 'v2=a&page-size=1', want: { v2: 'a', 'page-size': '1' } }],
  [
    'next to reserved parameters',
    { given: 'filter[status]=done&resourceVersion=id:3', want: { resourceVersion: 'id:3' } },
  ],
];

for (const [name, { given, want }] of extras) {
  test(`parseJsonApiQuery keeps a custom parameter with ${name} in extra`, () => {
    assert.deepStrictEqual(plain(parseJsonApiQuery(given).extra), want);
  });
}

const failures: Array<[string, { given: string; want: Bad }]> = [
  [
    'an unknown lower-case parameter',
    {
      given: 'foo=1',
      want: { parameter: 'foo', detail: ["The following query parameters violate the JSON:API spec: 'foo'."] },
    },
  ],
  [
    'several unknown lower-case parameters',
    {
      given: 'filter[status]=done&foo=1&bar=2',
      want: { parameter: 'foo', detail: ["The following query parameters violate the JSON:API spec: 'foo', 'bar'."] },
    },
  ],
  [
    'a lower-case parameter made by PHP name rules',
    { given: 'limit=5', want: { parameter: 'limit', detail: ["'limit'"] } },
  ],
  [
    'a bad filter',
    {
      given: 'filter[x][condition][path]=a&filter[x][condition][operator]=LIKE&filter[x][condition][value]=b',
      want: { parameter: 'filter[x][condition][operator]', detail: ["The 'LIKE' operator"] },
    },
  ],
  [
    'a bad sort',
    { given: 'sort=', want: { parameter: 'sort', detail: ['You need to provide a value for the sort parameter.'] } },
  ],
  [
    'a bad page',
    {
      given: 'page[limit]=0',
      want: { parameter: 'page[limit]', detail: ['The page size needs to be a positive integer.'] },
    },
  ],
  ['a bad include', { given: 'include=asset,,x', want: { parameter: 'include', detail: ['empty'] } }],
  ['bad fields', { given: 'fields=name', want: { parameter: 'fields', detail: ['resource type'] } }],
];

for (const [name, { given, want }] of failures) {
  test(`parseJsonApiQuery rejects ${name}`, () => {
    assertBadParameter(() => parseJsonApiQuery(given), want);
  });
}

const builds: Array<[string, { given: Record<string, unknown>; want: string }]> = [
  ['flat', { given: { a: '1', b: 'x y' }, want: 'a=1&b=x%20y' }],
  [
    'nested with raw brackets',
    { given: { page: { offset: '50', limit: '50' } }, want: 'page[offset]=50&page[limit]=50' },
  ],
  ['arrays get explicit indexes', { given: { v: ['a', { b: 'c' }] }, want: 'v[0]=a&v[1][b]=c' }],
  ['numbers, booleans and bigints', { given: { n: 5, t: true, f: false, b: 10n }, want: 'n=5&t=1&f=0&b=10' }],
  [
    'null, undefined and empty containers are left out',
    { given: { a: null, b: undefined, c: [], d: {}, e: 'x' }, want: 'e=x' },
  ],
  [
    'reserved characters are encoded',
    { given: { op: '>=', s: 'a&b=c+d%', k: { 'a[b': '1' } }, want: 'op=%3E%3D&s=a%26b%3Dc%2Bd%25&k[a%5Bb]=1' },
  ],
  ['non-ASCII text', { given: { name: 'café 😀' }, want: 'name=caf%C3%A9%20%F0%9F%98%80' }],
  ['a lone surrogate becomes U+FFFD', { given: { a: '\uD800' }, want: 'a=%EF%BF%BD' }],
];

for (const [name, { given, want }] of builds) {
  test(`buildQueryString: ${name}`, () => {
    assert.equal(buildQueryString(given), want);
  });
}

const unwritable: Array<[string, Record<string, unknown>]> = [
  ['an empty name', { '': 'x' }],
  ['a name with a dot (PHP would rename it)', { 'a.b': 'x' }],
  ['a name with a bracket', { 'a[b': 'x' }],
  ['a segment with ]', { a: { 'b]': 'x' } }],
  ['an empty segment (it would read as an append)', { a: { '': 'x' } }],
  ['a non-finite number', { a: Number.NaN }],
  ['a function', { a: () => 1 }],
  ['nesting too deep', { a: { 1: { 2: { 3: { 4: { 5: { 6: { 7: { 8: { 9: 'x' } } } } } } } } } }],
];

for (const [name, given] of unwritable) {
  test(`buildQueryString refuses ${name}`, () => {
    assert.throws(() => buildQueryString(given), TypeError);
  });
}

test('buildQueryString: a links.next keeps every other parameter', () => {
  const target =
    '/api/log/activity?filter%5Bgroup-0%5D%5Bgroup%5D%5Bconjunction%5D=OR&filter%5Bstatus-0-filter%5D%5Bcondition%5D%5Bpath%5D=status&filter%5Bstatus-0-filter%5D%5Bcondition%5D%5Bvalue%5D=pending&filter%5Bstatus-0-filter%5D%5Bcondition%5D%5BmemberOf%5D=group-0&sort=-timestamp&resourceVersion=rel:latest-version&page[limit]=20';
  const query = parseJsonApiQuery(queryOf(target));
  const next = buildQueryString({
    ...query.params,
    page: { offset: String(query.page.offset + query.page.limit), limit: String(query.page.limit) },
  });
  const again = parseJsonApiQuery(next);
  assert.deepStrictEqual(again.filter, query.filter);
  assert.deepStrictEqual(again.sort, query.sort);
  assert.deepStrictEqual(plain(again.extra), plain(query.extra));
  assert.deepStrictEqual(again.page, { offset: 20, limit: 20 });
  // farmOS.js appends its remainder to the next link; the last page[limit] wins.
  assert.deepStrictEqual(parseJsonApiQuery(`${next}&page[limit]=7`).page, { offset: 20, limit: 7 });
});

// Keys that parse back unchanged: no `]`, NUL or empty segment, and (for maps) not an integer, since
// a map keyed 0..n-1 reads back as a list. Values are any well-formed text.
const INTEGER = /^(?:0|-?[1-9][0-9]*)$/;
const keyChar = fc.constantFrom(
  'a',
  'b',
  'Z',
  '0',
  '7',
  '-',
  '_',
  '.',
  ' ',
  '[',
  '=',
  '&',
  '+',
  '%',
  '#',
  '?',
  'é',
  '😀',
);
const segmentKey = fc
  .string({ unit: keyChar, minLength: 1, maxLength: 6 })
  .filter((key) => key !== ' ' && !INTEGER.test(key));
const topName = fc.string({ unit: keyChar, minLength: 1, maxLength: 6 }).filter((name) => !/[[. ]/.test(name));
const text = fc.string({ unit: 'grapheme', maxLength: 8 });

const { tree } = fc.letrec<{ tree: unknown; map: Record<string, unknown>; list: unknown[] }>((tie) => ({
  tree: fc.oneof({ maxDepth: 4, depthSize: 'small' }, text, tie('list'), tie('map')),
  list: fc.array(tie('tree'), { minLength: 1, maxLength: 4 }),
  map: fc
    .uniqueArray(fc.tuple(segmentKey, tie('tree')), { minLength: 1, maxLength: 4, selector: ([key]) => key })
    .map((entries) => Object.fromEntries(entries)),
}));
const params = fc
  .uniqueArray(fc.tuple(topName, tree), { maxLength: 5, selector: ([name]) => name })
  .map((entries) => Object.fromEntries(entries));

test('buildQueryString round-trips through parseQueryString (property)', () => {
  fc.assert(
    fc.property(params, (given) => {
      assert.deepStrictEqual(plain(parseQueryString(buildQueryString(given))), given);
    }),
    { numRuns: 500 },
  );
});

// Whatever a client sends, re-serialising what was parsed reads back the same: a links.next built
// from the parsed query means what the request meant.
const token = fc.constantFrom(
  'a',
  'b',
  '0',
  '1',
  '[',
  ']',
  '[]',
  '=',
  '&',
  '+',
  '.',
  ' ',
  '%',
  '%5B',
  '%5D',
  '%3D',
  '%26',
  '%zz',
  '%E9',
  '%C3%A9',
  'é',
  '\0',
  '%00',
  '__proto__',
);
const rawQuery = fc.array(token, { maxLength: 40 }).map((tokens) => tokens.join(''));

test('parseQueryString ∘ buildQueryString ∘ parseQueryString = parseQueryString (property)', () => {
  fc.assert(
    fc.property(rawQuery, (raw) => {
      let parsed;
      try {
        parsed = parseQueryString(raw);
      } catch (error) {
        assert.ok(error instanceof ApiError && error.status === 400);
        return;
      }
      assert.deepStrictEqual(plain(parseQueryString(buildQueryString(parsed))), plain(parsed));
    }),
    { numRuns: 2000 },
  );
});

// Fuzzed query strings never cause anything but a 400: no TypeError may reach the 500 handler.
const apiToken = fc.constantFrom(
  '&',
  '=',
  '[',
  ']',
  '[]',
  'filter',
  'sort',
  'page',
  'include',
  'fields',
  '[x]',
  '[g]',
  '[condition]',
  '[group]',
  '[path]',
  '[value]',
  '[operator]',
  '[memberOf]',
  '[conjunction]',
  '[limit]',
  '[offset]',
  '[cursor]',
  '[0]',
  '[1]',
  'x',
  'g',
  'OR',
  'IN',
  'BETWEEN',
  'IS+NULL',
  '%3E',
  '-',
  ',',
  '.',
  '@root',
  '5',
  '__proto__',
  'foo',
  'Bar',
);
const apiQuery = fc.array(apiToken, { maxLength: 30 }).map((tokens) => tokens.join(''));

test('parseJsonApiQuery answers any input with a result or a 400 (property)', () => {
  fc.assert(
    fc.property(apiQuery, (raw) => {
      try {
        parseJsonApiQuery(raw);
      } catch (error) {
        assert.ok(
          error instanceof ApiError && error.status === 400 && typeof error.source?.parameter === 'string',
          String(error),
        );
      }
    }),
    { numRuns: 5000 },
  );
});
