/**
 * The shape of the data model the generator emits into generated/ and the runtime reads.
 * Everything that differs between bundles is one of these values; no runtime code names a bundle.
 */
import type { ColumnType, FieldType } from './field-types.ts';
import type { AutoKind, ComputedKind, Field } from '../../generated/meta-schema.ts';

export type { ComputedKind } from '../../generated/meta-schema.ts';

/** The API shapes a field can be shown in (README, "farmOS versions"): farmOS 2.x's, served under /api, and farmOS 4.x's. */
export const SHAPE_NAMES = ['farmos2', 'farmos4'] as const;
export type ShapeName = (typeof SHAPE_NAMES)[number];

/** One shape's view of a field (YAML `shapes:`, definitions/README.md); model/shapes.ts compiles them per bundle. */
export interface FieldShapeDescriptor {
  /** Its public name in the shape. */
  name?: string;
  /** Not in the shape at all. */
  omit?: true;
  /** Its label (JSON Schema title) and description in the shape, where they differ. */
  label?: string;
  description?: string;
  /** A new record sent without it is a 422 in the shape. */
  required?: boolean;
  /** What a new record sent without it gets in the shape, instead of `default`. */
  default?: string | number | boolean | { now: true };
  /** Every stored value and how the shape shows it, one to one (a list_string shown as a boolean: `{ active: false, archived: true }`). */
  values?: Record<string, string | boolean>;
  /** Stored values the shape cannot express and the value each reads as (`{ abandoned: done }`); the shape cannot write them. */
  showValues?: Record<string, string>;
}

export interface AllowedValue {
  value: string;
  label: string;
}

/** Where a field's values live. */
export type FieldStorage =
  /** Not stored: computed on read, or a constant. */
  | { kind: 'none' }
  /** Single value: one column per stored property on the entity's own table. */
  | { kind: 'columns'; columns: Record<string, string> }
  /** Multiple values: rows of `table` (entity_id, delta, one column per property). */
  | { kind: 'table'; table: string; columns: Record<string, string> };

export interface ReferenceTarget {
  entityType: string;
  /** Allowed bundles; null means any bundle of the target entity type. */
  bundles: string[] | null;
  /** A condition the referenced record must meet, e.g. `{ is_location: true }`. */
  filter?: Record<string, string | number | boolean>;
}

export type AutoValue = AutoKind;
/** `editors`: only those who may update the record see it or filter by it (stream keys). */
export type Visibility = NonNullable<Field['visibility']>;
/** Values computed for a new record left without one, as farmOS's default value callbacks do. */
export type DefaultCallback = NonNullable<Field['default_callback']>;

export interface FieldDescriptor {
  /** Public (JSON:API) name. */
  name: string;
  type: FieldType;
  kind: 'attribute' | 'relationship';
  label: string;
  description?: string;
  required: boolean;
  /** false: may be left out (its default applies) but never null; refused as a required field's null is (YAML `nullable: false`). */
  nullable?: false;
  multiple: boolean;
  maxLength?: number;
  min?: number;
  max?: number;
  /** Decimal fields: digits in all and after the point (numeric(precision, scale)); absent means 30 and 10. */
  precision?: number;
  scale?: number;
  /** Literal default for new records; `{ now: true }` means the request time. */
  default?: string | number | boolean | { now: true };
  /** Computed default for new records sent without a value (e.g. a generated key). */
  defaultCallback?: DefaultCallback;
  allowedValues?: AllowedValue[];
  /** The name this field had before (`renamed_from`); the generator emits the move once as a data migration. */
  renamedFrom?: string;
  /** The former field's type, when `renamed_from` changes the type too (model/conversions.ts). */
  convertedFrom?: FieldType;
  /** Former allowed values and what records holding them get (`renamed_values`, `removed_values`); the generator emits each once as a data migration. */
  formerValues?: Record<string, string | null>;
  target?: ReferenceTarget;
  /** Other public names accepted on input and in filters. */
  aliases: string[];
  readOnly: boolean;
  /** What the runtime computes it from on read (farm/computed.ts); no storage. */
  computed?: ComputedKind;
  auto?: AutoValue;
  /** Stored but never output (password hashes). */
  internal: boolean;
  visibility: Visibility;
  storage: FieldStorage;
  /** How the API shapes name and show it, where one differs from the stored field (YAML `shapes:`). */
  shapes?: Partial<Record<ShapeName, FieldShapeDescriptor>>;
}

