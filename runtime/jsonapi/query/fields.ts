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
/**
 * The fields to read for each resource type: its sparse fieldset and every relationship an include
 * path names, since Drupal resolves includes on the whole entity (a fieldset that leaves a
 * relationship out still includes its targets). Null when no fieldset is asked for: read them all.
 * Segments are added to every type's set; a name a type does not have is ignored when reading.
 */
export function fieldsetsToRead(
  fields: Map<string, Set<string>>,
  include: string[][],
): Map<string, Set<string>> | null {
  if (!fields.size) return null;
  const followed = include.flat();
  if (!followed.length) return fields;
  return new Map([...fields].map(([type, names]) => [type, new Set([...names, ...followed])]));
}

export function parseFields(param: unknown): Map<string, Set<string>> {
  const fieldsets = new Map<string, Set<string>>();
  if (param === undefined) return fieldsets;
  if (!isContainer(param)) {
    throw badParameter(
      'fields',
      'The fields parameter must be keyed by resource type, e.g. fields[log--activity]=name,status.',
    );
  }
  for (const [type, list] of entriesOf(param)) {
    if (typeof list !== 'string') {
      throw badParameter(
        `fields[${type}]`,
        `The fields[${type}] parameter must be a comma-separated list of field names.`,
      );
    }
    const names = list
      .split(',')
      .map((name) => name.trim())
      .filter((name) => name !== '');
    fieldsets.set(type, new Set(names));
  }
  return fieldsets;
}
