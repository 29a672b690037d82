/**
 * Serialising parsed-style parameters back into a query string, for pager links that keep every
 * other parameter. The output is what parseQueryString reads back to the same value, which is why
 * keys that PHP-style parsing would change (a `]` inside a bracket, a `.` in a top-level name, an
 * empty segment that would read as an append) are refused instead of silently rewritten.
 */

import { MAX_DEPTH } from './query-string.ts';

/**
 * Build `a=1&b[c]=2&b[d][0]=x` from `{a: '1', b: {c: '2', d: ['x']}}`. Arrays get explicit
 * indexes, so arrays of maps survive. Numbers and bigints are written in decimal, booleans as
 * 1/0 (PHP's http_build_query), null and undefined are left out, and so are empty lists and maps
 * (a query string cannot express them). Brackets are written raw; everything else is
 * percent-encoded. Throws TypeError for values or keys that cannot be written.
 */
export function buildQueryString(params: Readonly<Record<string, unknown>>): string {
  const pairs: string[] = [];
  for (const [name, value] of Object.entries(params)) {
    if (!isWritableName(name)) throw new TypeError(`Cannot write the query parameter name ${JSON.stringify(name)}.`);
    write(encode(name), value, 0, pairs);
  }
  return pairs.join('&');
}

function write(prefix: string, value: unknown, depth: number, pairs: string[]): void {
  if (value === null || value === undefined) return;
  switch (typeof value) {
    case 'string':
      pairs.push(`${prefix}=${encode(value)}`);
      return;
    case 'number':
      if (!Number.isFinite(value)) throw new TypeError(`Cannot write ${value} in a query string.`);
      pairs.push(`${prefix}=${String(value)}`);
      return;
    case 'bigint':
      pairs.push(`${prefix}=${value.toString()}`);
      return;
    case 'boolean':
      pairs.push(`${prefix}=${value ? '1' : '0'}`);
      return;
    case 'object':
      if (depth >= MAX_DEPTH)
        throw new TypeError(`Cannot write a query parameter nested more than ${MAX_DEPTH} levels deep.`);
      for (const [key, item] of Object.entries(value)) {
        if (!isWritableSegment(key)) throw new TypeError(`Cannot write the query key segment ${JSON.stringify(key)}.`);
        write(`${prefix}[${encode(key)}]`, item, depth + 1, pairs);
      }
      return;
    default:
      throw new TypeError(`Cannot write a ${typeof value} in a query string.`);
  }
}

/** A top-level name survives parsing unchanged when PHP would neither cut nor rename it. */
function isWritableName(name: string): boolean {
  return name !== '' && !/[\0[. ]/.test(name);
}

/** A bracket segment survives when it has no `]` or NUL and is not read as an append (`[]`, `[ ]`). */
function isWritableSegment(key: string): boolean {
  return key !== '' && key !== ' ' && !/[\0\]]/.test(key);
}

/** encodeURIComponent, except that lone surrogates (which make it throw) become U+FFFD. */
function encode(text: string): string {
  return encodeURIComponent(
    text.replace(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g, '\uFFFD'),
  );
}
