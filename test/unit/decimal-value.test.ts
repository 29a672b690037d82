// Decimal fields as promised (issue 29 Part A, item 4): one string form, from either database and
// for any input a client may send, rounded to the field's scale as Drupal rounds (half away from zero).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { decimalInput, decimalOutput } from '../../runtime/values/decimal-value.ts';

test('what SQLite (a float) and PostgreSQL (a padded string) hand back is served the same', () => {
  for (const [sqlite, postgres, served] of [
    [2.75, '2.7500000000', '2.75'],
    [3, '3.0000000000', '3'],
    [0, '0.0000000000', '0'],
    [-0.5, '-0.5000000000', '-0.5'],
    [1e-7, '0.0000001000', '0.0000001'],
    [123456789012.345, '123456789012.3450000000', '123456789012.345'],
  ] as const) {
    assert.equal(decimalOutput(sqlite, 10), served);
    assert.equal(decimalOutput(postgres, 10), served);
  }
});

test('input is rounded to the scale half away from zero; too many whole digits is a sentence', () => {
  assert.deepEqual(decimalInput('2.755', 8, 2), { value: '2.76' });
  assert.deepEqual(decimalInput('-2.755', 8, 2), { value: '-2.76' });
  assert.deepEqual(decimalInput(2.5, 3, 0), { value: '3' });
  assert.deepEqual(decimalInput('0.004', 8, 2), { value: '0' });
  assert.deepEqual(decimalInput(' +.5 ', 8, 2), { value: '0.5' });
  assert.deepEqual(decimalInput('99.999', 4, 2), {
    problem: 'must have at most 2 digits before the decimal point (precision 4, scale 2)',
  });
  assert.deepEqual(decimalInput(1e21, 30, 2), { value: '1000000000000000000000' });
  assert.deepEqual(decimalInput(1e21, 30, 10), {
    problem: 'must have at most 20 digits before the decimal point (precision 30, scale 10)',
  });
  for (const bad of ['', '1,5', '1e3', 'NaN', Infinity, true, {}])
    assert.deepEqual(decimalInput(bad, 8, 2), { problem: 'must be a decimal number' });
});