export interface EntityTypeDescriptor {
  entityType: string;
  label: string;
  labelPlural: string;
  table: string;
  /** Public name of the integer id attribute, e.g. `drupal_internal__id`. */
  internalId: string;
  /** Public name of the revision id attribute when the type keeps revisions. */
  revisionId?: string;
  /** Relationship that names the bundle, e.g. `log_type` → `log_type--log_type`. */
  bundleKey?: string;
  labelField: string;
  namePattern?: string;
  access: 'content' | 'taxonomy' | 'user' | 'file';
  /** False for entity types with a single bundle named like the type (user, file). */
  hasBundles: boolean;
}

export interface BundleDescriptor {
  /** JSON:API resource type, `<entity_type>--<bundle>`. */
  type: string;
  entityType: string;
  bundle: string;
  label: string;
  description?: string;
  /** The optional module that provides it, or null for core. */
  module: string | null;
  /** Its logs record births: children (its assets) take their birthdate and mother from it (farm/births.ts). */
  births?: boolean;
  /** False when a save rewrites the current revision instead of adding one (Drupal's `new_revision`). */
  newRevision?: boolean;
  /** Base fields then bundle fields, in definition order. */
  fields: FieldDescriptor[];
}

export interface ModuleDescriptor {
  module: string;
  label: string;
  description: string;
}

export interface ColumnSpec {
  name: string;
  type: ColumnType | 'increments' | 'uuid';
  nullable: boolean;
  /** `decimal` columns: numeric(precision, scale); absent means (30, 10). */
  precision?: number;
  scale?: number;
  /** Foreign key, created with the table only. */
  references?: { table: string; column: string; onDelete: 'CASCADE' | 'SET NULL' };
}

export interface IndexSpec {
  name: string;
  columns: string[];
  unique: boolean;
  /**
   * One of `columns` indexed without regard to case (a string field's filters ignore case, as
   * farmOS's do): `lower(column)` on PostgreSQL, `column COLLATE NOCASE` on SQLite.
   */
  caseless?: string;
}

export interface TableSpec {
  name: string;
  columns: ColumnSpec[];
  primaryKey?: string[];
  indexes: IndexSpec[];
}

/** One step of a generated migration. Migrations only ever add. */
export type SchemaOp =
  | { op: 'createTable'; table: TableSpec }
  | { op: 'addColumn'; table: string; column: ColumnSpec }
  | { op: 'createIndex'; table: string; index: IndexSpec }
  | RewriteValuesOp
  | MoveFieldOp;

/**
 * A field renamed in YAML (`renamed_from`): the bundle's records' values move from the former
 * field's storage to the new field's (added by the same migration), the former's are cleared, and
 * the revision snapshots of those records name the field by its new name. The former storage stays
 * (other bundles may share it); nothing is lost if the migration is never followed by another.
 */
export interface MoveFieldOp {
  op: 'moveField';
  entityType: string;
  table: string;
  bundle: string;
  from: { field: string; storage: Exclude<FieldStorage, { kind: 'none' }> };
  to: { field: string; storage: Exclude<FieldStorage, { kind: 'none' }> };
  /** A type change with a defined conversion (single values only): each value is converted on the way. */
  convert?: { from: FieldType; to: FieldType; precision?: number; scale?: number };
}

/**
 * A data migration declared in YAML (`renamed_values`, `removed_values` on an allowed-values
 * field): the records of `bundle` holding `from` get `to` (null clears it, or drops the item of a
 * multiple field), in their table or side table and in the snapshots of their revisions.
 */
export interface RewriteValuesOp {
  op: 'rewriteValues';
  entityType: string;
  /** The entity type's table (its `bundle` column says which records). */
  table: string;
  bundle: string;
  field: string;
  /** Where the values are: a column of the entity table, or the `value` column of a side table. */
  storage: { kind: 'column'; column: string } | { kind: 'table'; table: string; column: string };
  from: string;
  to: string | null;
}

export interface DataModel {
  entityTypes: Record<string, EntityTypeDescriptor>;
  bundles: BundleDescriptor[];
  modules: ModuleDescriptor[];
}
