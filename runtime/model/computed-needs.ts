/**
 * What each kind of computed field is computed from: fields of its own record, and fields that some
 * bundle of another entity type must have (an asset's location comes from logs' `is_movement`,
 * `asset` and `location`). The generator refuses a model that asks for a computed field without
 * them (a renamed `is_movement` would otherwise turn location off in silence), and the record
 * loader reads a computed field's own needs even when a sparse fieldset leaves them out.
 */
import type { ComputedKind } from './descriptor.ts';

export interface ComputedNeeds {
  /** Fields of the record itself. */
  own: readonly string[];
  /** Fields that at least one bundle of each named entity type must have. */
  elsewhere: Readonly<Record<string, readonly string[]>>;
}

const MOVEMENTS = ['asset', 'location', 'geometry', 'is_movement', 'status', 'timestamp'];

export const COMPUTED_NEEDS: Readonly<Record<ComputedKind, ComputedNeeds>> = {
  constant: { own: [], elsewhere: {} },
  display_name: { own: ['name'], elsewhere: {} },
  file_uri: { own: ['path'], elsewhere: {} },
  roles: { own: [], elsewhere: {} },
  location: { own: ['is_fixed'], elsewhere: { log: MOVEMENTS } },
  geometry: { own: ['is_fixed', 'intrinsic_geometry'], elsewhere: { log: MOVEMENTS } },
  group: { own: [], elsewhere: { log: ['asset', 'group', 'is_group_assignment', 'status', 'timestamp'] } },
  inventory: {
    own: [],
    elsewhere: {
      quantity: ['inventory_asset', 'inventory_adjustment', 'measure', 'value'],
      log: ['quantity', 'status', 'timestamp'],
    },
  },
};
