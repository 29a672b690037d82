/**
 * The web interface's description of every bundle (runtime/model/ui.ts), from the model and the
 * definitions' `ui:` hints. Defaults come from field types; hints change them, and each hint is
 * checked here with its file, line and field, as the rest of a definition is. A hint on a base
 * field (definitions/entity-types/) applies to every bundle of the entity type.
 */
import type { SourceFile } from './load.ts';
import type { FieldUi } from '../generated/meta-schema.ts';
import { DefinitionError, DefinitionErrors } from './errors.ts';
import type { BundleDescriptor, DataModel, FieldDescriptor } from '../runtime/model/descriptor.ts';
import {
  defaultWidget,
  FILTER_KINDS,
  PLACEHOLDER_WIDGETS,
  WIDGETS,
  type BundleUi,
  type UiField,
  type UiFilter,
} from '../runtime/model/ui.ts';

interface Hinted {
  file: SourceFile;
  hints: FieldUi;
}

/** Default columns when no field of a bundle asks for one: the label field and this many more. */
const DEFAULT_EXTRA_COLUMNS = 3;
const SIMPLE_COLUMN_TYPES = new Set([
  'list_string',
  'timestamp',
  'boolean',
  'integer',
  'decimal',
  'fraction',
  'entity_reference',
  'email',
]);
/** Reference filters are offered by default for these targets: short lists a person picks from. */
const DEFAULT_REFERENCE_FILTER_TARGETS = new Set(['taxonomy_term', 'user', 'asset']);

/** Whether the interface shows a field at all: not secret, not a constant, visible to everyone, not hidden by a hint. */
function shown(field: FieldDescriptor, hints: FieldUi | undefined): boolean {
  return !field.internal && field.computed !== 'constant' && field.visibility === 'all' && !hints?.hidden;
}

const an = (word: string) => `${/^[aeiou]/.test(word) ? 'an' : 'a'} ${word}`;

/** Whether a form edits the field: not read-only, not filled in automatically (an import may set those through the API), and a type with a widget. */
function isEdited(field: FieldDescriptor): boolean {
  return !field.readOnly && !field.auto && WIDGETS[field.type].length > 0;
}

/** Each field's hints, by entity type and field name (base fields) or by bundle type and field name. */
function collectHints(files: SourceFile[]): { base: Map<string, Hinted>; own: Map<string, Hinted> } {
  const base = new Map<string, Hinted>();
  const own = new Map<string, Hinted>();
  for (const file of files) {
    if (file.kind === 'moduleFile' || file.kind === 'quickFormFile') continue;
    for (const [name, raw] of Object.entries(file.data.fields ?? {})) {
      if (!raw.ui) continue;
      if (file.kind === 'entityTypeFile') base.set(`${file.data.entity_type}.${name}`, { file, hints: raw.ui });
      else own.set(`${file.data.entity_type}--${file.data.bundle}.${name}`, { file, hints: raw.ui });
    }
  }
  return { base, own };
}

/** Check one field's hints against its descriptor. */
function checkHints({ file, hints }: Hinted, field: FieldDescriptor, errors: DefinitionError[]): void {
  const fail = (key: keyof FieldUi, sentence: string) =>
    errors.push(
      new DefinitionError(
        file.path,
        file.lineOf(['fields', field.name, 'ui', key], { atKey: true }),
        `field "${field.name}" (ui.${key}): ${sentence}`,
      ),
    );
  const keys = Object.keys(hints).filter((k) => k !== 'hidden') as Array<keyof FieldUi>;
  if (field.internal || field.computed === 'constant' || field.visibility !== 'all') {
    for (const key of keys)
      fail(
        key,
        `this field is never shown (${field.internal ? 'it is internal' : field.computed === 'constant' ? 'it is a constant' : `only ${field.visibility} may see it`}), so a hint means nothing here; remove it.`,
      );
    return;
  }
  const editable = isEdited(field);
  if (hints.widget !== undefined) {
    if (!editable)
      fail(
        'widget',
        `this field is never edited on a form (${field.readOnly ? 'it is read-only' : field.auto ? 'it is filled in automatically' : `a ${field.type} field has no widget`}); remove the widget.`,
      );
    else if (!WIDGETS[field.type].includes(hints.widget))
      fail(
        'widget',
        `"${hints.widget}" does not suit ${an(field.type)} field. Use one of: ${WIDGETS[field.type].join(', ')}.`,
      );
    else if (hints.widget === 'checkboxes' && !field.multiple)
      fail('widget', `"checkboxes" is for a field of several values; this one holds one. Use select or radios.`);
    else if ((hints.widget === 'radios' || hints.widget === 'select') && field.type === 'list_string' && field.multiple)
      fail('widget', `"${hints.widget}" picks one value, but this field holds several. Use checkboxes.`);
  }
  if (hints.placeholder !== undefined) {
    const widget = hints.widget ?? defaultWidget(field);
    if (!editable || !widget || !PLACEHOLDER_WIDGETS.has(widget))
      fail(
        'placeholder',
        `a ${widget ?? 'read-only'} ${widget ? 'widget' : 'field'} shows no placeholder; only ${[...PLACEHOLDER_WIDGETS].join(', ')} inputs do.`,
      );
  }
  if (hints.filter === true && !FILTER_KINDS[field.type])
    fail(
      'filter',
      `a list cannot be filtered by ${an(field.type)} field. Fields of these types can: ${Object.keys(FILTER_KINDS).join(', ')}.`,
    );
  if (hints.list === true && field.type === 'inventory')
    fail('list', `an inventory is shown on the record's page only; remove list.`);
  if (hints.hidden && keys.length)
    fail(keys[0]!, `the field is hidden, so its other hints mean nothing; remove them or "hidden".`);
}

