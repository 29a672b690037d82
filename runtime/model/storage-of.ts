/**
 * Where a field's values are stored, from its descriptor: farm logic that writes SQL by hand asks
 * here for table and column names instead of spelling them (`q.value__numerator`), so a field
 * stored differently is followed, not silently missed.
 */
import type { FieldDescriptor } from './descriptor.ts';
import type { ModelRegistry } from './registry.ts';

/** The first field of this name on any bundle of the entity type (shared storage makes them one). */
export function fieldOf(registry: ModelRegistry, entityType: string, name: string): FieldDescriptor | undefined {
  for (const rt of registry.bundlesOf(entityType)) {
    const f = rt.fieldsByName.get(name);
    if (f) return f;
  }
  return undefined;
}

/** The entity-table column of a single-valued field's property, or null when it has none there. */
export function columnOf(field: FieldDescriptor | undefined, property = 'value'): string | null {
  return field?.storage.kind === 'columns' ? (field.storage.columns[property] ?? null) : null;
}

/** The side table of a multi-valued field, or null. */
export function sideTableOf(field: FieldDescriptor | undefined): string | null {
  return field?.storage.kind === 'table' ? field.storage.table : null;
}
