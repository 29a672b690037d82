/**
 * Reading parsed query values without trusting their shape. The parse functions take `unknown`
 * (a caller may hand them anything), so every access goes through these guards, and only own
 * keys are read: a parameter named `constructor` or `toString` must never reach a prototype.
 */

/** A parsed list or map: what PHP would call an array. */
export type Container = Record<string, unknown> | unknown[];

/** True for a parsed list or map (PHP's is_array()). */
export function isContainer(value: unknown): value is Container {
  return typeof value === 'object' && value !== null;
}

/** The own entries of a list or map, list indexes as string keys. */
export function entriesOf(container: Container): Array<[string, unknown]> {
  return Object.entries(container);
}

/** True when the container has this own key. */
export function hasKey(container: Container, key: string): boolean {
  return Object.hasOwn(container, key);
}

/** The value under an own key, or undefined. */
export function getKey(container: Container, key: string): unknown {
  return Object.hasOwn(container, key) ? (container as Record<string, unknown>)[key] : undefined;
}

/**
 * The items of a list in index order: an array, or a map whose keys are all integers (a sparse
 * `value[3]=a&value[7]=b` stays a map after parsing). Anything else gives null.
 */
export function listItems(value: unknown): unknown[] | null {
  if (Array.isArray(value)) return value;
  if (!isContainer(value)) return null;
  const indexed: Array<[number, unknown]> = [];
  for (const [key, item] of entriesOf(value)) {
    if (!/^(?:0|-?[1-9][0-9]*)$/.test(key)) return null;
    indexed.push([Number(key), item]);
  }
  return indexed.sort((a, b) => a[0] - b[0]).map(([, item]) => item);
}

/** Upper-case ASCII letters only: `'ın'.toUpperCase()` is 'IN', which must not pass as an operator. */
export function asciiUpper(text: string): string {
  return text.replace(/[a-z]+/g, (letters) => letters.toUpperCase());
}
