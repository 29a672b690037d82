// parseQueryString: PHP parse_str() semantics, which farmOS clients depend on.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MAX_DEPTH, MAX_PARAMETERS, parseQueryString } from '../../runtime/jsonapi/query/index.ts';
import { assertBadParameter, plain, type Bad } from './query-test-helpers.ts';

const values = (n: number, key = 'v') => Array.from({ length: n }, (_, i) => `${key}[${i}]=${i}`).join('&');

const cases: Array<[string, { given: string; want: unknown }]> = [
  ['empty query (farmOS.js /api/user/user?)', { given: '', want: {} }],
  ['a bare ?', { given: '?', want: {} }],
  ['a leading ? is ignored', { given: '?a=1', want: { a: '1' } }],
  ['plain pairs', { given: 'a=1&b=2', want: { a: '1', b: '2' } }],
  ['empty pairs are skipped', { given: '&&a=1&', want: { a: '1' } }],
  ['a key without = has an empty value', { given: 'a&b=', want: { a: '', b: '' } }],
  ['a pair with an empty name is dropped', { given: '=x&[a]=y&b=1', want: { b: '1' } }],
  [
    'split on the first = only (farmOS.js >=)',
    { given: 'filter[x][condition][operator]=>=', want: { filter: { x: { condition: { operator: '>=' } } } } },
  ],
  ['split on the first = only, not on ]=', { given: 'a=b]=c', want: { a: 'b]=c' } }],
  ['%3E= keeps its literal =', { given: 'op=%3E=', want: { op: '>=' } }],
  ['+ is a space', { given: 'a=IS+NULL', want: { a: 'IS NULL' } }],
  ['%2B is a plus', { given: 'a=1%2B1', want: { a: '1+1' } }],
  ['%20 is a space', { given: 'a=NOT%20IN', want: { a: 'NOT IN' } }],
  ['UTF-8 escapes decode', { given: 'a=caf%C3%A9&b=%F0%9F%98%80', want: { a: 'café', b: '😀' } }],
  ['raw non-ASCII text is kept', { given: 'a=café', want: { a: 'café' } }],
  ['malformed escapes stay raw', { given: 'a=%zz&b=%4&c=100%&d=%', want: { a: '%zz', b: '%4', c: '100%', d: '%' } }],
  ['an invalid UTF-8 byte stays raw', { given: 'a=%E9t%E9', want: { a: '%E9t%E9' } }],
  ['valid bytes decode next to invalid ones', { given: 'a=%C3%A9%FF%C3%A9', want: { a: 'é%FFé' } }],
  ['an overlong sequence stays raw', { given: 'a=%C0%AF', want: { a: '%C0%AF' } }],
  ['a truncated sequence stays raw', { given: 'a=%E2%82', want: { a: '%E2%82' } }],
  ['lower-case hex escapes decode', { given: 'a=%c3%a9', want: { a: 'é' } }],
  ['the last duplicate wins', { given: 'a=1&a=2', want: { a: '2' } }],
  [
    'the last duplicate wins in nested keys',
    { given: 'f[x][v]=done&f[x][v]=pending', want: { f: { x: { v: 'pending' } } } },
  ],
  [
    'page[limit] given twice (farmOS.js next link + remainder)',
    { given: 'page[offset]=50&page[limit]=50&page[limit]=7', want: { page: { offset: '50', limit: '7' } } },
  ],
  ['[] appends', { given: 'a[]=1&a[]=2', want: { a: ['1', '2'] } }],
  ['a later scalar replaces a list', { given: 'a[]=1&a[]=2&a=3', want: { a: '3' } }],
  ['a later list replaces a scalar', { given: 'a=3&a[]=1', want: { a: ['1'] } }],
  ['a later map replaces a scalar', { given: 'a=1&a[b]=2', want: { a: { b: '2' } } }],
  ['a later scalar replaces a map', { given: 'a[b]=2&a=1', want: { a: '1' } }],
  ['numeric keys become a list in index order', { given: 'v[1]=b&v[0]=a', want: { v: ['a', 'b'] } }],
  [
    'more than 20 numeric keys (qs arrayLimit) stay a list',
    { given: values(25), want: { v: Array.from({ length: 25 }, (_, i) => String(i)) } },
  ],
  ['sparse numeric keys stay a map, keys kept', { given: 'v[0]=a&v[2]=c', want: { v: { 0: 'a', 2: 'c' } } }],
  ['[] after a numeric key continues from it', { given: 'a[5]=x&a[]=y', want: { a: { 5: 'x', 6: 'y' } } }],
  ['non-canonical numbers are map keys', { given: 'a[01]=x&a[%2B1]=y', want: { a: { '01': 'x', '+1': 'y' } } }],
  ['a list key next to a named key gives a map', { given: 'a[]=x&a[k]=y', want: { a: { 0: 'x', k: 'y' } } }],
  ['[] appends maps', { given: 'a[][b]=1&a[][b]=2', want: { a: [{ b: '1' }, { b: '2' }] } }],
  ['[ ] (one space) appends like []', { given: 'a[ ]=1', want: { a: ['1'] } }],
  ['[ b] keeps its leading space', { given: 'a[ b]=1', want: { a: { ' b': '1' } } }],
  ['nesting', { given: 'a[b][c]=v', want: { a: { b: { c: 'v' } } } }],
  [
    '%5B%5D-encoded brackets nest (farmOS.py)',
    { given: 'filter%5Bstatus%5D=done', want: { filter: { status: 'done' } } },
  ],
  ['dots are kept inside brackets', { given: 'filter[asset.id]=x', want: { filter: { 'asset.id': 'x' } } }],
  ['dots and spaces in a top-level name become _', { given: 'a.b=1&c+d=2', want: { a_b: '1', c_d: '2' } }],
  ['leading spaces of a name are dropped', { given: '+a=1', want: { a: '1' } }],
  ['an unterminated first [ becomes _', { given: 'a[b=1&c[d.e f[g=2', want: { a_b: '1', c_d_e_f_g: '2' } }],
  ['an unterminated later [ is dropped', { given: 'a[b][c=1', want: { a: { b: '1' } } }],
  ['text after ] is ignored', { given: 'a[b]c=1&a[d]x[e]=2', want: { a: { b: '1', d: '2' } } }],
  ['a [ inside a segment is kept', { given: 'a[b[c]=1', want: { a: { 'b[c': '1' } } }],
  ['a ] in a top-level name is kept', { given: 'a]b=1', want: { 'a]b': '1' } }],
  ['a NUL ends the name', { given: 'a%00b=1', want: { a: '1' } }],
  ['a NUL in a value is kept', { given: 'a=x%00y', want: { a: 'x\0y' } }],
  [
    '__proto__ and constructor are plain keys',
    {
      given: '__proto__[polluted]=1&constructor[prototype][polluted]=1&toString=x&a[hasOwnProperty]=y',
      want: {
        ['__proto__']: { polluted: '1' },
        constructor: { prototype: { polluted: '1' } },
        toString: 'x',
        a: { hasOwnProperty: 'y' },
      },
    },
  ],
  [
    `nesting ${MAX_DEPTH} levels deep is accepted`,
    { given: 'a[1][2][3][4][5][6][7][8]=x', want: { a: { 1: { 2: { 3: { 4: { 5: { 6: { 7: { 8: 'x' } } } } } } } } } },
  ],
  [
    `${MAX_PARAMETERS} parameters are accepted`,
    { given: values(MAX_PARAMETERS), want: { v: Array.from({ length: MAX_PARAMETERS }, (_, i) => String(i)) } },
  ],
  [
    'farmOS.py [value][] for >',
    {
      given:
        'filter%5Btimestamp_%3E%5D%5Bcondition%5D%5Bpath%5D=timestamp&filter%5Btimestamp_%3E%5D%5Bcondition%5D%5Boperator%5D=%3E&filter%5Btimestamp_%3E%5D%5Bcondition%5D%5Bvalue%5D%5B%5D=5',
      want: { filter: { 'timestamp_>': { condition: { path: 'timestamp', operator: '>', value: ['5'] } } } },
    },
  ],
  [
    'farmOS.py NOT IN: + in a bracketed key is a space',
    {
      given: 'filter%5Bstatus_not+in%5D%5Bcondition%5D%5Boperator%5D=NOT+IN',
      want: { filter: { 'status_not in': { condition: { operator: 'NOT IN' } } } },
    },
  ],
];

