// The response budget (TILTH_RESPONSE_MAX_BYTES): a document is sent when its UTF-8 text fits the
// budget and refused with a 413 when it does not, to the byte, whatever characters it holds. The
// size is counted roughly while it cannot matter and exactly once it might (jsonapi/document.ts).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { documentText } from '../../runtime/jsonapi/document.ts';
import { ApiError } from '../../runtime/errors.ts';

const text = fc.string({ unit: fc.constantFrom('a', 'é', '€', '😀', '"', '\\', '\n', 'z'), maxLength: 40 });
const resource = fc.record({
  type: text,
  id: text,
  attributes: fc.dictionary(text, fc.oneof(text, fc.integer(), fc.constant(null)), { maxKeys: 4 }),
});
const documents = fc.record({
  jsonapi: fc.constant({ version: '1.0' }),
  data: fc.oneof(fc.array(resource, { maxLength: 6 }), resource, fc.constant(null)),
  included: fc.option(fc.array(resource, { maxLength: 4 }), { nil: undefined }),
  links: fc.record({ self: fc.record({ href: text }) }),
});

test("a document is sent exactly when its UTF-8 bytes fit the budget, and is then JSON.stringify's text", () => {
  fc.assert(
    fc.property(documents, fc.integer({ min: -40, max: 40 }), (doc, delta) => {
      const expected = JSON.stringify(doc);
      const size = Buffer.byteLength(expected);
      const budget = Math.max(0, size + delta);
      if (size <= budget) assert.equal(documentText(doc, budget), expected);
      else
        assert.throws(
          () => documentText(doc, budget),
          (e: unknown) => e instanceof ApiError && e.status === 413,
        );
    }),
    { numRuns: 2000 },
  );
});

test('a page far over the budget is refused before its text is joined', () => {
  const big = { data: Array.from({ length: 1000 }, (_, i) => ({ id: String(i), note: '€'.repeat(1000) })) };
  assert.throws(
    () => documentText(big, 100_000),
    (e: unknown) => e instanceof ApiError && e.status === 413 && /TILTH_RESPONSE_MAX_BYTES/.test(e.message),
  );
  assert.equal(documentText(big, Infinity), JSON.stringify(big));
});
