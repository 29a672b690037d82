/**
 * Drupal's "virtual" resource identifier: a taxonomy term's `parent` at the root references the
 * unstored <root> term (target_id 0), which Drupal's JSON:API renders as
 * `{"type": "taxonomy_term--<vocabulary>", "id": "virtual", "meta": {"links": …}}` (core
 * ResourceIdentifier::getVirtualOrMissingResourceIdentifier). Tilth stores no row for the root:
 * serialize.ts shows the identifier for an empty parent, and input.ts reads it back as the root.
 */
import type { FieldDescriptor } from '../model/descriptor.ts';

/** Whether this field of this entity type shows the virtual identifier when empty. */
export function hasVirtualRoot(entityType: string, field: FieldDescriptor): boolean {
  return entityType === 'taxonomy_term' && field.name === 'parent' && field.target?.entityType === 'taxonomy_term';
}

/** The identifier id Drupal gives the root term. */
export const VIRTUAL_ID = 'virtual';

/** Drupal's virtual resource identifier, with the help link it carries. */
export function virtualIdentifier(type: string): { type: string; id: string; meta: Record<string, unknown> } {
  return {
    type,
    id: VIRTUAL_ID,
    meta: {
      links: {
        help: {
          href: 'https://www.drupal.org/docs/8/modules/json-api/core-concepts#virtual',
          meta: { about: "Usage and meaning of the 'virtual' resource identifier." },
        },
      },
    },
  };
}
