/**
 * The type changes a field may declare (`renamed_from` with `converted_from`): those every value of
 * the former type survives. The generator refuses any other; storage/value-rewrites.ts converts.
 */
import type { FieldType } from './field-types.ts';

export const CONVERSIONS: ReadonlyArray<readonly [FieldType, FieldType]> = [
  ['integer', 'decimal'],
  ['integer', 'string'],
  ['decimal', 'string'],
  ['list_string', 'string'],
  ['email', 'string'],
  ['string', 'string_long'],
  ['list_string', 'string_long'],
];

export function conversionDefined(from: FieldType, to: FieldType): boolean {
  return CONVERSIONS.some(([a, b]) => a === from && b === to);
}
