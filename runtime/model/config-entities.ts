/**
 * Drupal exposes the bundle of a record as a relationship to a config entity (`log_type--log_type`,
 * `taxonomy_vocabulary--taxonomy_vocabulary`…). Tilth derives those identifiers from the model:
 * the UUID is a name-based UUID of the bundle, stable across installs.
 */
import { createHash } from 'node:crypto';
import type { EntityTypeDescriptor } from './descriptor.ts';

/** RFC 4122 version 5 UUID of a name in a fixed Tilth namespace. */
export function nameUuid(name: string): string {
  const hash = createHash('sha1').update(`tilth:${name}`).digest();
  hash[6] = (hash[6]! & 0x0f) | 0x50;
  hash[8] = (hash[8]! & 0x3f) | 0x80;
  const h = hash.subarray(0, 16).toString('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20, 32)}`;
}

export function bundleConfigType(et: EntityTypeDescriptor): string | null {
  if (!et.bundleKey) return null;
  return et.bundleKey === 'vid' ? 'taxonomy_vocabulary--taxonomy_vocabulary' : `${et.bundleKey}--${et.bundleKey}`;
}

export type BundleIdentifier = Readonly<{
  type: string;
  id: string;
  meta: Readonly<{ drupal_internal__target_id: string }>;
}>;

/** One identifier per bundle, made once: every resource of a page carries its bundle's (a SHA-1 each otherwise). */
const bundleIdentifiers = new Map<string, BundleIdentifier>();

export function bundleIdentifier(et: EntityTypeDescriptor, bundle: string): BundleIdentifier | null {
  const type = bundleConfigType(et);
  if (!type) return null;
  const key = `${type}:${bundle}`;
  let identifier = bundleIdentifiers.get(key);
  if (!identifier) {
    identifier = Object.freeze({
      type,
      id: nameUuid(key),
      meta: Object.freeze({ drupal_internal__target_id: bundle }),
    });
    // Bundles are the model's, a few dozen; the bound only guards against a caller passing anything else.
    if (bundleIdentifiers.size < 10_000) bundleIdentifiers.set(key, identifier);
  }
  return identifier;
}

/**
 * Config entity types a relationship may point at without being records here: their identifiers
 * are derived from names (user roles are the runtime's fixed role set).
 */
export const CONFIG_ENTITY_TYPES = ['user_role'] as const;

export function isConfigEntityType(entityType: string): boolean {
  return (CONFIG_ENTITY_TYPES as readonly string[]).includes(entityType);
}

/** The identifier of a config entity by its machine name, e.g. a role. */
export function configIdentifier(
  entityType: string,
  name: string,
): { type: string; id: string; meta: { drupal_internal__target_id: string } } {
  const type = `${entityType}--${entityType}`;
  return { type, id: nameUuid(`${type}:${name}`), meta: { drupal_internal__target_id: name } };
}
