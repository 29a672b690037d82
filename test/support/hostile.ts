/**
 * Arbitraries (fast-check) of hostile input, shared by the property tests in test/api and the
 * long runs in test/stress: query strings and JSON bodies built from the characters and words the
 * parsers care about, mixed with arbitrary text, so that most inputs reach deep into them.
 */
import fc from 'fast-check';

export const QUERY_TOKENS = [
  'filter',
  'sort',
  'page',
  'include',
  'fields',
  'foo',
  '[',
  ']',
  '[]',
  '[0]',
  '[1]',
  '[condition]',
  '[group]',
  '[path]',
  '[operator]',
  '[value]',
  '[memberOf]',
  '[conjunction]',
  '[offset]',
  '[limit]',
  '[cursor]',
  '[log--activity]',
  '=',
  '&',
  '%',
  '%zz',
  '%3D',
  '%5B',
  '%00',
  '+',
  ',',
  '-',
  '.',
  'name',
  'status',
  'timestamp',
  'asset',
  'asset.name',
  'quantity.units.name',
  'notes.value',
  'id',
  'flag',
  'owner',
  'IN',
  'NOT IN',
  'BETWEEN',
  'IS NULL',
  'CONTAINS',
  '<>',
  '>=',
  'OR',
  'AND',
  '@root',
  '1',
  '0',
  '-1',
  '99999999999999999999',
  'true',
  'eyJvIjo1MCwiaCI6IngiLCJ2IjpbXX0',
  '__proto__',
  'constructor',
];

/** A query string of parser words and arbitrary text. */
export const junkQuery = fc
  .array(
    fc.oneof(
      { weight: 4, arbitrary: fc.constantFrom(...QUERY_TOKENS) },
      { weight: 1, arbitrary: fc.string({ maxLength: 6 }) },
    ),
    { maxLength: 40 },
  )
  .map((parts) => parts.join(''));

const FIELDS = [
  'name',
  'timestamp',
  'status',
  'notes',
  'flag',
  'geometry',
  'is_movement',
  'data',
  'asset',
  'quantity',
  'owner',
  'location',
  'id',
  'nonsense',
  '__proto__',
];

/** A JSON text: mostly a resource document with odd members, sometimes any JSON at all. */
export function junkBody(knownIds: string[] = []) {
  const identifier = fc.record(
    {
      type: fc.oneof(fc.constantFrom('asset--equipment', 'log--activity', 'user--user', 'nonsense'), fc.string()),
      id: fc.oneof(fc.constantFrom('', ...knownIds), fc.uuid(), fc.string()),
      meta: fc.option(fc.jsonValue()),
    },
    { requiredKeys: [] },
  );
  const resource = fc.record(
    {
      type: fc.oneof(fc.constant('log--activity'), fc.string(), fc.jsonValue()),
      id: fc.oneof(fc.uuid(), fc.string(), fc.jsonValue()),
      attributes: fc.oneof(fc.dictionary(fc.constantFrom(...FIELDS), fc.jsonValue()), fc.jsonValue()),
      relationships: fc.oneof(
        fc.dictionary(
          fc.constantFrom(...FIELDS),
          fc.oneof(
            fc.record({ data: fc.oneof(identifier, fc.array(identifier, { maxLength: 3 }), fc.jsonValue()) }),
            fc.jsonValue(),
          ),
        ),
        fc.jsonValue(),
      ),
    },
    { requiredKeys: [] },
  );
  return fc
    .oneof({ weight: 3, arbitrary: fc.record({ data: resource }) }, { weight: 1, arbitrary: fc.jsonValue() })
    .map((b) => JSON.stringify(b));
}
