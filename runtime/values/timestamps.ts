/**
 * Timestamps are stored as Unix seconds and rendered as RFC 3339 in UTC (`…+00:00`), as Drupal
 * does. On input they may be Unix seconds (number or numeric string) or ISO 8601 strings with
 * `Z`, an offset, or fractional seconds (farmOS.js sends all of these).
 */

const ISO = /^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d+))?)?(Z|[+-]\d{2}:?\d{2})?$/i;

/**
 * The range of timestamps accepted: the years 0000 to 9999, which RFC 3339 can write (and
 * formatTimestamp renders). A number outside it is not a date a client meant, and rendering it
 * would fail.
 */
export const MIN_TIMESTAMP = -62167219200; // 0000-01-01T00:00:00+00:00
export const MAX_TIMESTAMP = 253402300799; // 9999-12-31T23:59:59+00:00

function inRange(seconds: number): number | null {
  return seconds >= MIN_TIMESTAMP && seconds <= MAX_TIMESTAMP ? seconds : null;
}

/** Seconds since the epoch, or null when the value is not a timestamp we accept. */
export function parseTimestamp(value: unknown): number | null {
  if (typeof value === 'number') return Number.isFinite(value) && Number.isInteger(value) ? inRange(value) : null;
  if (typeof value !== 'string') return null;
  const s = value.trim();
  if (/^-?\d{1,13}$/.test(s)) return inRange(Number(s));
  const m = ISO.exec(s);
  if (!m) return null;
  const [, y, mo, d, h, mi, sec = '0', , zone] = m;
  const month = Number(mo);
  const day = Number(d);
  if (month < 1 || month > 12 || day < 1 || day > 31 || Number(h) > 23 || Number(mi) > 59 || Number(sec) > 60)
    return null;
  // Date.UTC reads the years 0–99 as 1900–1999; set the full year separately.
  const date = new Date(Date.UTC(2000, month - 1, day, Number(h), Number(mi), Number(sec)));
  date.setUTCFullYear(Number(y), month - 1, day);
  if (date.getUTCDate() !== day) return null; // 31 February and friends
  let ms = date.getTime();
  if (zone && zone.toUpperCase() !== 'Z') {
    const sign = zone[0] === '-' ? -1 : 1;
    const digits = zone.slice(1).replace(':', '');
    ms -= sign * (Number(digits.slice(0, 2)) * 60 + Number(digits.slice(2))) * 60_000;
  }
  return inRange(Math.floor(ms / 1000));
}

const twoDigits = (n: number) => (n < 10 ? `0${n}` : `${n}`);

/**
 * RFC 3339 in UTC with `+00:00`, as farmOS renders timestamps. A page of 50 logs renders 200 of
 * them, so whole seconds in the accepted range are written with integer arithmetic (the civil
 * date of a day count, after Howard Hinnant's `civil_from_days`), about four times quicker than a
 * Date and its ISO string; anything else goes through Date.
 */
export function formatTimestamp(seconds: number | null | undefined): string | null {
  if (seconds === null || seconds === undefined) return null;
  const s = Number(seconds);
  if (!Number.isInteger(s) || s < MIN_TIMESTAMP || s > MAX_TIMESTAMP)
    return `${new Date(s * 1000).toISOString().slice(0, 19)}+00:00`;
  const days = Math.floor(s / 86_400);
  const time = s - days * 86_400;
  // Days since 0000-03-01 in 400-year eras (each 146,097 days), so leap days fall at the ends of years.
  const z = days + 719_468;
  const era = Math.floor(z / 146_097);
  const dayOfEra = z - era * 146_097;
  const yearOfEra = Math.floor(
    (dayOfEra - Math.floor(dayOfEra / 1460) + Math.floor(dayOfEra / 36_524) - Math.floor(dayOfEra / 146_096)) / 365,
  );
  const dayOfYear = dayOfEra - (365 * yearOfEra + Math.floor(yearOfEra / 4) - Math.floor(yearOfEra / 100));
  const m = Math.floor((5 * dayOfYear + 2) / 153); // 0 = March
  const day = dayOfYear - Math.floor((153 * m + 2) / 5) + 1;
  const month = m < 10 ? m + 3 : m - 9;
  const year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0);
  const hours = Math.floor(time / 3600);
  const minutes = Math.floor((time % 3600) / 60);
  return `${String(year).padStart(4, '0')}-${twoDigits(month)}-${twoDigits(day)}T${twoDigits(hours)}:${twoDigits(minutes)}:${twoDigits(time % 60)}+00:00`;
}

export const TIMESTAMP_FORMATS =
  'Unix seconds (e.g. 1704067200) or an ISO 8601 / RFC 3339 date-time (e.g. 2024-01-01T00:00:00+00:00 or 2024-01-01T00:00:00Z), in the years 0000 to 9999';
