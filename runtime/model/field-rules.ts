/**
 * The domain's rules for the values of a field, whichever face they came in by (issue 40 §2): what
 * a value of its type may be once it is one (ranges, lengths, allowed values, an e-mail address,
 * valid WKT, text formats, no NUL character). The faces keep their wire's tolerances (JSON:API:
 * jsonapi/coerce.ts, which unwraps `{value: …}`, takes numbers as strings, `''` for unset) and
 * ask these. Each rule answers with what is wrong, as a phrase after the field's name, or null.
 */
import type { FieldDescriptor } from './descriptor.ts';
import { checkWkt, type GeofieldValue } from '../values/geometry.ts';
import { TEXT_FORMATS } from '../values/text.ts';

const EMAIL = /^[^@\s]+@[^@\s]+\.[^@\s]+$/;

/**
 * An absolute URI as RFC 3986 writes one: a scheme, a colon, then only characters a URI may hold
 * (percent-escapes whole). farmOS's Uri constraint (farm_field, UriValidator) requires the scheme
 * and RFC 3986's grammar; this checks the scheme and the characters, not each part's grammar.
 */
const URI = /^[A-Za-z][A-Za-z0-9+.-]*:(?:[A-Za-z0-9\-._~!$&'()*+,;=:@/?#[\]]|%[0-9A-Fa-f]{2})*$/;

/** Integers are stored in 32-bit columns on PostgreSQL (`integer`); SQLite's are wider. */
export const INT_MIN = -2147483648;
export const INT_MAX = 2147483647;

/** The longest WKT a geometry field takes. */
const WKT_MAX_LENGTH = 1_000_000;

/** PostgreSQL cannot store U+0000 in text, so no database gets it: the same answer on both. */
export const NUL_PROBLEM = 'may not contain the NUL character (U+0000)';
export const hasNul = (v: unknown): boolean => typeof v === 'string' && v.includes('\u0000');

/** A value of a list field (or an ID tag's type) that is not one of the field's allowed values. */
function notAllowed(field: FieldDescriptor, v: string, what: string): string | null {
  if (!field.allowedValues || field.allowedValues.some((a) => a.value === v)) return null;
  return `${what} is not ${field.type === 'id_tag' ? 'an ID tag type' : 'an allowed value'}; use one of: ${field.allowedValues.map((a) => a.value).join(', ')}`;
}

/** A string field's value (string, long string, e-mail, URI, list of values, password). */
export function stringProblem(field: FieldDescriptor, v: string): string | null {
  if (hasNul(v)) return NUL_PROBLEM;
  if (field.type === 'list_string') {
    const problem = notAllowed(field, v, `"${v}"`);
    if (problem) return problem;
  }
  if (field.maxLength && [...v].length > field.maxLength)
    return `may not be longer than ${field.maxLength} characters (it has ${[...v].length})`;
  if (field.type === 'email' && v !== '' && !EMAIL.test(v)) return `"${v}" is not a valid e-mail address`;
  if (field.type === 'uri' && v !== '' && !URI.test(v))
    return `"${v.length > 60 ? `${v.slice(0, 60)}…` : v}" is not a valid URI (a scheme such as https: and then no spaces)`;
  return null;
}

/** A whole number: within what a column holds, and the field's own bounds. */
export function integerProblem(field: FieldDescriptor, n: number): string | null {
  if (n < INT_MIN || n > INT_MAX) return `must be between ${INT_MIN} and ${INT_MAX}, not ${n}`;
  return boundsProblem(field, n);
}

/** A number within the field's `min` and `max`. */
export function boundsProblem(field: FieldDescriptor, n: number): string | null {
  if (field.min !== undefined && n < field.min) return `must be at least ${field.min}`;
  if (field.max !== undefined && n > field.max) return `must be at most ${field.max}`;
  return null;
}

/** A long text's format: one of the text formats. */
export function isTextFormat(format: unknown): format is string {
  return typeof format === 'string' && (TEXT_FORMATS as readonly string[]).includes(format);
}

/** An ID tag's type: one of the field's ID tag types. */
export function idTagTypeProblem(field: FieldDescriptor, type: string): string | null {
  return notAllowed(field, type, `type "${type}"`);
}

/** A geometry given as WKT: not too long, and valid WKT (values/geometry.ts). */
export function checkGeometry(wkt: string): { ok: true; value: GeofieldValue } | { ok: false; problem: string } {
  if (hasNul(wkt)) return { ok: false, problem: NUL_PROBLEM };
  if (wkt.length > WKT_MAX_LENGTH) return { ok: false, problem: 'is longer than 1,000,000 characters' };
  const checked = checkWkt(wkt);
  return checked.ok
    ? checked
    : { ok: false, problem: `"${wkt.length > 60 ? `${wkt.slice(0, 60)}…` : wkt}" ${checked.problem}` };
}
