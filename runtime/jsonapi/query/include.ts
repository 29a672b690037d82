/**
 * The `include` parameter (farmos-behaviour.md §4.7): a comma list of relationship paths such as
 * `include=asset,quantity.units`. Whether each segment is a relationship is checked elsewhere.
 */

import { badParameter } from '../../errors.ts';
import { pathProblem } from './path.ts';

/** The most relationship paths one request may include (each is at least one query). */
export const MAX_INCLUDE_PATHS = 20;

/**
 * Parse `include` into paths split into segments, in order and without duplicates. Absent or
 * empty gives no includes (Drupal treats `include=` as none); an empty item or segment is a 400.
 * Items and their segments are trimmed, as Drupal trims them.
 */
export function parseInclude(param: unknown): string[][] {
  if (param === undefined || param === '') return [];
  if (typeof param !== 'string') {
    throw badParameter(
      'include',
      'The include parameter must be a comma-separated list of relationship paths, e.g. include=asset,quantity.units.',
    );
  }
  const seen = new Set<string>();
  const paths: string[][] = [];
  const items = param.split(',');
  if (items.length > MAX_INCLUDE_PATHS)
    throw badParameter(
      'include',
      `The include parameter lists ${items.length} paths; at most ${MAX_INCLUDE_PATHS} are allowed.`,
    );
  for (const item of items) {
    const problem = pathProblem(item.trim());
    if (problem) throw badParameter('include', `The include path ${problem}.`);
    const segments = item.split('.').map((segment) => segment.trim());
    if (segments.includes('')) throw badParameter('include', `The include path '${item.trim()}' has an empty segment.`);
    const path = segments.join('.');
    if (seen.has(path)) continue;
    seen.add(path);
    paths.push(segments);
  }
  return paths;
}
