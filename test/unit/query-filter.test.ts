// parseFilter: Drupal's filter grammar, fed with the query strings farmOS.js and farmOS.py really send.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseFilter, parseQueryString, type FilterGroup } from '../../runtime/jsonapi/query/index.ts';
import { assertBadParameter, cond, group, queryOf, root, type Bad } from './query-test-helpers.ts';

const UUID = '6f1a9a52-8b2f-4e0e-9a77-1b2c3d4e5f60';

/** Parse a query string and its `filter` parameter, as the runtime does. */
function filterOf(query: string): FilterGroup {
  return parseFilter(parseQueryString(query).filter);
}

// Request targets captured from farmOS.js 2.0.0-beta.16 (`farm.log.fetch('activity', {filter})`)
// against a recording server: Node's URL parser has already encoded `<`/`>` and left `=` raw.
const farmOsJs: Array<[string, { given: string; want: FilterGroup }]> = [
  [
    '{status: "done"} (%3D)',
    {
      given:
        '/api/log/activity?filter[status-0-filter][condition][path]=status&filter[status-0-filter][condition][operator]=%3D&filter[status-0-filter][condition][value]=done',
      want: root(cond('status-0-filter', 'status', '=', 'done')),
    },
  ],
  [
    '{status: {$ne: "done"}} (<> as %3C%3E)',
    {
      given:
        '/api/log/activity?filter[status-0-filter][condition][path]=status&filter[status-0-filter][condition][operator]=%3C%3E&filter[status-0-filter][condition][value]=done',
      want: root(cond('status-0-filter', 'status', '<>', 'done')),
    },
  ],
  [
    '{status: {$ne: "done"}} with <> raw, as clients.md shows it',
    {
      given:
        '/api/log/activity?filter[status-0-filter][condition][path]=status&filter[status-0-filter][condition][operator]=<>&filter[status-0-filter][condition][value]=done',
      want: root(cond('status-0-filter', 'status', '<>', 'done')),
    },
  ],
  [
    '{timestamp: {$gt: 1600000000}}',
    {
      given:
        '/api/log/activity?filter[timestamp-0-filter][condition][path]=timestamp&filter[timestamp-0-filter][condition][operator]=%3E&filter[timestamp-0-filter][condition][value]=1600000000',
      want: root(cond('timestamp-0-filter', 'timestamp', '>', '1600000000')),
    },
  ],
  [
    '{timestamp: {$gte, $lt}}: %3E= with a literal =',
    {
      given:
        '/api/log/activity?filter[timestamp-0-filter][condition][path]=timestamp&filter[timestamp-0-filter][condition][operator]=%3E=&filter[timestamp-0-filter][condition][value]=1600000000&filter[timestamp-1-filter][condition][path]=timestamp&filter[timestamp-1-filter][condition][operator]=%3C&filter[timestamp-1-filter][condition][value]=1700000000',
      want: root(
        cond('timestamp-0-filter', 'timestamp', '>=', '1600000000'),
        cond('timestamp-1-filter', 'timestamp', '<', '1700000000'),
      ),
    },
  ],
  [
    '>= fully raw',
    {
      given:
        'filter[timestamp-0-filter][condition][path]=timestamp&filter[timestamp-0-filter][condition][operator]=>=&filter[timestamp-0-filter][condition][value]=1600000000',
      want: root(cond('timestamp-0-filter', 'timestamp', '>=', '1600000000')),
    },
  ],
  [
    '{timestamp: {$lte: 1700000000}}',
    {
      given:
        '/api/log/activity?filter[timestamp-0-filter][condition][path]=timestamp&filter[timestamp-0-filter][condition][operator]=%3C=&filter[timestamp-0-filter][condition][value]=1700000000',
      want: root(cond('timestamp-0-filter', 'timestamp', '<=', '1700000000')),
    },
  ],
  [
    '{status: {$in: [...]}}: [value][0], [value][1]',
    {
      given:
        '/api/log/activity?filter[status-0-filter][condition][path]=status&filter[status-0-filter][condition][operator]=IN&filter[status-0-filter][condition][value][0]=done&filter[status-0-filter][condition][value][1]=pending',
      want: root(cond('status-0-filter', 'status', 'IN', ['done', 'pending'])),
    },
  ],
  [
    '{status: {$nin: [...]}}: NOT%20IN',
    {
      given:
        '/api/log/activity?filter[status-0-filter][condition][path]=status&filter[status-0-filter][condition][operator]=NOT%20IN&filter[status-0-filter][condition][value][0]=done&filter[status-0-filter][condition][value][1]=pending',
      want: root(cond('status-0-filter', 'status', 'NOT IN', ['done', 'pending'])),
    },
  ],
  [
    '{name: null}: IS NULL without a value',
    {
      given:
        '/api/log/activity?filter[name-filter][condition][path]=name&filter[name-filter][condition][operator]=IS%20NULL',
      want: root(cond('name-filter', 'name', 'IS NULL', null)),
    },
  ],
  [
    '{is_movement: true} becomes 1',
    {
      given:
        '/api/log/activity?filter[is_movement-0-filter][condition][path]=is_movement&filter[is_movement-0-filter][condition][operator]=%3D&filter[is_movement-0-filter][condition][value]=1',
      want: root(cond('is_movement-0-filter', 'is_movement', '=', '1')),
    },
  ],
  [
    '{"asset.id": uuid}',
    {
      given: `/api/log/activity?filter[asset.id-0-filter][condition][path]=asset.id&filter[asset.id-0-filter][condition][operator]=%3D&filter[asset.id-0-filter][condition][value]=${UUID}`,
      want: root(cond('asset.id-0-filter', 'asset.id', '=', UUID)),
    },
  ],
  [
    'two keys: %5B%5D-encoded by URLSearchParams',
    {
      given:
        '/api/log/activity?filter%5Blocation.name-0-filter%5D%5Bcondition%5D%5Bpath%5D=location.name&filter%5Blocation.name-0-filter%5D%5Bcondition%5D%5Boperator%5D=%3D&filter%5Blocation.name-0-filter%5D%5Bcondition%5D%5Bvalue%5D=x&filter%5Blocation.id-0-filter%5D%5Bcondition%5D%5Bpath%5D=location.id&filter%5Blocation.id-0-filter%5D%5Bcondition%5D%5Boperator%5D=IN&filter%5Blocation.id-0-filter%5D%5Bcondition%5D%5Bvalue%5D%5B0%5D=a&filter%5Blocation.id-0-filter%5D%5Bcondition%5D%5Bvalue%5D%5B1%5D=b',
      want: root(
        cond('location.name-0-filter', 'location.name', '=', 'x'),
        cond('location.id-0-filter', 'location.id', 'IN', ['a', 'b']),
      ),
    },
  ],
  [
    'an array is an OR group with memberOf',
    {
      given:
        '/api/log/activity?filter%5Bgroup-0%5D%5Bgroup%5D%5Bconjunction%5D=OR&filter%5Bstatus-0-filter%5D%5Bcondition%5D%5Bpath%5D=status&filter%5Bstatus-0-filter%5D%5Bcondition%5D%5Boperator%5D=%3D&filter%5Bstatus-0-filter%5D%5Bcondition%5D%5Bvalue%5D=pending&filter%5Bstatus-0-filter%5D%5Bcondition%5D%5BmemberOf%5D=group-0&filter%5Bname-0-filter%5D%5Bcondition%5D%5Bpath%5D=name&filter%5Bname-0-filter%5D%5Bcondition%5D%5Boperator%5D=%3D&filter%5Bname-0-filter%5D%5Bcondition%5D%5Bvalue%5D=x&filter%5Bname-0-filter%5D%5Bcondition%5D%5BmemberOf%5D=group-0',
      want: root(
        group(
          'group-0',
          'OR',
          cond('status-0-filter', 'status', '=', 'pending'),
          cond('name-0-filter', 'name', '=', 'x'),
        ),
      ),
    },
  ],
  [
    '{status: {$or: [...]}}: duplicate keys, the last wins as in PHP',
    {
      given:
        '/api/log/activity?filter%5Bgroup-1%5D%5Bgroup%5D%5Bconjunction%5D=OR&filter%5Bstatus-0-filter%5D%5Bcondition%5D%5Bpath%5D=status&filter%5Bstatus-0-filter%5D%5Bcondition%5D%5Boperator%5D=%3D&filter%5Bstatus-0-filter%5D%5Bcondition%5D%5Bvalue%5D=done&filter%5Bstatus-0-filter%5D%5Bcondition%5D%5BmemberOf%5D=group-1&filter%5Bstatus-0-filter%5D%5Bcondition%5D%5Bpath%5D=status&filter%5Bstatus-0-filter%5D%5Bcondition%5D%5Boperator%5D=%3D&filter%5Bstatus-0-filter%5D%5Bcondition%5D%5Bvalue%5D=pending&filter%5Bstatus-0-filter%5D%5Bcondition%5D%5BmemberOf%5D=group-1',
      want: root(group('group-1', 'OR', cond('status-0-filter', 'status', '=', 'pending'))),
    },
  ],
  [
    'a nested group puts its memberOf under [condition]',
    {
      // parseFilter([{status: {$or: ['done', 'pending']}}, {name: 'x'}])
      given:
        'filter%5Bgroup-0%5D%5Bgroup%5D%5Bconjunction%5D=OR&filter%5Bgroup-2%5D%5Bgroup%5D%5Bconjunction%5D=OR&filter%5Bgroup-2%5D%5Bcondition%5D%5BmemberOf%5D=group-0&filter%5Bstatus-0-filter%5D%5Bcondition%5D%5Bpath%5D=status&filter%5Bstatus-0-filter%5D%5Bcondition%5D%5Boperator%5D=%3D&filter%5Bstatus-0-filter%5D%5Bcondition%5D%5Bvalue%5D=done&filter%5Bstatus-0-filter%5D%5Bcondition%5D%5BmemberOf%5D=group-2&filter%5Bstatus-0-filter%5D%5Bcondition%5D%5Bpath%5D=status&filter%5Bstatus-0-filter%5D%5Bcondition%5D%5Boperator%5D=%3D&filter%5Bstatus-0-filter%5D%5Bcondition%5D%5Bvalue%5D=pending&filter%5Bstatus-0-filter%5D%5Bcondition%5D%5BmemberOf%5D=group-2&filter%5Bname-0-filter%5D%5Bcondition%5D%5Bpath%5D=name&filter%5Bname-0-filter%5D%5Bcondition%5D%5Boperator%5D=%3D&filter%5Bname-0-filter%5D%5Bcondition%5D%5Bvalue%5D=x&filter%5Bname-0-filter%5D%5Bcondition%5D%5BmemberOf%5D=group-0',
      want: root(
        group(
          'group-0',
          'OR',
          group('group-2', 'OR', cond('status-0-filter', 'status', '=', 'pending')),
          cond('name-0-filter', 'name', '=', 'x'),
        ),
      ),
    },
  ],
  ['filter: {} sends an empty query', { given: '/api/log/activity?', want: root() }],
];

