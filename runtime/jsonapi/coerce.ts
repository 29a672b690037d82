/**
 * Turns one attribute value from a request into the internal item value of its field type, or
 * explains in a sentence what is wrong. This is the JSON:API face's wire: it accepts what real
 * clients send (farmOS.js sends empty strings for unset list fields, ISO strings for timestamps;
 * Drupal accepts `{value: …}` for any single-property field) and turns it into a value of the
 * field's type; what such a value may be (ranges, lengths, allowed values, e-mail, WKT) is the
 * domain's rule, asked of `model/field-rules.ts`, so nothing that would store garbage gets in.
 */
import type { FieldDescriptor } from '../model/descriptor.ts';
import type { ItemValue } from '../storage/records.ts';
import { parseTimestamp, TIMESTAMP_FORMATS } from '../values/timestamps.ts';
import { decimalToFraction } from '../values/fraction.ts';
import { decimalInput, DEFAULT_DECIMAL } from '../values/decimal-value.ts';
import { TEXT_FORMATS } from '../values/text.ts';
import {
  boundsProblem,
  checkGeometry,
  hasNul,
  idTagTypeProblem,
  integerProblem,
  isTextFormat,
  NUL_PROBLEM,
  stringProblem,
} from '../model/field-rules.ts';

export type Coerced = { ok: true; value: ItemValue } | { ok: false; problem: string };

const ok = (value: ItemValue): Coerced => ({ ok: true, value });
const bad = (problem: string): Coerced => ({ ok: false, problem });
/** A value of its type, or what the domain's rule says is wrong with it. */
const unless = (problem: string | null, value: ItemValue): Coerced => (problem ? bad(problem) : ok(value));

/**
 * A request value as an error detail names it: a string quoted, anything else by its kind. Never
 * `String(value)`: an object with a `toString` member that is not a function makes that throw.
 */
export function quoted(value: unknown): string {
  return typeof value === 'string' ? `"${value}"` : describe(value);
}

/** What kind of value a request sent, for an error detail: `a list`, `an object`, `number 5`. */
function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object') return 'an object';
  return `${typeof value} ${JSON.stringify(value)}`;
}

/** Unwrap `{value: x}` for single-property fields, as Drupal allows. */
function mainValue(value: unknown): unknown {
  if (
    value &&
    typeof value === 'object' &&
    !Array.isArray(value) &&
    'value' in value &&
    Object.keys(value).length === 1
  )
    return (value as { value: unknown }).value;
  return value;
}

/** Nothing sent: null, or (for most types) an empty string, as farmOS.js sends for unset fields. */
const unset = (v: unknown): boolean => v === null || v === undefined || v === '';

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function unknownKeys(value: Record<string, unknown>, allowed: string[]): string | null {
  const extra = Object.keys(value).filter((k) => !allowed.includes(k));
  return extra.length
    ? `has unknown propert${extra.length > 1 ? 'ies' : 'y'} ${extra.map((k) => `"${k}"`).join(', ')} (allowed: ${allowed.join(', ')})`
    : null;
}

/** Strings (string, long string, e-mail, list of values, password): a number is taken as its text, except for a list's value. */
function coerceString(field: FieldDescriptor, raw: unknown): Coerced {
  let v = mainValue(raw);
  if (v === null || v === undefined) return ok(null);
  if (typeof v === 'number' && field.type !== 'list_string') v = String(v);
  if (typeof v !== 'string') return bad(`must be a string, not ${describe(v)}`);
  if (field.type === 'list_string' && v === '') return ok(null);
  return unless(stringProblem(field, v), v);
}

/** true or false; also 1, 0 and their strings, and "true" and "false". */
function coerceBoolean(_field: FieldDescriptor, raw: unknown): Coerced {
  const v = mainValue(raw);
  if (v === null || v === undefined) return ok(null);
  if (typeof v === 'boolean') return ok(v);
  if (v === 1 || v === '1' || v === 'true') return ok(true);
  if (v === 0 || v === '0' || v === 'false') return ok(false);
  return bad(`must be true or false, not ${describe(v)}`);
}

/** A whole number, or its digits as a string. */
function coerceInteger(field: FieldDescriptor, raw: unknown): Coerced {
  const v = mainValue(raw);
  if (unset(v)) return ok(null);
  const n = typeof v === 'string' && /^-?\d+$/.test(v.trim()) ? Number(v) : v;
  if (typeof n !== 'number' || !Number.isSafeInteger(n)) return bad(`must be a whole number, not ${describe(v)}`);
  return unless(integerProblem(field, n), n);
}

