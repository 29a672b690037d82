/**
 * Fractions rendered as farmOS renders computed values such as inventory: the Drupal fraction
 * module's `Fraction::toDecimal(0, TRUE)` ("auto precision"), digit for digit. The number of places:
 * a denominator that is a multiple of 10 gives one place per digit after the first (so 150/100 is
 * "1.50" and 7/20 is "0.4"); 1 gives none; a fraction that terminates gets exactly the places it
 * needs (1/8 → "0.125"); any other gets as many places as its denominator has digits (47/6 → "7.8").
 * The quotient is cut one place further, then rounded half away from zero by adding (or
 * subtracting) 5 at that place and cutting again, as the module's bcRound does.
 */

const abs = (n: bigint) => (n < 0n ? -n : n);

function gcd(a: bigint, b: bigint): bigint {
  a = abs(a);
  b = abs(b);
  while (b) [a, b] = [b, a % b];
  return a || 1n;
}

/** Places a terminating fraction with this (reduced) denominator needs: the least e with 10^e divisible by it. */
function terminatingPlaces(denominator: bigint): number {
  let e = 1;
  while (10n ** BigInt(e) % denominator !== 0n) e++;
  return e;
}

function autoPrecision(numerator: bigint, denominator: bigint): number {
  const digits = denominator.toString().length;
  if (denominator % 10n === 0n) return digits - 1;
  if (denominator === 1n) return 0;
  let d = denominator / gcd(numerator, denominator);
  while (d % 2n === 0n) d /= 2n;
  while (d % 5n === 0n) d /= 5n;
  if (d === 1n) return terminatingPlaces(denominator / gcd(numerator, denominator));
  return digits;
}

/** `numerator/denominator` as farmOS shows it. A zero denominator reads as 0, as the module stores it. */
export function farmDecimal(numerator: bigint, denominator: bigint): string {
  if (denominator === 0n) return '0';
  if (denominator < 0n) [numerator, denominator] = [-numerator, -denominator];
  const places = autoPrecision(numerator, denominator);
  // Cut to places + 1 digits (toward zero), then round half away from zero at `places`.
  const scaled = (abs(numerator) * 10n ** BigInt(places + 1)) / denominator;
  const rounded = (scaled + 5n) / 10n;
  const negative = numerator < 0n && rounded !== 0n;
  const text = rounded.toString().padStart(places + 1, '0');
  const whole = text.slice(0, text.length - places);
  const fraction = places ? `.${text.slice(text.length - places)}` : '';
  return `${negative ? '-' : ''}${whole}${fraction}`;
}