// Query strings built by farmOS.py 1.0.1's farm.filter() and encoded by requests.
const farmOsPy: Array<[string, { given: string; want: FilterGroup }]> = [
  [
    'filter("status", "done"): short form',
    { given: 'filter%5Bstatus%5D=done', want: root(cond('status', 'status', '=', 'done')) },
  ],
  [
    'filter("timestamp", 5, ">"): a one-item list is reduced',
    {
      given:
        'filter%5Btimestamp_%3E%5D%5Bcondition%5D%5Bpath%5D=timestamp&filter%5Btimestamp_%3E%5D%5Bcondition%5D%5Boperator%5D=%3E&filter%5Btimestamp_%3E%5D%5Bcondition%5D%5Bvalue%5D%5B%5D=5',
      want: root(cond('timestamp_>', 'timestamp', '>', '5')),
    },
  ],
  [
    'filter("timestamp", 5, "<")',
    {
      given:
        'filter%5Btimestamp_%3C%5D%5Bcondition%5D%5Bpath%5D=timestamp&filter%5Btimestamp_%3C%5D%5Bcondition%5D%5Boperator%5D=%3C&filter%5Btimestamp_%3C%5D%5Bcondition%5D%5Bvalue%5D%5B%5D=5',
      want: root(cond('timestamp_<', 'timestamp', '<', '5')),
    },
  ],
  [
    'filter("status", "done", "<>")',
    {
      given:
        'filter%5Bstatus_%3C%3E%5D%5Bcondition%5D%5Bpath%5D=status&filter%5Bstatus_%3C%3E%5D%5Bcondition%5D%5Boperator%5D=%3C%3E&filter%5Bstatus_%3C%3E%5D%5Bcondition%5D%5Bvalue%5D%5B%5D=done',
      want: root(cond('status_<>', 'status', '<>', 'done')),
    },
  ],
  [
    'filter("timestamp", t, ">="): a scalar',
    {
      given:
        'filter%5Btimestamp_%3E%3D%5D%5Bcondition%5D%5Bpath%5D=timestamp&filter%5Btimestamp_%3E%3D%5D%5Bcondition%5D%5Boperator%5D=%3E%3D&filter%5Btimestamp_%3E%3D%5D%5Bcondition%5D%5Bvalue%5D=1700000000',
      want: root(cond('timestamp_>=', 'timestamp', '>=', '1700000000')),
    },
  ],
  [
    'filter("status", [...], "IN"): repeated [value][]',
    {
      given:
        'filter%5Bstatus_in%5D%5Bcondition%5D%5Bpath%5D=status&filter%5Bstatus_in%5D%5Bcondition%5D%5Boperator%5D=IN&filter%5Bstatus_in%5D%5Bcondition%5D%5Bvalue%5D%5B%5D=done&filter%5Bstatus_in%5D%5Bcondition%5D%5Bvalue%5D%5B%5D=pending',
      want: root(cond('status_in', 'status', 'IN', ['done', 'pending'])),
    },
  ],
  [
    'filter("status", [...], "NOT IN"): + for spaces',
    {
      given:
        'filter%5Bstatus_not+in%5D%5Bcondition%5D%5Bpath%5D=status&filter%5Bstatus_not+in%5D%5Bcondition%5D%5Boperator%5D=NOT+IN&filter%5Bstatus_not+in%5D%5Bcondition%5D%5Bvalue%5D%5B%5D=done&filter%5Bstatus_not+in%5D%5Bcondition%5D%5Bvalue%5D%5B%5D=pending',
      want: root(cond('status_not in', 'status', 'NOT IN', ['done', 'pending'])),
    },
  ],
  [
    'filter("timestamp", [a, b], "BETWEEN")',
    {
      given:
        'filter%5Btimestamp_between%5D%5Bcondition%5D%5Bpath%5D=timestamp&filter%5Btimestamp_between%5D%5Bcondition%5D%5Boperator%5D=BETWEEN&filter%5Btimestamp_between%5D%5Bcondition%5D%5Bvalue%5D%5B%5D=1600000000&filter%5Btimestamp_between%5D%5Bcondition%5D%5Bvalue%5D%5B%5D=1700000000',
      want: root(cond('timestamp_between', 'timestamp', 'BETWEEN', ['1600000000', '1700000000'])),
    },
  ],
  [
    'two filters merged with page[limit]',
    {
      given: `filter%5Basset.id%5D=${UUID}&filter%5Btimestamp_%3E%5D%5Bcondition%5D%5Bpath%5D=timestamp&filter%5Btimestamp_%3E%5D%5Bcondition%5D%5Boperator%5D=%3E&filter%5Btimestamp_%3E%5D%5Bcondition%5D%5Bvalue%5D%5B%5D=5&page%5Blimit%5D=10`,
      want: root(cond('asset.id', 'asset.id', '=', UUID), cond('timestamp_>', 'timestamp', '>', '5')),
    },
  ],
];

