/**
 * Turns one attribute value from a request into the internal item value of its field type, or
 * explains in a sentence what is wrong. Accepts what real clients send (farmOS.js sends empty
 * strings for unset list fields, ISO strings for timestamps; Drupal accepts `{value: …}` for any
 * single-property field), and nothing that would store garbage.
 */
import type { FieldDescriptor } from '../model/descriptor.ts';
import type { ItemValue } from '../storage/records.ts';
import { parseTimestamp, TIMESTAMP_FORMATS } from '../values/timestamps.ts';
import { decimalToFraction } from '../values/fraction.ts';
import { decimalInput, DEFAULT_DECIMAL } from '../values/decimal-value.ts';
import { checkWkt } from '../values/geometry.ts';
import { TEXT_FORMATS } from '../values/text.ts';

export type Coerced = { ok: true; value: ItemValue } | { ok: false; problem: string };

const ok = (value: ItemValue): Coerced => ({ ok: true, value });
const bad = (problem: string): Coerced => ({ ok: false, problem });

const EMAIL = /^[^@\s]+@[^@\s]+\.[^@\s]+$/;

/** Integers are stored in 32-bit columns on PostgreSQL (`integer`); SQLite's are wider. */
const INT_MIN = -2147483648;
const INT_MAX = 2147483647;

/** PostgreSQL cannot store U+0000 in text, so no database gets it: the same answer on both. */
const NUL_PROBLEM = 'may not contain the NUL character (U+0000)';
const hasNul = (v: unknown): boolean => typeof v === 'string' && v.includes('\u0000');

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
  if (value && typeof value === 'object' && !Array.isArray(value) && 'value' in value && Object.keys(value).length === 1) return (value as { value: unknown }).value;
  return value;
}

function unknownKeys(value: Record<string, unknown>, allowed: string[]): string | null {
  const extra = Object.keys(value).filter((k) => !allowed.includes(k));
  return extra.length ? `has unknown propert${extra.length > 1 ? 'ies' : 'y'} ${extra.map((k) => `"${k}"`).join(', ')} (allowed: ${allowed.join(', ')})` : null;
}

