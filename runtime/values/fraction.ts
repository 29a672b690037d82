/**
 * Quantity values are fractions, stored as an integer numerator and denominator (exact, like the
 * Drupal fraction module) and rendered with a `decimal` string. Input may be
 * `{numerator, denominator}`, `{decimal}`, or a plain number or numeric string.
 */

export interface Fraction {
  numerator: number;
  denominator: number;
}

const MAX = BigInt(Number.MAX_SAFE_INTEGER);

/** Parse a decimal string exactly ("1.25" → 125/100). Null if not a number or too large. */
export function decimalToFraction(text: string): Fraction | null {
  const m = /^\s*([+-])?(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d+))?\s*$/.exec(text);
  if (!m || (!m[2] && !m[3])) return null;
  const [, sign, int = '', frac = '', exp = '0'] = m;
  let numerator = BigInt((int || '0') + frac);
  let denominator = 10n ** BigInt(frac.length);
  const e = Number(exp);
  if (Math.abs(e) > 30) return null;
  if (e > 0) numerator *= 10n ** BigInt(e);
  if (e < 0) denominator *= 10n ** BigInt(-e);
  if (sign === '-') numerator = -numerator;
  // Reduce only while it keeps the numbers in range; 1.50 stays 150/100 as Drupal stores it.
  if (numerator > MAX || -numerator > MAX || denominator > MAX) {
    const g = gcd(numerator < 0n ? -numerator : numerator, denominator);
    numerator /= g;
    denominator /= g;
    if (numerator > MAX || -numerator > MAX || denominator > MAX) return null;
  }
  return { numerator: Number(numerator), denominator: Number(denominator) };
}

function gcd(a: bigint, b: bigint): bigint {
  while (b) [a, b] = [b, a % b];
  return a || 1n;
}

/** The decimal rendering of a fraction: exact when it terminates, else 18 significant places. */
export function fractionToDecimal(f: Fraction): string {
  let n = BigInt(f.numerator);
  const d = BigInt(f.denominator);
  if (d === 0n) return '0';
  const negative = n < 0n !== d < 0n && n !== 0n;
  n = n < 0n ? -n : n;
  const den = d < 0n ? -d : d;
  const whole = n / den;
  let rest = n % den;
  let digits = '';
  for (let i = 0; i < 18 && rest !== 0n; i++) {
    rest *= 10n;
    digits += (rest / den).toString();
    rest %= den;
  }
  digits = digits.replace(/0+$/, '');
  return `${negative ? '-' : ''}${whole}${digits ? `.${digits}` : ''}`;
}