// The other forms of Drupal's grammar (farmos-behaviour.md §4.4).
const forms: Array<[string, { given: string; want: FilterGroup }]> = [
  ['no filter', { given: 'sort=name', want: root() }],
  [
    'short form with a relationship path',
    { given: `filter[asset.id]=${UUID}`, want: root(cond('asset.id', 'asset.id', '=', UUID)) },
  ],
  ['short form with an empty value', { given: 'filter[name]=', want: root(cond('name', 'name', '=', '')) }],
  [
    'shorthand with keys',
    {
      given: 'filter[a][path]=status&filter[a][value]=done&filter[a][operator]=%3C%3E',
      want: root(cond('a', 'status', '<>', 'done')),
    },
  ],
  [
    'shorthand with keys: the key is the default path',
    { given: 'filter[status][value]=done', want: root(cond('status', 'status', '=', 'done')) },
  ],
  [
    'shorthand with keys: IS NULL needs no value',
    { given: 'filter[notes][operator]=IS+NULL', want: root(cond('notes', 'notes', 'IS NULL', null)) },
  ],
  [
    'shorthand with keys may join a group',
    {
      given: 'filter[g][group][conjunction]=OR&filter[status][value]=done&filter[status][memberOf]=g',
      want: root(group('g', 'OR', cond('status', 'status', '=', 'done'))),
    },
  ],
  [
    'full condition without operator defaults to =',
    {
      given: 'filter[x][condition][path]=name&filter[x][condition][value]=Tractor',
      want: root(cond('x', 'name', '=', 'Tractor')),
    },
  ],
  [
    'word operators in any case are normalised',
    {
      given:
        'filter[a][condition][path]=status&filter[a][condition][operator]=in&filter[a][condition][value]=done' +
        '&filter[b][condition][path]=name&filter[b][condition][operator]=Starts_With&filter[b][condition][value]=T' +
        '&filter[c][condition][path]=notes.value&filter[c][condition][operator]=is+not+null',
      want: root(
        cond('a', 'status', 'IN', ['done']),
        cond('b', 'name', 'STARTS_WITH', 'T'),
        cond('c', 'notes.value', 'IS NOT NULL', null),
      ),
    },
  ],
  [
    'CONTAINS, ENDS_WITH, NOT BETWEEN',
    {
      given:
        'filter[a][condition][path]=name&filter[a][condition][operator]=CONTAINS&filter[a][condition][value]=ract' +
        '&filter[b][condition][path]=name&filter[b][condition][operator]=ENDS_WITH&filter[b][condition][value]=or' +
        '&filter[c][condition][path]=timestamp&filter[c][condition][operator]=NOT+BETWEEN&filter[c][condition][value][0]=1&filter[c][condition][value][1]=2',
      want: root(
        cond('a', 'name', 'CONTAINS', 'ract'),
        cond('b', 'name', 'ENDS_WITH', 'or'),
        cond('c', 'timestamp', 'NOT BETWEEN', ['1', '2']),
      ),
    },
  ],
  [
    'a single IN value becomes a one-item list',
    {
      given: 'filter[a][condition][path]=status&filter[a][condition][operator]=IN&filter[a][condition][value]=done',
      want: root(cond('a', 'status', 'IN', ['done'])),
    },
  ],
  [
    'sparse list indexes are read in index order',
    {
      given:
        'filter[a][condition][path]=status&filter[a][condition][operator]=IN&filter[a][condition][value][3]=b&filter[a][condition][value][1]=a',
      want: root(cond('a', 'status', 'IN', ['a', 'b'])),
    },
  ],
  [
    'a one-item list is reduced for =, <=, STARTS_WITH',
    {
      given:
        'filter[a][condition][path]=x&filter[a][condition][value][]=1&filter[b][condition][path]=y&filter[b][condition][operator]=<=&filter[b][condition][value][0]=2' +
        '&filter[c][condition][path]=z&filter[c][condition][operator]=STARTS_WITH&filter[c][condition][value][]=T',
      want: root(cond('a', 'x', '=', '1'), cond('b', 'y', '<=', '2'), cond('c', 'z', 'STARTS_WITH', 'T')),
    },
  ],
  [
    'lower-case conjunction',
    {
      given:
        'filter[g][group][conjunction]=or&filter[a][condition][path]=x&filter[a][condition][value]=1&filter[a][condition][memberOf]=g',
      want: root(group('g', 'OR', cond('a', 'x', '=', '1'))),
    },
  ],
  [
    'groups nest to any depth, declared in any order',
    {
      given:
        'filter[c][condition][path]=name&filter[c][condition][value]=x&filter[c][condition][memberOf]=g3' +
        '&filter[g3][group][conjunction]=AND&filter[g3][group][memberOf]=g2' +
        '&filter[g2][group][conjunction]=OR&filter[g2][group][memberOf]=g1' +
        '&filter[g1][group][conjunction]=AND' +
        '&filter[d][condition][path]=status&filter[d][condition][value]=done&filter[d][condition][memberOf]=g2',
      want: root(
        group(
          'g1',
          'AND',
          group('g2', 'OR', group('g3', 'AND', cond('c', 'name', '=', 'x')), cond('d', 'status', '=', 'done')),
        ),
      ),
    },
  ],
  [
    'memberOf=@root is the root',
    {
      given: 'filter[a][condition][path]=x&filter[a][condition][value]=1&filter[a][condition][memberOf]=@root',
      want: root(cond('a', 'x', '=', '1')),
    },
  ],
  ['an empty group is kept', { given: 'filter[g][group][conjunction]=OR', want: root(group('g', 'OR')) }],
  [
    'numeric filter ids (a list after parsing)',
    {
      given:
        'filter[0][condition][path]=x&filter[0][condition][value]=1&filter[0][condition][memberOf]=1&filter[1][group][conjunction]=OR',
      want: root(group('1', 'OR', cond('0', 'x', '=', '1'))),
    },
  ],
  [
    'sparse numeric filter ids keep their keys for memberOf',
    {
      given:
        'filter[5][group][conjunction]=OR&filter[7][condition][path]=x&filter[7][condition][value]=1&filter[7][condition][memberOf]=5',
      want: root(group('5', 'OR', cond('7', 'x', '=', '1'))),
    },
  ],
];