/** A decimal number or its text, rounded to the field's scale and served as a string without trailing zeros (values/decimal-value.ts). */
function coerceDecimal(field: FieldDescriptor, raw: unknown): Coerced {
  const v = mainValue(raw);
  if (unset(v)) return ok(null);
  const d = decimalInput(v, field.precision ?? DEFAULT_DECIMAL.precision, field.scale ?? DEFAULT_DECIMAL.scale);
  if ('problem' in d)
    return bad(
      d.problem === 'must be a decimal number'
        ? `must be a decimal number, not ${describe(v)}`
        : `${d.problem}, not ${describe(v)}`,
    );
  return unless(boundsProblem(field, Number(d.value)), d.value);
}

/** A date and time in one of the formats values/timestamps.ts reads. */
function coerceTimestamp(_field: FieldDescriptor, raw: unknown): Coerced {
  const v = mainValue(raw);
  if (unset(v)) return ok(null);
  const t = parseTimestamp(v);
  if (t === null)
    return bad(`"${typeof v === 'string' ? v : JSON.stringify(v)}" is not a date and time; use ${TIMESTAMP_FORMATS}`);
  return ok(t);
}

/** A long text: `{value, format}` (farmOS also sends `processed` and `summary`), or a string in the default format. */
function coerceTextLong(_field: FieldDescriptor, raw: unknown): Coerced {
  if (raw === null || raw === undefined) return ok(null);
  if (typeof raw === 'string') return hasNul(raw) ? bad(NUL_PROBLEM) : ok({ value: raw, format: 'default' });
  if (!isObject(raw)) return bad(`must be an object {value, format} or a string, not ${describe(raw)}`);
  const extra = unknownKeys(raw, ['value', 'format', 'processed', 'summary']);
  if (extra) return bad(extra);
  if (raw.value === null || raw.value === undefined) return ok(null);
  if (typeof raw.value !== 'string') return bad(`value must be a string, not ${describe(raw.value)}`);
  if (hasNul(raw.value)) return bad(`value ${NUL_PROBLEM}`);
  const format = raw.format === undefined || raw.format === null || raw.format === '' ? 'default' : raw.format;
  if (!isTextFormat(format))
    return bad(`format ${quoted(format)} is not a text format; use one of: ${TEXT_FORMATS.join(', ')}`);
  return ok({ value: raw.value, format });
}

/** A whole number as a string of digits taken as the number (`pattern`: what the digits may look like). */
const digits = (v: unknown, pattern: RegExp): unknown => (typeof v === 'string' && pattern.test(v) ? Number(v) : v);

/** A fraction: `{numerator, denominator}` (as numbers or their digits), `{decimal}`, or a decimal number or its text. */
function coerceFraction(_field: FieldDescriptor, raw: unknown): Coerced {
  if (unset(raw)) return ok(null);
  if (typeof raw === 'number' || typeof raw === 'string') {
    const f = decimalToFraction(String(raw));
    return f
      ? ok(f as unknown as ItemValue)
      : bad(`must be a number or an object {numerator, denominator} or {decimal}, not ${describe(raw)}`);
  }
  if (!isObject(raw)) return bad(`must be an object {numerator, denominator} or {decimal}, not ${describe(raw)}`);
  const extra = unknownKeys(raw, ['numerator', 'denominator', 'decimal']);
  if (extra) return bad(extra);
  if (raw.numerator !== undefined && raw.numerator !== null) {
    const num = digits(raw.numerator, /^-?\d+$/);
    const den = raw.denominator === undefined || raw.denominator === null ? 1 : digits(raw.denominator, /^\d+$/);
    if (typeof num !== 'number' || !Number.isSafeInteger(num))
      return bad(`numerator must be a whole number, not ${describe(raw.numerator)}`);
    if (typeof den !== 'number' || !Number.isSafeInteger(den) || den <= 0)
      return bad(`denominator must be a whole number greater than 0, not ${describe(raw.denominator)}`);
    return ok({ numerator: num, denominator: den });
  }
  if (raw.decimal !== undefined && raw.decimal !== null) {
    const f =
      typeof raw.decimal === 'number' || typeof raw.decimal === 'string'
        ? decimalToFraction(String(raw.decimal))
        : null;
    return f ? ok(f as unknown as ItemValue) : bad(`decimal must be a decimal number, not ${describe(raw.decimal)}`);
  }
  return ok(null);
}

