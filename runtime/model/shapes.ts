/**
 * The API shapes, compiled once per bundle from the fields' `shapes:` (definitions/README.md):
 * what each shape calls a field, which names it accepts on input and in filters, how a stored
 * value reads and how a sent one is stored. Records are stored once; a shape is only a view.
 * `farmos2` is farmOS 2.x's (served under /api, exactly as before shapes existed), `farmos4`
 * farmOS 4.x's (README, "farmOS versions"). Nothing here names a bundle or a field: the mapping
 * is the definitions' data.
 */
import type { AllowedValue, FieldDescriptor, ShapeName } from './descriptor.ts';
import { SHAPE_NAMES } from './descriptor.ts';
import { TILTH_API_VERSION } from '../version.ts';

export { SHAPE_NAMES, type ShapeName };

/**
 * `meta.farm.version` in each shape. farmOS 3.x and 4.x send their profile's version there
 * (farm_api's FarmEntryPoint: farm.info.yml's `version`, "4.x" on the branch, the release
 * number once packaged); Tilth names the major version it speaks, as it says "2.x" for 2.x.
 */
export const SHAPE_FARM_VERSION: Record<ShapeName, string> = { farmos2: TILTH_API_VERSION, farmos4: '4.x' };

/** A value as a shape shows it: a stored list value may read as a boolean (an asset's 4.x `archived`). */
export type ShownValue = string | boolean;

/** One field as one shape has it. */
export interface ShapedField {
  field: FieldDescriptor;
  /** Its public name in the shape. */
  name: string;
  /** Its label and description in the shape (the field's own unless the shape names them). */
  label: string;
  description: string | undefined;
  /** Stored value → shown value, when the shape shows some differently (`values`, `show_values`). */
  toShown: ReadonlyMap<string, ShownValue> | null;
  /**
   * Shown value → the stored values that read as it: one for `values`; for `show_values` the
   * value itself and the values folded into it (a 2.x filter on `done` finds abandoned logs too).
   */
  fromShown: ReadonlyMap<ShownValue, readonly string[]> | null;
  /** Stored values the shape cannot write (they would not read back as written). */
  unwritable: ReadonlySet<string>;
  /** The allowed values as the shape lists them (its schema, its errors). */
  allowedValues: AllowedValue[] | undefined;
  /** Shown as booleans (`values` whose shown values are true and false). */
  shownAsBoolean: boolean;
  /** A new record sent without it is a 422 in the shape. */
  required: boolean;
  /** The default a new record gets in the shape, when it differs from the field's own. */
  default: FieldDescriptor['default'];
}

/** One bundle as one shape has it: built once at start (ModelRegistry). */
export interface ShapedType {
  shape: ShapeName;
  /** Visible attribute and relationship fields in the shape, in definition order. */
  attributes: ShapedField[];
  relationships: ShapedField[];
  /** Each field in the shape by its stored descriptor; a field left out of the shape has none. */
  byField: ReadonlyMap<FieldDescriptor, ShapedField>;
  /** Every name the shape accepts on input, in filters and sorts → the stored field. */
  byName: ReadonlyMap<string, FieldDescriptor>;
  /** Whether the shape differs from the stored fields at all (false: the shape's code paths are skipped). */
  differs: boolean;
}

function shapeField(field: FieldDescriptor, shape: ShapeName): ShapedField | null {
  const s = field.shapes?.[shape];
  if (s?.omit) return null;
  let toShown: Map<string, ShownValue> | null = null;
  let fromShown: Map<ShownValue, string[]> | null = null;
  const unwritable = new Set<string>();
  let allowedValues = field.allowedValues;
  if (s?.values) {
    toShown = new Map(Object.entries(s.values));
    fromShown = new Map([...toShown].map(([stored, shown]) => [shown, [stored]]));
    allowedValues = field.allowedValues
      ?.filter((a) => toShown!.has(a.value))
      .map((a) => ({ value: String(toShown!.get(a.value)), label: a.label }));
  } else if (s?.showValues) {
    toShown = new Map(Object.entries(s.showValues));
    fromShown = new Map((field.allowedValues ?? []).map((a) => [a.value, [a.value]]));
    for (const [stored, shown] of toShown) {
      unwritable.add(stored);
      fromShown.delete(stored);
      fromShown.get(shown)?.push(stored);
    }
    allowedValues = field.allowedValues?.filter((a) => !unwritable.has(a.value));
  }
  return {
    field,
    name: s?.name ?? field.name,
    label: s?.label ?? field.label,
    description: s?.description ?? field.description,
    toShown,
    fromShown,
    unwritable,
    allowedValues,
    shownAsBoolean: Boolean(s?.values && Object.values(s.values).every((v) => typeof v === 'boolean')),
    required: s?.required ?? field.required,
    default: s?.default ?? field.default,
  };
}

/**
 * A bundle's fields in a shape. The names it accepts: each field's shown name first; then the
 * stored names and aliases no field shows under (an asset's 4.x `archived` is the boolean, so
 * the stored `archived`, shown as `last_archived`, is not reachable by that name there).
 */
export function compileShape(fields: readonly FieldDescriptor[], shape: ShapeName): ShapedType {
  const byField = new Map<FieldDescriptor, ShapedField>();
  const byName = new Map<string, FieldDescriptor>();
  let differs = false;
  for (const f of fields) {
    if (f.shapes?.[shape]) differs = true;
    const sf = shapeField(f, shape);
    if (!sf) continue;
    byField.set(f, sf);
    byName.set(sf.name, f);
  }
  for (const sf of byField.values())
    for (const other of [sf.field.name, ...sf.field.aliases]) if (!byName.has(other)) byName.set(other, sf.field);
  const visible = [...byField.values()].filter((sf) => !sf.field.internal);
  return {
    shape,
    attributes: visible.filter((sf) => sf.field.kind === 'attribute'),
    relationships: visible.filter((sf) => sf.field.kind === 'relationship'),
    byField,
    byName,
    differs,
  };
}

/** Every shape of a bundle. */
export function compileShapes(fields: readonly FieldDescriptor[]): Record<ShapeName, ShapedType> {
  return Object.fromEntries(SHAPE_NAMES.map((s) => [s, compileShape(fields, s)])) as Record<ShapeName, ShapedType>;
}

/** A stored list value as the shape shows it. */
export function showValue(sf: ShapedField, stored: unknown): unknown {
  if (!sf.toShown || typeof stored !== 'string') return stored;
  return sf.toShown.has(stored) ? sf.toShown.get(stored) : stored;
}

/** A field's allowed values as a shape lists them (its schema): those it can write, shown its way. */
export function allowedValuesIn(field: FieldDescriptor, shape: ShapeName): AllowedValue[] | undefined {
  return shapeField(field, shape)?.allowedValues ?? field.allowedValues;
}