for (const [suite, table] of [
  ['farmOS.js', farmOsJs],
  ['farmOS.py', farmOsPy],
  ['forms', forms],
] as const) {
  for (const [name, { given, want }] of table) {
    test(`parseFilter (${suite}): ${name}`, () => {
      assert.deepStrictEqual(filterOf(queryOf(given.includes('?') ? given : `?${given}`)), want);
    });
  }
}

test('parseFilter: an absent filter is an empty root group', () => {
  assert.deepStrictEqual(parseFilter(undefined), root());
});

const c = (key: string, rest: string) =>
  rest
    .split('&')
    .map((pair) => `filter[${key}][condition]${pair}`)
    .join('&');

const failures: Array<[string, { given: string | (() => unknown); want: Bad }]> = [
  ['filter is not a map', { given: 'filter=status', want: { parameter: 'filter', detail: ['filter[status]=done'] } }],
  [
    'an operator that is not allowed',
    {
      given: c('x', '[path]=name&[operator]=LIKE&[value]=a'),
      want: {
        parameter: 'filter[x][condition][operator]',
        detail: ["The 'LIKE' operator is not allowed in a filter parameter.", "'x'"],
      },
    },
  ],
  [
    'an operator that only upper-cases to an allowed one outside ASCII',
    {
      given: c('x', '[path]=name&[operator]=%C4%B1n&[value]=a'),
      want: { parameter: 'filter[x][condition][operator]', detail: ["The 'ın' operator is not allowed"] },
    },
  ],
  [
    'an empty operator',
    {
      given: c('x', '[path]=name&[operator]=&[value]=a'),
      want: { parameter: 'filter[x][condition][operator]', detail: ["The '' operator is not allowed", "'x'"] },
    },
  ],
  [
    'an operator that is a list',
    {
      given: c('x', '[path]=name&[operator][]=IN&[value]=a'),
      want: { parameter: 'filter[x][condition][operator]', detail: ['must be a string', "'x'"] },
    },
  ],
  [
    'a missing path',
    {
      given: c('x', '[value]=a'),
      want: { parameter: 'filter[x][condition][path]', detail: ["Filter parameter is missing a 'path' key.", "'x'"] },
    },
  ],
  [
    'a missing path with an operator',
    {
      given: c('x', '[operator]=IS+NULL'),
      want: { parameter: 'filter[x][condition][path]', detail: ["missing a 'path' key"] },
    },
  ],
  [
    'an empty path',
    {
      given: c('x', '[path]=&[value]=a'),
      want: { parameter: 'filter[x][condition][path]', detail: ['The filter path is empty.', "'x'"] },
    },
  ],
  [
    'an empty path segment',
    {
      given: c('x', '[path]=asset..name&[value]=a'),
      want: { parameter: 'filter[x][condition][path]', detail: ["'asset..name' has an empty segment", "'x'"] },
    },
  ],
  [
    'a leading dot',
    {
      given: c('x', '[path]=.name&[value]=a'),
      want: { parameter: 'filter[x][condition][path]', detail: ['empty segment'] },
    },
  ],
  [
    'an empty segment in a short-form key',
    { given: 'filter[asset.]=a', want: { parameter: 'filter[asset.]', detail: ['empty segment', "'asset.'"] } },
  ],
  [
    'a path that is a map',
    {
      given: c('x', '[path][a]=b&[value]=a'),
      want: { parameter: 'filter[x][condition][path]', detail: ['must be a string'] },
    },
  ],
  [
    'a missing value',
    {
      given: c('x', '[path]=name'),
      want: { parameter: 'filter[x][condition][value]', detail: ["Filter parameter is missing a 'value' key.", "'x'"] },
    },
  ],
  [
    'a missing value with an operator',
    {
      given: c('x', '[path]=status&[operator]=IN'),
      want: { parameter: 'filter[x][condition][value]', detail: ["missing a 'value' key"] },
    },
  ],
  [
    'IS NULL with a value',
    {
      given: c('x', '[path]=name&[operator]=IS+NULL&[value]=a'),
      want: {
        parameter: 'filter[x][condition][value]',
        detail: ["Filters using the 'IS NULL' operator should not provide a value.", "'x'"],
      },
    },
  ],
  [
    'IS NOT NULL with an empty value',
    {
      given: c('x', '[path]=name&[operator]=IS+NOT+NULL&[value]='),
      want: { parameter: 'filter[x][condition][value]', detail: ["'IS NOT NULL' operator should not provide a value"] },
    },
  ],
  [
    'IN with an empty list',
    {
      given: () => parseFilter({ x: { condition: { path: 'status', operator: 'IN', value: [] } } }),
      want: {
        parameter: 'filter[x][condition][value]',
        detail: ["The 'IN' operator needs a non-empty list of values.", "'x'"],
      },
    },
  ],
  [
    'NOT IN with a map',
    {
      given: c('x', '[path]=status&[operator]=NOT+IN&[value][a]=done'),
      want: { parameter: 'filter[x][condition][value]', detail: ["'NOT IN' operator needs a list", "'x'"] },
    },
  ],
  [
    'IN with a map item',
    {
      given: c('x', '[path]=status&[operator]=IN&[value][0][a]=done'),
      want: { parameter: 'filter[x][condition][value]', detail: ["Each value of the 'IN' operator must be a string"] },
    },
  ],
  [
    'BETWEEN with one value',
    {
      given: c('x', '[path]=timestamp&[operator]=BETWEEN&[value][]=1'),
      want: {
        parameter: 'filter[x][condition][value]',
        detail: ["The 'BETWEEN' operator needs exactly two values, got 1.", "'x'"],
      },
    },
  ],
  [
    'BETWEEN with a scalar',
    {
      given: c('x', '[path]=timestamp&[operator]=BETWEEN&[value]=1'),
      want: { parameter: 'filter[x][condition][value]', detail: ['exactly two values, got 1'] },
    },
  ],
  [
    'NOT BETWEEN with three values',
    {
      given: c('x', '[path]=timestamp&[operator]=NOT+BETWEEN&[value][]=1&[value][]=2&[value][]=3'),
      want: {
        parameter: 'filter[x][condition][value]',
        detail: ["'NOT BETWEEN' operator needs exactly two values, got 3."],
      },
    },
  ],
  [
    '> with two values',
    {
      given: c('x', '[path]=timestamp&[operator]=%3E&[value][]=1&[value][]=2'),
      want: {
        parameter: 'filter[x][condition][value]',
        detail: ["The '>' operator needs a single value, got 2.", "'x'"],
      },
    },
  ],
  [
    '<> with two values',
    {
      given: c('x', '[path]=status&[operator]=%3C%3E&[value][0]=a&[value][1]=b'),
      want: { parameter: 'filter[x][condition][value]', detail: ["'<>' operator needs a single value"] },
    },
  ],
  [
    '= with a map value',
    {
      given: c('x', '[path]=name&[value][a]=1'),
      want: {
        parameter: 'filter[x][condition][value]',
        detail: ["The '=' operator needs a single string value, not an object.", "'x'"],
      },
    },
  ],
  [
    'CONTAINS with a one-item list holding a map',
    {
      given: c('x', '[path]=name&[operator]=CONTAINS&[value][0][a]=1'),
      want: { parameter: 'filter[x][condition][value]', detail: ['not an object'] },
    },
  ],
  [
    'short form with a map value',
    {
      given: 'filter[status][x]=done',
      want: { parameter: 'filter[status]', detail: ["needs a 'condition' or a 'group' key", "'status'"] },
    },
  ],
  [
    'short form with a list value',
    { given: 'filter[status][]=done', want: { parameter: 'filter[status]', detail: ["'status'"] } },
  ],
  [
    'an unknown key in a condition',
    {
      given: c('x', '[path]=status&[opertor]=IN&[value]=a'),
      want: {
        parameter: 'filter[x][condition][opertor]',
        detail: ["The 'opertor' key is not allowed in a filter condition", "'x'"],
      },
    },
  ],
  [
    'an unknown key next to condition',
    {
      given: `${c('x', '[path]=status&[value]=a')}&filter[x][value]=b`,
      want: { parameter: 'filter[x][value]', detail: ["The 'value' key is not allowed", "'x'"] },
    },
  ],
  [
    'a condition that is not a map',
    {
      given: 'filter[x][condition]=status',
      want: { parameter: 'filter[x][condition]', detail: ["'path', 'operator' and 'value'", "'x'"] },
    },
  ],
  [
    'both a condition and a group',
    {
      given: `filter[x][group][conjunction]=OR&${c('x', '[path]=a&[value]=b')}`,
      want: { parameter: 'filter[x]', detail: ['cannot be both a condition and a group', "'x'"] },
    },
  ],
  [
    'memberOf naming no group',
    {
      given: c('x', '[path]=a&[value]=b&[memberOf]=nope'),
      want: {
        parameter: 'filter[x][condition][memberOf]',
        detail: ["memberOf 'nope' does not name a filter group.", "'x'"],
      },
    },
  ],
  [
    'memberOf naming a condition',
    {
      given: `${c('x', '[path]=a&[value]=b')}&${c('y', '[path]=a&[value]=b&[memberOf]=x')}`,
      want: {
        parameter: 'filter[y][condition][memberOf]',
        detail: ["'x' names a filter condition, not a group", "'y'"],
      },
    },
  ],
  [
    'a group memberOf naming no group',
    {
      given: 'filter[g][group][conjunction]=OR&filter[g][group][memberOf]=h',
      want: { parameter: 'filter[g][group][memberOf]', detail: ["memberOf 'h' does not name a filter group", "'g'"] },
    },
  ],
  [
    'memberOf that is a list',
    {
      given: c('x', '[path]=a&[value]=b&[memberOf][]=g'),
      want: { parameter: 'filter[x][condition][memberOf]', detail: ['memberOf must be the key of a filter group'] },
    },
  ],
  [
    'a group that is its own member',
    {
      given: 'filter[g][group][conjunction]=OR&filter[g][group][memberOf]=g',
      want: {
        parameter: 'filter[g][group][memberOf]',
        detail: ["The filter group 'g' is a member of itself: g → g.", "'g'"],
      },
    },
  ],
  [
    'a circular memberOf chain',
    {
      given:
        'filter[a][group][conjunction]=OR&filter[a][group][memberOf]=c&filter[b][group][conjunction]=AND&filter[b][group][memberOf]=a&filter[c][group][conjunction]=OR&filter[c][group][memberOf]=b',
      want: {
        parameter: 'filter[a][group][memberOf]',
        detail: ["The filter group 'a' is a member of itself: a → c → b → a."],
      },
    },
  ],
  [
    'a chain leading into a cycle',
    {
      given:
        'filter[top][group][conjunction]=OR&filter[top][group][memberOf]=a&filter[a][group][conjunction]=OR&filter[a][group][memberOf]=b&filter[b][group][conjunction]=OR&filter[b][group][memberOf]=a',
      want: { parameter: 'filter[a][group][memberOf]', detail: ["'a' is a member of itself: a → b → a."] },
    },
  ],
  [
    'a circular chain through [condition][memberOf] (farmOS.js group form)',
    {
      given:
        'filter[a][group][conjunction]=OR&filter[a][condition][memberOf]=b&filter[b][group][conjunction]=OR&filter[b][condition][memberOf]=a',
      want: { parameter: 'filter[a][condition][memberOf]', detail: ['member of itself'] },
    },
  ],
  [
    '@root as a key',
    {
      given: 'filter[@root][group][conjunction]=AND',
      want: { parameter: 'filter[@root]', detail: ["'@root' is a reserved filter id."] },
    },
  ],
  [
    '@root as a short-form key',
    { given: 'filter[@root]=x', want: { parameter: 'filter[@root]', detail: ["'@root' is a reserved filter id."] } },
  ],
  [
    'a conjunction other than AND/OR',
    {
      given: 'filter[g][group][conjunction]=XOR',
      want: {
        parameter: 'filter[g][group][conjunction]',
        detail: ["The 'XOR' conjunction is not allowed in a filter group; use AND or OR.", "'g'"],
      },
    },
  ],
  [
    'a missing conjunction',
    {
      given: 'filter[g][group][memberOf]=@root',
      want: { parameter: 'filter[g][group][conjunction]', detail: ["needs a 'conjunction' key", "'g'"] },
    },
  ],
  [
    'a group that is not a map',
    { given: 'filter[g][group]=OR', want: { parameter: 'filter[g][group]', detail: ["needs a 'conjunction' key"] } },
  ],
  [
    'an unknown key in a group',
    {
      given: 'filter[g][group][conjunction]=OR&filter[g][group][members]=a',
      want: { parameter: 'filter[g][group][members]', detail: ["The 'members' key is not allowed in a filter group"] },
    },
  ],
];

for (const [name, { given, want }] of failures) {
  test(`parseFilter rejects ${name}`, () => {
    assertBadParameter(typeof given === 'function' ? given : () => filterOf(given), want);
  });
}
