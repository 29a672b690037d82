/**
 * The small part of JSONPath that subrequest replacement tokens use (`{{req.body@$.data.id}}`,
 * `{{req.body@$.data[*].id}}`): the root `$`, member names (`.name`, `['name']`), array indexes
 * (`[0]`, `[-1]`, and `.0` as Drupal's PHP evaluator allows) and the wildcard (`[*]`, `.*`).
 * Filters, slices, unions and recursive descent (`..`) are refused when the blueprint is read,
 * so a client learns at once that its path is not understood rather than getting no values.
 *
 * Evaluation follows the PHP library behind Drupal's subrequests module (galbar/jsonpath): a
 * member name applied to an array matches nothing, so `$.data.id` on a collection yields no
 * value and `$.data[*].id` yields every id.
 */

export type Segment = { kind: 'name'; name: string } | { kind: 'index'; index: number } | { kind: 'wildcard' };

export class JsonPathSyntaxError extends Error {}

const NAME_CHAR = /[^.[\]\s'"]/;

/** Parse `$…` into segments. Throws JsonPathSyntaxError naming what is wrong. */
export function parseJsonPath(path: string): Segment[] {
  if (!path.startsWith('$')) throw new JsonPathSyntaxError(`a JSONPath must start with "$", "${path}" does not`);
  const segments: Segment[] = [];
  let i = 1;
  while (i < path.length) {
    const c = path[i];
    if (c === '.') {
      if (path[i + 1] === '.') throw new JsonPathSyntaxError(`recursive descent ("..") is not supported in "${path}"`);
      if (path[i + 1] === '*') {
        segments.push({ kind: 'wildcard' });
        i += 2;
        continue;
      }
      let j = i + 1;
      while (j < path.length && NAME_CHAR.test(path[j]!)) j++;
      if (j === i + 1)
        throw new JsonPathSyntaxError(`a member name is missing after "." at position ${i} of "${path}"`);
      segments.push({ kind: 'name', name: path.slice(i + 1, j) });
      i = j;
      continue;
    }
    if (c === '[') {
      const close = path.indexOf(']', i);
      if (close < 0) throw new JsonPathSyntaxError(`"[" at position ${i} of "${path}" is not closed`);
      const inner = path.slice(i + 1, close).trim();
      if (inner === '*') segments.push({ kind: 'wildcard' });
      else if (/^-?\d{1,9}$/.test(inner)) segments.push({ kind: 'index', index: Number(inner) });
      else if (/^'[^']*'$/.test(inner) || /^"[^"]*"$/.test(inner))
        segments.push({ kind: 'name', name: inner.slice(1, -1) });
      else throw new JsonPathSyntaxError(`"[${inner}]" in "${path}" is not supported (use [n], [*] or ['name'])`);
      i = close + 1;
      continue;
    }
    throw new JsonPathSyntaxError(`unexpected "${c}" at position ${i} of "${path}"`);
  }
  return segments;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Every value the path selects in `document`, in document order. */
export function evaluateJsonPath(segments: readonly Segment[], document: unknown): unknown[] {
  let current: unknown[] = [document];
  for (const segment of segments) {
    const next: unknown[] = [];
    for (const value of current) {
      if (segment.kind === 'wildcard') {
        if (Array.isArray(value)) next.push(...value);
        else if (isPlainObject(value)) next.push(...Object.values(value));
      } else if (segment.kind === 'index') {
        if (Array.isArray(value)) {
          const at = segment.index < 0 ? value.length + segment.index : segment.index;
          if (at >= 0 && at < value.length) next.push(value[at]);
        }
      } else if (isPlainObject(value)) {
        if (Object.prototype.hasOwnProperty.call(value, segment.name)) next.push(value[segment.name]);
      } else if (Array.isArray(value) && /^\d{1,9}$/.test(segment.name)) {
        const at = Number(segment.name);
        if (at < value.length) next.push(value[at]);
      }
    }
    current = next;
  }
  return current;
}
