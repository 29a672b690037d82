/**
 * A decimal field's value, as farmOS serves one: a string (Drupal's DecimalItem `value` is a string
 * property, and farmOS's own computed decimals, inventory values and a fraction's `decimal`, are
 * strings such as "2.5"), written without trailing zeros, so that the same value reads the same
 * from SQLite (which hands a NUMERIC column back as a 64-bit float: 2.75) and PostgreSQL (which
 * hands numeric(30,10) back padded to its scale: "2.7500000000"). A value is rounded to the
 * field's scale half away from zero, as Drupal rounds it before saving (PHP's round()).
 */

/** Tilth's storage for a decimal field that names no precision and scale (numeric(30,10)). */
export const DEFAULT_DECIMAL = { precision: 30, scale: 10 };

/** Plain digits for a number, never exponent notation (1e-7 → "0.0000001", 1e21 → "1000000000000000000000"). */
function plain(n: number): string {
  const text = String(n);
  const m = /^(-?)(\d)(?:\.(\d+))?e([+-]\d+)$/.exec(text);
  if (!m) return text;
  const [, sign, lead, rest = '', exp] = m;
  const digits = lead! + rest;
  const point = 1 + Number(exp);
  if (point <= 0) return `${sign}0.${'0'.repeat(-point)}${digits}`;
  if (point >= digits.length) return `${sign}${digits}${'0'.repeat(point - digits.length)}`;
  return `${sign}${digits.slice(0, point)}.${digits.slice(point)}`;
}

/** "-0012.3400" → "-12.34"; "5.000" → "5"; "-0.0" → "0". */
export function normaliseDecimal(text: string): string {
  const negative = text.startsWith('-');
  let [whole = '0', fraction = ''] = text.replace(/^[-+]/, '').split('.');
  whole = whole.replace(/^0+(?=\d)/, '') || '0';
  fraction = fraction.replace(/0+$/, '');
  const out = fraction ? `${whole}.${fraction}` : whole;
  return negative && /[1-9]/.test(out) ? `-${out}` : out;
}

/** Round a plain decimal string to `scale` places, half away from zero, normalised. */
export function roundDecimal(text: string, scale: number): string {
  const negative = text.startsWith('-');
  const [whole = '0', fraction = ''] = text.replace(/^[-+]/, '').split('.');
  if (fraction.length <= scale) return normaliseDecimal(text);
  let units = BigInt(whole + fraction.slice(0, scale));
  if (Number(fraction[scale]) >= 5) units += 1n;
  const digits = units.toString().padStart(scale + 1, '0');
  const rounded = scale ? `${digits.slice(0, -scale)}.${digits.slice(-scale)}` : digits;
  return normaliseDecimal(`${negative ? '-' : ''}${rounded}`);
}

/**
 * A client's value (a JSON number, or a string of digits with an optional sign and point) as the
 * stored string, rounded to `scale`; or a sentence saying why it cannot be stored in
 * numeric(precision, scale).
 */
export function decimalInput(
  value: unknown,
  precision: number,
  scale: number,
): { value: string } | { problem: string } {
  let text: string | null = null;
  if (typeof value === 'number' && Number.isFinite(value)) text = plain(value);
  else if (typeof value === 'string' && /^\s*[-+]?(\d+(\.\d*)?|\.\d+)\s*$/.test(value))
    text = value
      .trim()
      .replace(/^\+/, '')
      .replace(/^(-?)\./, '$10.');
  if (text === null) return { problem: 'must be a decimal number' };
  const rounded = roundDecimal(text, scale);
  const whole = rounded.replace(/^-/, '').split('.')[0]!;
  const room = precision - scale;
  if (whole !== '0' && whole.length > room) {
    return {
      problem: `must have at most ${room} digit${room === 1 ? '' : 's'} before the decimal point (precision ${precision}, scale ${scale})`,
    };
  }
  return { value: rounded };
}

/** A stored value as read back from either database, in the one form served. */
export function decimalOutput(stored: string | number, scale: number): string {
  return typeof stored === 'number' ? roundDecimal(plain(stored), scale) : normaliseDecimal(stored);
}
