/**
 * Quick forms (issue 42 §2): each definitions/quick/<name>.yaml (a module's quick/, the site
 * folder's) checked against the model it will run on, every mistake named with its file and line,
 * and compiled into runtime/model/quick.ts's QuickFormDescriptor: each asked field takes the
 * descriptor of the field it is `like`, so the runtime draws and reads it as it does that field.
 */
import { basename } from 'node:path';
import type { DataModel, FieldDescriptor } from '../runtime/model/descriptor.ts';
import { defaultWidget, WIDGETS, type Widget } from '../runtime/model/ui.ts';
import { ROLES } from '../runtime/access/roles.ts';
import { ROLE_PERMISSIONS } from '../runtime/access/roles.ts';
import {
  parseTemplate,
  templatePaths,
  TemplateSyntaxError,
  wholePath,
  type QuickField,
  type QuickFormDescriptor,
  type QuickRecord,
  type QuickValue,
} from '../runtime/model/quick.ts';
import type { QuickField as QuickFieldYaml } from '../generated/meta-schema.ts';
import { DefinitionError, DefinitionErrors } from './errors.ts';
import type { SourceFile } from './load.ts';

type QuickFile = Extract<SourceFile, { kind: 'quickFormFile' }>;

/** The labels a reference's path may end in: its record's name. */
const LABEL_KEYS = new Set(['name', 'label']);

const PERMISSIONS = new Set(Object.values(ROLE_PERMISSIONS).flat());

/** Every quick form of `files`, checked against `model`; DefinitionErrors naming each mistake. */
export function buildQuickForms(files: SourceFile[], model: DataModel): QuickFormDescriptor[] {
  const errors: DefinitionError[] = [];
  const out: QuickFormDescriptor[] = [];
  const byName = new Map<string, QuickFile>();
  for (const file of files) {
    if (file.kind !== 'quickFormFile') continue;
    const name = basename(file.path).replace(/\.ya?ml$/, '');
    const fail = (path: Array<string | number>, sentence: string, atKey = false) =>
      errors.push(new DefinitionError(file.path, file.lineOf(path, { atKey }), sentence));
    if (!/^[a-z][a-z0-9_]*$/.test(name) || name.length > 32) {
      fail([], `the file's name "${name}" is the quick form's machine name: use lower case letters, digits and _.`);
      continue;
    }
    const other = byName.get(name);
    if (other) {
      fail(
        [],
        `a quick form named "${name}" is defined already, in ${other.path}. Each quick form has a name of its own.`,
      );
      continue;
    }
    byName.set(name, file);
    const form = compileForm(file, name, model, fail);
    if (form) out.push(form);
  }
  if (errors.length) throw new DefinitionErrors(errors);
  return out.sort((a, b) => a.name.localeCompare(b.name));
}