for (const [name, { given, want }] of cases) {
  test(`parseQueryString: ${name}`, () => {
    assert.deepStrictEqual(plain(parseQueryString(given)), want);
  });
}

test('parseQueryString: maps have a null prototype and Object.prototype is untouched', () => {
  const parsed = parseQueryString('__proto__[polluted]=1&constructor[prototype][polluted]=1&a[__proto__][polluted]=1');
  assert.equal(Object.getPrototypeOf(parsed), null);
  assert.equal(Object.getPrototypeOf(parsed.a), null);
  assert.equal(({} as Record<string, unknown>).polluted, undefined);
  assert.equal(Object.hasOwn(parsed, '__proto__'), true);
});

const failures: Array<[string, { given: string; want: Bad }]> = [
  [
    `more than ${MAX_PARAMETERS} parameters`,
    {
      given: `${values(MAX_PARAMETERS)}&w=1`,
      want: { parameter: 'w', detail: [`more than ${MAX_PARAMETERS} parameters`] },
    },
  ],
  [
    `nesting deeper than ${MAX_DEPTH}`,
    {
      given: 'a[1][2][3][4][5][6][7][8][9]=x',
      want: { parameter: 'a', detail: ["'a'", `more than ${MAX_DEPTH} levels`] },
    },
  ],
  [
    'nesting deeper than the limit through an unterminated bracket',
    { given: 'filter[1][2][3][4][5][6][7][8][9=x', want: { parameter: 'filter', detail: ["'filter'"] } },
  ],
];

for (const [name, { given, want }] of failures) {
  test(`parseQueryString rejects ${name}`, () => {
    assertBadParameter(() => parseQueryString(given), want);
  });
}
