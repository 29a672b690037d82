/**
 * A field's `shapes:` key (definitions/README.md, "`shapes:`"): how it reads and is written in each
 * API shape, checked here with file and line and emitted into its descriptor. What one field says
 * is checked by `normaliseShapes`; what only a whole bundle shows (two fields shown under one name)
 * by `checkShapeNames`. The runtime compiles the descriptors once per bundle (runtime/model/shapes.ts).
 */
import type { Field, FieldShape } from '../generated/meta-schema.ts';
import type { FieldShapeDescriptor, ShapeName } from '../runtime/model/descriptor.ts';
import { SHAPE_NAMES } from '../runtime/model/descriptor.ts';

type Bad = (sub: Array<string | number>, sentence: string, options?: { atKey?: boolean }) => void;

/** The descriptor's `shapes`, or undefined when the field has none; problems go to `bad`. */
export function normaliseShapes(
  name: string,
  raw: Field,
  bad: Bad,
): Partial<Record<ShapeName, FieldShapeDescriptor>> | undefined {
  if (!raw.shapes) return undefined;
  const out: Partial<Record<ShapeName, FieldShapeDescriptor>> = {};
  for (const shape of SHAPE_NAMES) {
    const s = raw.shapes[shape];
    if (!s) continue;
    const d = normaliseOne(name, raw, s, (sub, sentence, options) => bad(['shapes', shape, ...sub], sentence, options));
    if (d) out[shape] = d;
  }
  return Object.keys(out).length ? out : undefined;
}

function normaliseOne(name: string, raw: Field, s: FieldShape, bad: Bad): FieldShapeDescriptor | null {
  let ok = true;
  const fail: Bad = (sub, sentence, options) => {
    ok = false;
    bad(sub, sentence, options);
  };
  if (s.omit) {
    const others = Object.keys(s).filter((k) => k !== 'omit');
    if (others.length)
      fail([others[0]!], `an omitted field has nothing else to say in that shape; remove "${others[0]}".`, {
        atKey: true,
      });
    if (raw.required)
      fail(['omit'], `a required field cannot be left out of a shape: a new record could not be made in it.`);
  }
  if (s.name === name) fail(['name'], `"name" is the field's own name; leave it out.`);
  const allowed = (raw.allowed_values ?? []).map((v) => v.value);
  const listString = raw.type === 'list_string';
  for (const key of ['values', 'show_values'] as const)
    if (s[key] !== undefined && !listString)
      fail([key], `"${key}" only applies to list_string fields.`, { atKey: true });
  if (s.values && listString) {
    const shown = new Map<string, string>();
    for (const [stored, view] of Object.entries(s.values)) {
      if (!allowed.includes(stored))
        fail(['values', stored], `"${stored}" is not an allowed value. Allowed: ${allowed.join(', ')}.`, {
          atKey: true,
        });
      const key = JSON.stringify(view);
      if (shown.has(key))
        fail(
          ['values', stored],
          `"${stored}" and "${shown.get(key)}" would both show as ${key}; values map one to one (use show_values to fold one into another).`,
        );
      shown.set(key, stored);
    }
    const missing = allowed.filter((v) => !(v in s.values!) && !(s.show_values && v in s.show_values));
    if (missing.length)
      fail(
        ['values'],
        `every allowed value needs its shown value; ${missing.map((v) => `"${v}"`).join(', ')} ${missing.length > 1 ? 'have' : 'has'} none.`,
      );
    const kinds = new Set(Object.values(s.values).map((v) => typeof v));
    if (kinds.size > 1) fail(['values'], `shown values must all be strings or all booleans.`);
  }
  if (s.show_values && listString) {
    for (const [stored, view] of Object.entries(s.show_values)) {
      if (!allowed.includes(stored))
        fail(['show_values', stored], `"${stored}" is not an allowed value. Allowed: ${allowed.join(', ')}.`, {
          atKey: true,
        });
      else if (view === stored)
        fail(['show_values', stored], `"${stored}" would show as itself; leave it out.`, { atKey: true });
      else if (!allowed.includes(view) || view in s.show_values)
        fail(
          ['show_values', stored],
          `"${stored}" must read as another allowed value the shape can express; "${view}" is not one.`,
        );
    }
    if (s.values)
      fail(['show_values'], `give either "values" or "show_values" in one shape, not both.`, { atKey: true });
    if (raw.default !== undefined && String(raw.default) in s.show_values && s.default === undefined)
      fail(
        ['show_values'],
        `the field's default "${raw.default}" cannot be written in this shape; give the shape a "default".`,
      );
  }
  if (s.default !== undefined) {
    if (listString && !allowed.includes(String(s.default)))
      fail(['default'], `default "${s.default}" is not one of the allowed values (stored values, not shown ones).`);
    else if (s.show_values && String(s.default) in s.show_values)
      fail(['default'], `default "${s.default}" is a value this shape cannot write.`);
    else if (raw.type === 'boolean' && typeof s.default !== 'boolean')
      fail(['default'], `a boolean default must be true or false.`);
    else if ((raw.type === 'integer' || raw.type === 'decimal') && typeof s.default !== 'number')
      fail(['default'], `a ${raw.type} default must be a number.`);
    else if (raw.type === 'timestamp' && s.default !== 'now' && !Number.isInteger(s.default))
      fail(['default'], `a timestamp default must be "now" or whole Unix seconds.`);
  }
  if ((s.required || s.default !== undefined) && (raw.computed || raw.read_only || raw.auto) && raw.read_only !== false)
    fail(
      [s.required ? 'required' : 'default'],
      `a computed or read-only field is never written, so it cannot be required or given a default.`,
    );
  if (!ok) return null;
  const d: FieldShapeDescriptor = {};
  if (s.name) d.name = s.name;
  if (s.omit) d.omit = true;
  if (s.label) d.label = s.label;
  if (s.description) d.description = s.description;
  if (s.required !== undefined) d.required = s.required;
  if (s.default !== undefined) d.default = raw.type === 'timestamp' && s.default === 'now' ? { now: true } : s.default;
  if (s.values) d.values = { ...s.values };
  if (s.show_values) d.showValues = { ...s.show_values };
  return d;
}

/** A field's public name in a shape (null: not in it). */
export function shownName(
  field: { name: string; shapes?: Partial<Record<ShapeName, FieldShapeDescriptor>> },
  shape: ShapeName,
): string | null {
  const s = field.shapes?.[shape];
  if (s?.omit) return null;
  return s?.name ?? field.name;
}

/**
 * Two fields of one bundle shown under one name in a shape, or a name the entity type reserves
 * (its internal ids, its bundle key): `fail` is called with the later field and the sentence.
 */
export function checkShapeNames(
  fields: ReadonlyArray<{ name: string; shapes?: Partial<Record<ShapeName, FieldShapeDescriptor>> }>,
  reserved: readonly string[],
  fail: (field: string, shape: ShapeName, sentence: string) => void,
): void {
  for (const shape of SHAPE_NAMES) {
    const taken = new Map<string, string>();
    for (const r of reserved) taken.set(r, `the entity type's "${r}"`);
    for (const f of fields) {
      const shown = shownName(f, shape);
      if (shown === null) continue;
      const other = taken.get(shown);
      if (other)
        fail(
          f.name,
          shape,
          `field "${f.name}" would show as "${shown}" in ${shape}, which is already ${other.startsWith('the') ? other : `field "${other}"`}'s name there; rename one of them in that shape.`,
        );
      else taken.set(shown, f.name);
    }
  }
}