/** The members of a geofield's object that farmOS serves (the WKT is `value`; the rest are derived from it). */
const GEOFIELD_MEMBERS = ['value', 'geo_type', 'lat', 'lon', 'left', 'top', 'right', 'bottom', 'geohash', 'latlon'];

/** A geometry: WKT text, or an object whose `value` is the WKT (farmOS's own, sent back as it came). */
function coerceGeofield(_field: FieldDescriptor, raw: unknown): Coerced {
  const v = mainValue(raw);
  if (unset(v)) return ok(null);
  let wkt: unknown = v;
  if (isObject(v)) {
    const extra = unknownKeys(v, GEOFIELD_MEMBERS);
    if (extra) return bad(extra);
    wkt = v.value;
    if (unset(wkt)) return ok(null);
  }
  if (typeof wkt !== 'string') return bad(`must be WKT text or an object {value: WKT}, not ${describe(wkt)}`);
  const checked = checkGeometry(wkt);
  return checked.ok ? ok(checked.value as unknown as ItemValue) : bad(checked.problem);
}

/** An ID tag: `{id, type, location}`, each a string or absent. */
function coerceIdTag(field: FieldDescriptor, raw: unknown): Coerced {
  if (raw === null || raw === undefined) return ok(null);
  if (!isObject(raw)) return bad(`must be an object {id, type, location}, not ${describe(raw)}`);
  const extra = unknownKeys(raw, ['id', 'type', 'location']);
  if (extra) return bad(extra);
  for (const k of ['id', 'type', 'location'] as const) {
    if (raw[k] !== undefined && raw[k] !== null && typeof raw[k] !== 'string')
      return bad(`${k} must be a string, not ${describe(raw[k])}`);
    if (hasNul(raw[k])) return bad(`${k} ${NUL_PROBLEM}`);
  }
  const type = (raw.type as string | undefined) || null;
  return unless(type && idTagTypeProblem(field, type), {
    id: (raw.id as string | undefined) ?? null,
    type,
    location: (raw.location as string | undefined) ?? null,
  });
}

/** The reader of each field type's items; a type not here cannot be set. */
const COERCE_ITEM: Readonly<Record<string, (field: FieldDescriptor, raw: unknown) => Coerced>> = {
  string: coerceString,
  string_long: coerceString,
  email: coerceString,
  uri: coerceString,
  list_string: coerceString,
  password: coerceString,
  boolean: coerceBoolean,
  integer: coerceInteger,
  decimal: coerceDecimal,
  timestamp: coerceTimestamp,
  text_long: coerceTextLong,
  fraction: coerceFraction,
  geofield: coerceGeofield,
  id_tag: coerceIdTag,
};

/** Coerce one item (not a list) of a field. */
export function coerceItem(field: FieldDescriptor, raw: unknown): Coerced {
  const coerce = Object.hasOwn(COERCE_ITEM, field.type) ? COERCE_ITEM[field.type] : undefined;
  return coerce ? coerce(field, raw) : bad('cannot be set');
}
/** Coerce a whole field value: a list for multiple fields (a single item is accepted and wrapped). */
export function coerceField(
  field: FieldDescriptor,
  raw: unknown,
): { ok: true; value: ItemValue | ItemValue[] } | { ok: false; problem: string; index?: number } {
  if (!field.multiple) {
    if (Array.isArray(raw)) {
      if (raw.length === 0) return { ok: true, value: null };
      if (raw.length > 1) return { ok: false, problem: `takes one value, not a list of ${raw.length}` };
      raw = raw[0];
    }
    const c = coerceItem(field, raw);
    return c.ok ? { ok: true, value: c.value } : c;
  }
  if (raw === null || raw === undefined) return { ok: true, value: [] };
  const items = Array.isArray(raw) ? raw : [raw];
  const out: ItemValue[] = [];
  for (let i = 0; i < items.length; i++) {
    const c = coerceItem(field, items[i]);
    if (!c.ok) return { ok: false, problem: c.problem, index: i };
    if (c.value !== null) out.push(c.value);
  }
  return { ok: true, value: out };
}