/** Coerce one item (not a list) of a field. */
export function coerceItem(field: FieldDescriptor, raw: unknown): Coerced {
  switch (field.type) {
    case 'string':
    case 'string_long':
    case 'email':
    case 'list_string':
    case 'password': {
      let v = mainValue(raw);
      if (v === null || v === undefined) return ok(null);
      if (typeof v === 'number' && field.type !== 'list_string') v = String(v);
      if (typeof v !== 'string') return bad(`must be a string, not ${describe(v)}`);
      if (hasNul(v)) return bad(NUL_PROBLEM);
      if (field.type === 'list_string') {
        if (v === '') return ok(null);
        if (field.allowedValues && !field.allowedValues.some((a) => a.value === v)) {
          return bad(`"${v}" is not an allowed value; use one of: ${field.allowedValues.map((a) => a.value).join(', ')}`);
        }
      }
      if (field.maxLength && [...v].length > field.maxLength) return bad(`may not be longer than ${field.maxLength} characters (it has ${[...v].length})`);
      if (field.type === 'email' && v !== '' && !EMAIL.test(v)) return bad(`"${v}" is not a valid e-mail address`);
      return ok(v);
    }
    case 'boolean': {
      const v = mainValue(raw);
      if (v === null || v === undefined) return ok(null);
      if (typeof v === 'boolean') return ok(v);
      if (v === 1 || v === '1' || v === 'true') return ok(true);
      if (v === 0 || v === '0' || v === 'false') return ok(false);
      return bad(`must be true or false, not ${describe(v)}`);
    }
    case 'integer': {
      const v = mainValue(raw);
      if (v === null || v === undefined || v === '') return ok(null);
      const n = typeof v === 'string' && /^-?\d+$/.test(v.trim()) ? Number(v) : v;
      if (typeof n !== 'number' || !Number.isSafeInteger(n)) return bad(`must be a whole number, not ${describe(v)}`);
      if (n < INT_MIN || n > INT_MAX) return bad(`must be between ${INT_MIN} and ${INT_MAX}, not ${n}`);
      if (field.min !== undefined && n < field.min) return bad(`must be at least ${field.min}`);
      if (field.max !== undefined && n > field.max) return bad(`must be at most ${field.max}`);
      return ok(n);
    }
    case 'decimal': {
      const v = mainValue(raw);
      if (v === null || v === undefined || v === '') return ok(null);
      // Rounded to the field's scale and served as a string without trailing zeros (values/decimal-value.ts).
      const d = decimalInput(v, field.precision ?? DEFAULT_DECIMAL.precision, field.scale ?? DEFAULT_DECIMAL.scale);
      if ('problem' in d) return bad(d.problem === 'must be a decimal number' ? `must be a decimal number, not ${describe(v)}` : `${d.problem}, not ${describe(v)}`);
      const s = d.value;
      if (field.min !== undefined && Number(s) < field.min) return bad(`must be at least ${field.min}`);
      if (field.max !== undefined && Number(s) > field.max) return bad(`must be at most ${field.max}`);
      return ok(s);
    }
    case 'timestamp': {
      const v = mainValue(raw);
      if (v === null || v === undefined || v === '') return ok(null);
      const t = parseTimestamp(v);
      if (t === null) return bad(`"${typeof v === 'string' ? v : JSON.stringify(v)}" is not a date and time; use ${TIMESTAMP_FORMATS}`);
      return ok(t);
    }
    case 'text_long': {
      if (raw === null || raw === undefined) return ok(null);
      if (typeof raw === 'string') return hasNul(raw) ? bad(NUL_PROBLEM) : ok({ value: raw, format: 'default' });
      if (typeof raw !== 'object' || Array.isArray(raw)) return bad(`must be an object {value, format} or a string, not ${describe(raw)}`);
      const o = raw as Record<string, unknown>;
      const extra = unknownKeys(o, ['value', 'format', 'processed', 'summary']);
      if (extra) return bad(extra);
      if (o.value === null || o.value === undefined) return ok(null);
      if (typeof o.value !== 'string') return bad(`value must be a string, not ${describe(o.value)}`);
      if (hasNul(o.value)) return bad(`value ${NUL_PROBLEM}`);
      const format = o.format === undefined || o.format === null || o.format === '' ? 'default' : o.format;
      if (typeof format !== 'string' || !(TEXT_FORMATS as readonly string[]).includes(format)) return bad(`format ${quoted(format)} is not a text format; use one of: ${TEXT_FORMATS.join(', ')}`);
      return ok({ value: o.value, format });
    }
    case 'fraction': {
      if (raw === null || raw === undefined || raw === '') return ok(null);
      if (typeof raw === 'number' || typeof raw === 'string') {
        const f = decimalToFraction(String(raw));
        return f ? ok(f as unknown as ItemValue) : bad(`must be a number or an object {numerator, denominator} or {decimal}, not ${describe(raw)}`);
      }
      if (typeof raw !== 'object' || Array.isArray(raw)) return bad(`must be an object {numerator, denominator} or {decimal}, not ${describe(raw)}`);
      const o = raw as Record<string, unknown>;
      const extra = unknownKeys(o, ['numerator', 'denominator', 'decimal']);
      if (extra) return bad(extra);
      if (o.numerator !== undefined && o.numerator !== null) {
        const num = typeof o.numerator === 'string' && /^-?\d+$/.test(o.numerator) ? Number(o.numerator) : o.numerator;
        const den = o.denominator === undefined || o.denominator === null ? 1 : typeof o.denominator === 'string' && /^\d+$/.test(o.denominator) ? Number(o.denominator) : o.denominator;
        if (typeof num !== 'number' || !Number.isSafeInteger(num)) return bad(`numerator must be a whole number, not ${describe(o.numerator)}`);
        if (typeof den !== 'number' || !Number.isSafeInteger(den) || den <= 0) return bad(`denominator must be a whole number greater than 0, not ${describe(o.denominator)}`);
        return ok({ numerator: num, denominator: den });
      }
      if (o.decimal !== undefined && o.decimal !== null) {
        const f = typeof o.decimal === 'number' || typeof o.decimal === 'string' ? decimalToFraction(String(o.decimal)) : null;
        return f ? ok(f as unknown as ItemValue) : bad(`decimal must be a decimal number, not ${describe(o.decimal)}`);
      }
      return ok(null);
    }
    case 'geofield': {
      const v = mainValue(raw);
      if (v === null || v === undefined || v === '') return ok(null);
      let wkt: unknown = v;
      if (typeof v === 'object' && !Array.isArray(v)) {
        const o = v as Record<string, unknown>;
        const extra = unknownKeys(o, ['value', 'geo_type', 'lat', 'lon', 'left', 'top', 'right', 'bottom', 'geohash', 'latlon']);
        if (extra) return bad(extra);
        wkt = o.value;
        if (wkt === null || wkt === undefined || wkt === '') return ok(null);
      }
      if (typeof wkt !== 'string') return bad(`must be WKT text or an object {value: WKT}, not ${describe(wkt)}`);
      if (hasNul(wkt)) return bad(NUL_PROBLEM);
      if (wkt.length > 1_000_000) return bad('is longer than 1,000,000 characters');
      const checked = checkWkt(wkt);
      return checked.ok ? ok(checked.value as unknown as ItemValue) : bad(`"${wkt.length > 60 ? `${wkt.slice(0, 60)}…` : wkt}" ${checked.problem}`);
    }
    case 'id_tag': {
      if (raw === null || raw === undefined) return ok(null);
      if (typeof raw !== 'object' || Array.isArray(raw)) return bad(`must be an object {id, type, location}, not ${describe(raw)}`);
      const o = raw as Record<string, unknown>;
      const extra = unknownKeys(o, ['id', 'type', 'location']);
      if (extra) return bad(extra);
      for (const k of ['id', 'type', 'location'] as const) {
        if (o[k] !== undefined && o[k] !== null && typeof o[k] !== 'string') return bad(`${k} must be a string, not ${describe(o[k])}`);
        if (hasNul(o[k])) return bad(`${k} ${NUL_PROBLEM}`);
      }
      const type = (o.type as string | undefined) || null;
      if (type && field.allowedValues && !field.allowedValues.some((a) => a.value === type)) {
        return bad(`type "${type}" is not an ID tag type; use one of: ${field.allowedValues.map((a) => a.value).join(', ')}`);
      }
      return ok({ id: (o.id as string | undefined) ?? null, type, location: (o.location as string | undefined) ?? null });
    }
    default:
      return bad('cannot be set');
  }
}

/** Coerce a whole field value: a list for multiple fields (a single item is accepted and wrapped). */
export function coerceField(field: FieldDescriptor, raw: unknown): { ok: true; value: ItemValue | ItemValue[] } | { ok: false; problem: string; index?: number } {
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
