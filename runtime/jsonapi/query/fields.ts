/**
 * Sparse fieldsets (farmos-behaviour.md §4.7): `fields[log--activity]=name,status` limits the
 * attributes and relationships rendered for that resource type. Unknown types and names are
 * ignored when rendering, as Drupal ignores them, so they are not checked here.
 */

import { badParameter } from '../../errors.ts';
import { entriesOf, isContainer } from './values.ts';

/**
 * Parse `fields` into a map from resource type to field names. Absent gives an empty map. An
 * empty list (`fields[log--activity]=`) is kept as an empty set: JSON:API says it means no fields.
 */
export function parseFields(param: unknown): Map<string, Set<string>> {
  const fieldsets = new Map<string, Set<string>>();
  if (param === undefined) return fieldsets;
  if (!isContainer(param)) {
    throw badParameter('fields', 'The fields parameter must be keyed by resource type, e.g. fields[log--activity]=name,status.');
  }
  for (const [type, list] of entriesOf(param)) {
    if (typeof list !== 'string') {
      throw badParameter(`fields[${type}]`, `The fields[${type}] parameter must be a comma-separated list of field names.`);
    }
    const names = list.split(',').map((name) => name.trim()).filter((name) => name !== '');
    fieldsets.set(type, new Set(names));
  }
  return fieldsets;
}