function compileForm(
  file: QuickFile,
  name: string,
  model: DataModel,
  fail: (path: Array<string | number>, sentence: string, atKey?: boolean) => void,
): QuickFormDescriptor | null {
  const data = file.data;
  let ok = true;
  const problem = (path: Array<string | number>, sentence: string, atKey = false) => {
    ok = false;
    fail(path, sentence, atKey);
  };
  const bundles = new Map(model.bundles.map((b) => [b.type, b]));
  const typeOf = (type: string, path: Array<string | number>) => {
    const bundle = bundles.get(type);
    if (!bundle) {
      problem(path, `"${type}" is not a bundle: write <entity type>--<bundle>, e.g. log--harvest.`);
      return null;
    }
    if (bundle.module && bundle.module !== file.module && file.module !== null)
      problem(path, `"${type}" belongs to the module ${bundle.module}, not to this form's module ${file.module}.`);
    else if (bundle.module && file.module === null)
      problem(
        path,
        `"${type}" belongs to the optional module ${bundle.module}: put this form in definitions/modules/${bundle.module}/quick/, so it is offered only when the module is on.`,
      );
    return bundle;
  };

  // Who may use it.
  for (const [i, role] of (data.access?.roles ?? []).entries())
    if (!(ROLES as readonly string[]).includes(role))
      problem(['access', 'roles', i], `"${role}" is not a role. Roles: ${ROLES.join(', ')}.`);
  if (data.access?.permission && !PERMISSIONS.has(data.access.permission as never))
    problem(
      ['access', 'permission'],
      `"${data.access.permission}" is not a permission. Permissions: ${[...PERMISSIONS].join(', ')}.`,
    );

  // The fields it asks.
  const compileField = (
    fieldName: string,
    raw: QuickFieldYaml,
    path: Array<string | number>,
    inGroup: boolean,
  ): QuickField | null => {
    const label = raw.label ?? humanise(fieldName);
    if (raw.group) {
      if (raw.like)
        problem([...path, 'like'], `field "${fieldName}": a group has fields of its own, not "like".`, true);
      if (inGroup) problem([...path, 'group'], `field "${fieldName}": a group inside a group is not supported.`, true);
      const group: QuickField[] = [];
      for (const [sub, subRaw] of Object.entries(raw.group)) {
        const compiled = compileField(sub, subRaw, [...path, 'group', sub], true);
        if (compiled) group.push(compiled);
      }
      const repeat = raw.repeat ? { min: raw.repeat.min ?? 1, max: raw.repeat.max ?? 20 } : undefined;
      if (repeat && repeat.min > repeat.max)
        problem([...path, 'repeat'], `field "${fieldName}": repeat.min is more than repeat.max.`);
      if (raw.optional && repeat)
        problem(
          [...path, 'optional'],
          `field "${fieldName}": a repeating group is not optional: give it repeat.min 0 instead.`,
          true,
        );
      return {
        name: fieldName,
        label,
        ...(raw.description ? { description: raw.description } : {}),
        required: raw.required ?? false,
        widget: 'text',
        group,
        ...(repeat ? { repeat } : {}),
        ...(raw.optional ? { optional: { label: raw.optional.label, default: raw.optional.default ?? false } } : {}),
      };
    }
    if (raw.repeat) problem([...path, 'repeat'], `field "${fieldName}": only a group repeats.`, true);
    if (raw.optional) problem([...path, 'optional'], `field "${fieldName}": only a group is optional.`, true);
    if (!raw.like) {
      problem(
        path,
        `field "${fieldName}": say which field it is like (like: <entity type>--<bundle>.<field>), or give it a group.`,
      );
      return null;
    }
    const [type, borrowed] = raw.like.split('.') as [string, string];
    const bundle = typeOf(type, [...path, 'like']);
    if (!bundle) return null;
    const source = bundle.fields.find((f) => f.name === borrowed);
    if (!source) {
      problem([...path, 'like'], `field "${fieldName}": ${type} has no field "${borrowed}".`);
      return null;
    }
    if (!WIDGETS[source.type].length || source.computed || source.internal) {
      problem([...path, 'like'], `field "${fieldName}": ${type}.${borrowed} is not a field a form can ask.`);
      return null;
    }
    const field: FieldDescriptor = structuredClone(source);
    field.label = label;
    if (raw.description) field.description = raw.description;
    field.required = raw.required ?? false;
    if (raw.multiple !== undefined) field.multiple = raw.multiple;
    if (raw.bundles) {
      if (!field.target)
        problem([...path, 'bundles'], `field "${fieldName}": only a reference's bundles can be narrowed.`, true);
      else {
        const allowed =
          field.target.bundles ??
          model.bundles.filter((b) => b.entityType === field.target!.entityType).map((b) => b.bundle);
        for (const [i, b] of raw.bundles.entries())
          if (!allowed.includes(b))
            problem(
              [...path, 'bundles', i],
              `field "${fieldName}": "${b}" is not one of the bundles ${type}.${borrowed} may point at (${allowed.join(', ')}).`,
            );
        field.target.bundles = [...raw.bundles];
      }
    }
    if ((field.type === 'file' || field.type === 'image') && inGroup)
      problem([...path, 'like'], `field "${fieldName}": a file is asked outside a group.`);
    let widget: Widget | null = defaultWidget(field);
    if (raw.widget) {
      if (!(WIDGETS[field.type] as readonly string[]).includes(raw.widget))
        problem(
          [...path, 'widget'],
          `field "${fieldName}": the widget "${raw.widget}" does not suit a ${field.type} field. It may be: ${WIDGETS[field.type].join(', ')}.`,
        );
      else widget = raw.widget as Widget;
    }
    if (
      raw.default !== undefined &&
      field.allowedValues &&
      !field.allowedValues.some((a) => a.value === String(raw.default))
    )
      problem(
        [...path, 'default'],
        `field "${fieldName}": the default "${raw.default}" is not one of its allowed values (${field.allowedValues.map((a) => a.value).join(', ')}).`,
      );
    if (
      typeof raw.default === 'string' &&
      (raw.default === 'now' || raw.default === 'today') &&
      field.type !== 'timestamp'
    )
      problem([...path, 'default'], `field "${fieldName}": "${raw.default}" is a default for a date.`);
    return {
      name: fieldName,
      label,
      ...(raw.description ? { description: raw.description } : {}),
      required: raw.required ?? false,
      ...(raw.default !== undefined ? { default: raw.default } : {}),
      ...(raw.needs ? { needs: raw.needs } : {}),
      widget: widget ?? 'text',
      field,
      from: type,
    };
  };
  const fields: QuickField[] = [];
  // A field refused above is not refused again at every path that names it.
  const broken = new Set<string>();
  for (const [fieldName, raw] of Object.entries(data.fields)) {
    const compiled = compileField(fieldName, raw, ['fields', fieldName], false);
    if (compiled) fields.push(compiled);
    else broken.add(fieldName);
  }

  /** What a path names, or a sentence saying why it names nothing. */
  const resolvePath = (path: string): string | null => {
    const [head, second, third, ...rest] = path.split('.');
    if (broken.has(head!)) return null;
    const top = fields.find((f) => f.name === head);
    if (!top) return `"${path}" names no field of this form (${fields.map((f) => f.name).join(', ')}).`;
    let leaf = top;
    let more = [second, third, ...rest].filter((x): x is string => x !== undefined);
    if (top.group) {
      // Outside a record made per row (for_each), a repeating group's field is every row's (joined by commas).
      // An optional group's own path has a value when its box is ticked.
      if (!more.length)
        return top.repeat || top.optional
          ? null
          : `"${path}" is a group: name one of its fields (${top.group.map((g) => `${top.name}.${g.name}`).join(', ')}).`;
      const sub = top.group.find((g) => g.name === more[0]);
      if (!sub) return `"${path}": the group "${top.name}" has no field "${more[0]}".`;
      leaf = sub;
      more = more.slice(1);
    }
    if (!more.length) return null;
    const target = leaf.field?.target;
    if (!target || more.length > 1)
      return `"${path}": only a reference's record has fields to name (its name, or one of its fields).`;
    if (LABEL_KEYS.has(more[0]!)) return null;
    const targets = model.bundles.filter(
      (b) => b.entityType === target.entityType && (!target.bundles || target.bundles.includes(b.bundle)),
    );
    if (!targets.some((b) => b.fields.some((f) => f.name === more[0])))
      return `"${path}": the records "${leaf.name}" points at have no field "${more[0]}".`;
    return null;
  };

  // A field's `needs`: a field of the form or of one of its groups (as typed, not a referenced record's field).
  const checkNeeds = (f: QuickField, path: Array<string | number>) => {
    if (!f.needs) return;
    const [head, sub, more] = f.needs.split('.');
    const ofRecord = more !== undefined || (sub !== undefined && !fields.find((t) => t.name === head)?.group);
    const why =
      resolvePath(f.needs) ??
      (ofRecord ? `"${f.needs}" is a field of the record "${head}" names: name a field of this form.` : null);
    if (why) problem([...path, 'needs'], `field "${f.name}" (needs): ${why}`);
  };
  for (const f of fields) {
    checkNeeds(f, ['fields', f.name]);
    for (const g of f.group ?? []) checkNeeds(g, ['fields', f.name, 'group', g.name]);
  }

  // The records it makes.
  const records: QuickRecord[] = [];
  const seen = new Map<string, string>();
  for (const [id, raw] of Object.entries(data.records)) {
    const at = ['records', id];
    if (fields.some((f) => f.name === id))
      problem(at, `record "${id}" has the name of a field; give it another.`, true);
    const bundle = typeOf(raw.type, [...at, 'type']);
    if (raw.for_each) {
      const group = fields.find((f) => f.name === raw.for_each);
      if (!group?.repeat)
        problem(
          [...at, 'for_each'],
          `record "${id}": for_each names a repeating group of this form, and "${raw.for_each}" is none.`,
        );
    }
    if (raw.when) {
      const why = resolvePath(raw.when);
      if (why) problem([...at, 'when'], `record "${id}" (when): ${why}`);
    }
    if (bundle) {
      for (const [fieldName, value] of Object.entries(raw.values)) {
        const where = [...at, 'values', fieldName];
        const field = bundle.fields.find((f) => f.name === fieldName || f.aliases.includes(fieldName));
        if (!field) {
          problem(where, `record "${id}": ${raw.type} has no field "${fieldName}".`, true);
          continue;
        }
        if (field.readOnly || field.computed || field.internal) {
          problem(where, `record "${id}": ${raw.type}.${fieldName} is not a field a form may set.`, true);
          continue;
        }
        checkValue(value, where, field, id);
      }
    }
    records.push({
      id,
      type: raw.type,
      ...(raw.for_each ? { forEach: raw.for_each } : {}),
      ...(raw.when ? { when: raw.when } : {}),
      values: raw.values as Record<string, QuickValue>,
    });
    seen.set(id, raw.type);

    function checkValue(
      value: QuickValue,
      where: Array<string | number>,
      field: FieldDescriptor,
      recordId: string,
    ): void {
      if (Array.isArray(value)) {
        value.forEach((v, i) => checkValue(v, [...where, i], field, recordId));
        return;
      }
      if (typeof value === 'object' && 'if' in value) {
        const why = resolvePath(value.if);
        if (why) problem([...where, 'if'], `record "${recordId}" (${field.name}, if): ${why}`);
        if (value.then !== undefined) checkValue(value.then, [...where, 'then'], field, recordId);
        if (value.else !== undefined) checkValue(value.else, [...where, 'else'], field, recordId);
        return;
      }
      if (typeof value === 'object') {
        const type = seen.get(value.record);
        if (!type)
          problem(where, `record "${recordId}": { record: ${value.record} } names no record made before this one.`);
        else if (field.kind !== 'relationship' || !field.target || type.split('--')[0] !== field.target.entityType)
          problem(where, `record "${recordId}": ${field.name} cannot point at the ${type} "${value.record}".`);
        return;
      }
      if (typeof value !== 'string') return;
      try {
        const whole = wholePath(value);
        const paths = whole ? [whole] : templatePaths(parseTemplate(value));
        for (const p of paths) {
          const why = resolvePath(p);
          if (why) problem(where, `record "${recordId}" (${field.name}): ${why}`);
        }
      } catch (error) {
        if (!(error instanceof TemplateSyntaxError)) throw error;
        problem(where, `record "${recordId}" (${field.name}): ${error.message}`);
      }
    }
  }
  if (!ok) return null;
  return {
    name,
    title: data.title,
    ...(data.description ? { description: data.description } : {}),
    module: file.module,
    access: {
      ...(data.access?.roles ? { roles: [...data.access.roles] } : {}),
      ...(data.access?.permission ? { permission: data.access.permission } : {}),
    },
    fields,
    records,
  };
}

function humanise(name: string): string {
  const s = name.replace(/_/g, ' ');
  return s.charAt(0).toUpperCase() + s.slice(1);
}

/** generated/quick/<name>.json: one file per form, pure data. */
export function emitQuickForms(forms: readonly QuickFormDescriptor[], stamp: string): Map<string, string> {
  return new Map(forms.map((f) => [`quick/${f.name}.json`, JSON.stringify({ $comment: stamp, ...f }, null, 2) + '\n']));
}
