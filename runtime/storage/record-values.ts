/**
 * A record's values as Tilth holds them (one internal form per field type, see ItemValue) and
 * as they are stored (each field type's stored properties): the types every part of
 * storage/records.ts shares, and the mapping between the two forms.
 */
import type { Knex } from 'knex';
import type { FieldDescriptor } from '../model/descriptor.ts';
import type { ResourceType } from '../model/registry.ts';
import { FIELD_TYPE_SPECS } from '../model/field-types.ts';
import { decimalOutput, DEFAULT_DECIMAL } from '../values/decimal-value.ts';

export type Db = Knex | Knex.Transaction;

/** A reference to another record, with the item properties the field type carries (file description, image alt…). */
export interface Reference {
  targetId: number;
  /** Filled in when the target is loaded: its UUID and bundle; absent for a dangling reference. */
  uuid?: string;
  bundle?: string;
  /** The target's current revision, for entity_reference_revisions fields. */
  revisionId?: number | null;
  meta: Record<string, unknown>;
}

/** The internal value of one item of a field. */
export type ItemValue = string | number | boolean | Record<string, unknown> | Reference | null;

export interface EntityRecord {
  id: number;
  uuid: string;
  bundle: string;
  revisionId: number | null;
  rt: ResourceType;
  /** Field name → item value (single) or array of item values (multiple). Only loaded fields are present. */
  values: Map<string, ItemValue | ItemValue[]>;
  /** True when this is a past or named revision asked for with `?resourceVersion`: its links name the version. */
  revisionView?: boolean;
  /**
   * The record's version (its change feed position, for the ETag) when it was read with the row
   * (loadByUuid's `withVersion`); null when the feed has no row for it; absent when not read.
   */
  version?: number | null;
}

/**
 * The bundles of the records these references point at, when every one names its own (a
 * reference read from storage or resolved from input does): RecordStore.load then reads only
 * those bundles' columns. Undefined when one does not.
 */
export function knownBundles(refs: readonly Reference[]): string[] | undefined {
  return refs.every((r) => r.bundle) ? [...new Set(refs.map((r) => r.bundle!))] : undefined;
}

/**
 * A place a reference to records of `target` is kept: a single reference's column in the holding
 * entity type's table, or a multi-valued field's side table (`side`); `field` is its field's name
 * (one column or table serves the field in every bundle that has it), `fieldType` its type.
 */
export interface ReferencePlace {
  entityType: string;
  table: string;
  column: string;
  side: boolean;
  target: string;
  field: string;
  fieldType: string;
}

/** SQL chunk size for IN lists; SQLite allows 32766 variables, PostgreSQL 65535. */
const CHUNK = 5000;

export function chunks<T>(items: T[], size = CHUNK): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

export function isReferenceField(field: FieldDescriptor): boolean {
  return FIELD_TYPE_SPECS[field.type].kind === 'relationship';
}

/** Build an item value from stored property values. */
export function itemFromProps(field: FieldDescriptor, props: Record<string, unknown>): ItemValue {
  if (isReferenceField(field)) {
    if (props.target_id === null || props.target_id === undefined) return null;
    const meta: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(props))
      if (k !== 'target_id') meta[k] = field.type === 'file' && k === 'display' ? (v === null ? null : Boolean(v)) : v;
    return { targetId: Number(props.target_id), meta } as Reference;
  }
  switch (field.type) {
    case 'boolean':
      return props.value === null || props.value === undefined ? null : Boolean(props.value);
    case 'integer':
    case 'timestamp':
      return props.value === null || props.value === undefined ? null : Number(props.value);
    case 'decimal':
      // SQLite hands back a float (2.75), PostgreSQL a string padded to the scale ("2.7500000000"): one form for both.
      return props.value === null || props.value === undefined
        ? null
        : decimalOutput(props.value as string | number, field.scale ?? DEFAULT_DECIMAL.scale);
    case 'text_long':
      return props.value === null || props.value === undefined
        ? null
        : { value: props.value, format: props.format ?? 'default' };
    case 'fraction':
      return props.numerator === null || props.numerator === undefined
        ? null
        : { numerator: Number(props.numerator), denominator: Number(props.denominator) };
    case 'geofield':
      return props.value === null || props.value === undefined || props.value === '' ? null : { ...props };
    case 'id_tag':
      return { id: props.id ?? null, type: props.type ?? null, location: props.location ?? null };
    default:
      return (props.value as string | null | undefined) ?? null;
  }
}

/** The stored properties of each field type (not the computed output ones), worked out once. */
const STORED_PROPERTIES = new Map(
  Object.entries(FIELD_TYPE_SPECS).map(([type, spec]) => [
    type,
    Object.entries(spec.properties)
      .filter(([, p]) => !p.output)
      .map(([name]) => name),
  ]),
);

/** Stored property values of an item value. */
export function propsFromItem(field: FieldDescriptor, item: ItemValue): Record<string, unknown> {
  const stored = STORED_PROPERTIES.get(field.type)!;
  const out: Record<string, unknown> = {};
  for (const p of stored) out[p] = null;
  if (item === null || item === undefined) return out;
  if (isReferenceField(field)) {
    const ref = item as Reference;
    out.target_id = ref.targetId;
    for (const p of stored) if (p !== 'target_id' && ref.meta[p] !== undefined) out[p] = ref.meta[p];
    return out;
  }
  if (stored.length === 1) {
    out.value = item;
    return out;
  }
  for (const p of stored) out[p] = (item as Record<string, unknown>)[p] ?? null;
  return out;
}
