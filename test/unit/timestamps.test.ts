// Timestamps render as farmOS renders them (RFC 3339, UTC, `+00:00`) across the whole accepted
// range, years 0000 to 9999: formatTimestamp's arithmetic agrees with Date's ISO string, and
// what it writes parses back to the same second.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { formatTimestamp, parseTimestamp, MIN_TIMESTAMP, MAX_TIMESTAMP } from '../../runtime/values/timestamps.ts';

const viaDate = (s: number) => `${new Date(s * 1000).toISOString().slice(0, 19)}+00:00`;

test('every accepted second renders as Date renders it, and parses back', () => {
  const edges = [
    MIN_TIMESTAMP,
    MAX_TIMESTAMP,
    0,
    -1,
    86_399,
    86_400,
    951_782_400 /* 2000-02-29 */,
    4_107_542_400 /* 2100-03-01 */,
    -62_162_035_200 /* 0000-02-29 */,
    1_700_000_000,
  ];
  fc.assert(
    fc.property(fc.oneof(fc.constantFrom(...edges), fc.integer({ min: MIN_TIMESTAMP, max: MAX_TIMESTAMP })), (s) => {
      const text = formatTimestamp(s);
      assert.equal(text, viaDate(s));
      assert.equal(parseTimestamp(text), s);
    }),
    { numRuns: 20_000 },
  );
  assert.equal(formatTimestamp(MIN_TIMESTAMP), '0000-01-01T00:00:00+00:00');
  assert.equal(formatTimestamp(MAX_TIMESTAMP), '9999-12-31T23:59:59+00:00');
  assert.equal(formatTimestamp(null), null);
});