function describeBundle(
  bundle: BundleDescriptor,
  model: DataModel,
  hintOf: (name: string) => FieldUi | undefined,
): BundleUi {
  const entityType = model.entityTypes[bundle.entityType]!;
  const visible = bundle.fields
    .map((field, index) => ({ field, index, hints: hintOf(field.name) }))
    .filter((f) => shown(f.field, f.hints));
  // Fields with an order first (lower first), then the rest in definition order.
  visible.sort((a, b) => {
    const oa = a.hints?.order;
    const ob = b.hints?.order;
    if (oa !== undefined && ob !== undefined && oa !== ob) return oa - ob;
    if (oa !== undefined && ob === undefined) return -1;
    if (oa === undefined && ob !== undefined) return 1;
    return a.index - b.index;
  });
  const fields: UiField[] = visible.map(({ field, hints }) => {
    const widget = isEdited(field) ? (hints?.widget ?? defaultWidget(field)) : null;
    return {
      name: field.name,
      label: field.label,
      ...(field.description ? { description: field.description } : {}),
      section: hints?.section ?? 'main',
      widget,
      ...(hints?.placeholder ? { placeholder: hints.placeholder } : {}),
      required: field.required,
      multiple: field.multiple,
    };
  });
  const sections = [...new Set(['main', ...fields.map((f) => f.section)])].filter(
    (s) => s !== 'sidebar' && fields.some((f) => f.section === s),
  );
  if (fields.some((f) => f.section === 'sidebar')) sections.push('sidebar');

  // Columns: the label field and every field that asks for one; without any asking, a few simple ones.
  const asked = visible.filter((f) => f.hints?.list === true);
  const labelField = visible.find((f) => f.field.name === entityType.labelField);
  const columns = visible.filter((f) => (f === labelField ? f.hints?.list !== false : f.hints?.list === true));
  if (!asked.length) {
    columns.push(
      ...visible
        .filter(
          (f) =>
            f !== labelField &&
            f.hints?.list !== false &&
            !f.field.multiple &&
            !f.field.auto &&
            SIMPLE_COLUMN_TYPES.has(f.field.type),
        )
        .slice(0, DEFAULT_EXTRA_COLUMNS),
    );
  }
  columns.sort((a, b) => visible.indexOf(a) - visible.indexOf(b));

  // Filters: the label field's text, allowed values, yes/no, dates people set, and references to short lists.
  const filters: UiFilter[] = [];
  for (const { field, hints } of visible) {
    const kind = FILTER_KINDS[field.type];
    if (!kind || hints?.filter === false) continue;
    const byDefault =
      !field.computed &&
      !field.auto &&
      (field.name === entityType.labelField ||
        (kind === 'equals' && field.type === 'list_string') ||
        kind === 'boolean' ||
        kind === 'range' ||
        (kind === 'reference' && DEFAULT_REFERENCE_FILTER_TARGETS.has(field.target?.entityType ?? '')));
    if (hints?.filter === true || byDefault) filters.push({ field: field.name, label: field.label, kind });
  }

  // Newest first by the first column that is a date every record has; otherwise by the label, A to Z.
  const dated = columns.find(
    (c) => c.field.type === 'timestamp' && !c.field.auto && (c.field.required || c.field.nullable === false),
  );
  const sort = dated ? `-${dated.field.name}` : labelField ? labelField.field.name : entityType.internalId;

  return {
    type: bundle.type,
    entityType: bundle.entityType,
    bundle: bundle.bundle,
    label: bundle.label,
    ...(bundle.description ? { description: bundle.description } : {}),
    list: { columns: columns.map((c) => c.field.name), filters, sort },
    fields,
    sections,
  };
}

/**
 * The interface of every bundle of `model`, built from `files` (the model's own definition files).
 * Throws DefinitionErrors naming every misplaced hint.
 */
export function buildUi(files: SourceFile[], model: DataModel): BundleUi[] {
  const { base, own } = collectHints(files);
  const errors: DefinitionError[] = [];
  const checked = new Set<Hinted>();
  const out: BundleUi[] = [];
  for (const bundle of model.bundles) {
    const hintedOf = (name: string) => own.get(`${bundle.type}.${name}`) ?? base.get(`${bundle.entityType}.${name}`);
    for (const field of bundle.fields) {
      const hinted = hintedOf(field.name);
      if (!hinted || checked.has(hinted)) continue;
      checked.add(hinted);
      checkHints(hinted, field, errors);
    }
    out.push(describeBundle(bundle, model, (name) => hintedOf(name)?.hints));
  }
  if (errors.length) throw new DefinitionErrors(errors);
  return out;
}
