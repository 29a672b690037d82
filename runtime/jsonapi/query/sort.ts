/**
 * The `sort` parameter (Drupal core Query/Sort.php; farmos-behaviour.md §4.5): the JSON:API
 * comma list `sort=-timestamp,name` or the long form `sort[k][path]=…&sort[k][direction]=DESC`.
 * Paths stay dotted strings; resolving them happens elsewhere.
 */

import { badParameter } from '../../errors.ts';
import { pathProblem } from './path.ts';
import { asciiUpper, entriesOf, getKey, hasKey, isContainer } from './values.ts';

/** One sort key, in the order given. */
export interface SortField {
  path: string;
  direction: 'ASC' | 'DESC';
}

// `langcode` is part of Drupal's long form; Tilth has no translations, so it is accepted and ignored.
const LONG_FORM_KEYS: ReadonlySet<string> = new Set(['path', 'direction', 'langcode']);

/**
 * Parse the `sort` parameter. Absent (`undefined`) gives no sort; present but empty is a 400.
 * In the comma list, empty items are skipped rather than refused: farmOS.js 2.0.0-beta.16 drops
 * all but the last key of a multi-key sort and sends `sort=,name` for `{timestamp: 'DESC', name: 'ASC'}`.
 */
export function parseSort(param: unknown): SortField[] {
  if (param === undefined) return [];
  if (typeof param === 'string') return parseList(param);
  if (!isContainer(param))
    throw badParameter('sort', 'The sort parameter must be a comma-separated list of field paths.');
  const entries = entriesOf(param);
  if (entries.length === 0) throw badParameter('sort', 'You need to provide a value for the sort parameter.');
  return entries.map(([key, item]) => parseLongFormItem(key, item));
}

function parseList(list: string): SortField[] {
  const fields: SortField[] = [];
  for (const item of list.split(',')) {
    if (item === '') continue;
    const descending = item.startsWith('-');
    const path = descending ? item.slice(1) : item;
    fields.push({ path: checkPath(path, 'sort'), direction: descending ? 'DESC' : 'ASC' });
  }
  if (fields.length === 0) throw badParameter('sort', 'You need to provide a value for the sort parameter.');
  return fields;
}

function parseLongFormItem(key: string, item: unknown): SortField {
  const at = `sort[${key}]`;
  if (!isContainer(item)) {
    throw badParameter(at, `You need to provide a field name for the sort parameter, e.g. ${at}[path]=name.`);
  }
  for (const [name] of entriesOf(item)) {
    if (!LONG_FORM_KEYS.has(name)) {
      throw badParameter(
        `${at}[${name}]`,
        `You have provided an invalid set of sort keys: '${name}' is not one of path, direction, langcode.`,
      );
    }
  }
  const path = getKey(item, 'path');
  if (path === undefined) throw badParameter(`${at}[path]`, 'You need to provide a field name for the sort parameter.');
  if (typeof path !== 'string') throw badParameter(`${at}[path]`, 'The sort path must be a string.');
  const langcode = getKey(item, 'langcode');
  if (langcode !== undefined && typeof langcode !== 'string')
    throw badParameter(`${at}[langcode]`, 'The sort langcode must be a string.');
  return { path: checkPath(path, `${at}[path]`), direction: readDirection(item, `${at}[direction]`) };
}

function readDirection(item: Record<string, unknown> | unknown[], parameter: string): 'ASC' | 'DESC' {
  if (!hasKey(item, 'direction')) return 'ASC';
  const given = getKey(item, 'direction');
  const direction = typeof given === 'string' ? asciiUpper(given) : undefined;
  if (direction !== 'ASC' && direction !== 'DESC') {
    const shown = typeof given === 'string' ? `'${given}'` : 'given';
    throw badParameter(parameter, `The sort direction ${shown} is not allowed; use ASC or DESC.`);
  }
  return direction;
}

function checkPath(path: string, parameter: string): string {
  if (path === '') throw badParameter(parameter, 'You need to provide a field name for the sort parameter.');
  const problem = pathProblem(path);
  if (problem) throw badParameter(parameter, `The sort path ${problem}.`);
  return path;
}
