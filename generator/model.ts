/**
 * Builds the one normalised data model from the checked definition files, and checks what no
 * single file can: that entity types and reference targets exist, that field names are unique
 * per bundle, that a field shared by bundles has one storage, as Drupal's field storage does, and
 * that computed fields have what they are computed from. A pipeline of steps over files whose data
 * is typed by generated/meta-schema.ts (the meta-schema checked them in load.ts); every step
 * reports into one list of problems, thrown together at the end.
 */
import type { SourceFile } from './load.ts';
import type { Field } from '../generated/meta-schema.ts';
import { DefinitionError, DefinitionErrors } from './errors.ts';
import { FIELD_TYPE_SPECS, type FieldType } from '../runtime/model/field-types.ts';
import type {
  BundleDescriptor,
  DataModel,
  EntityTypeDescriptor,
  FieldDescriptor,
  ModuleDescriptor,
} from '../runtime/model/descriptor.ts';
import { assignStorage } from './storage.ts';
import { COMPUTED_NEEDS } from '../runtime/model/computed-needs.ts';
import { CONVERSIONS, conversionDefined } from '../runtime/model/conversions.ts';
import { isConfigEntityType } from '../runtime/model/config-entities.ts';
import { checkShapeNames, normaliseShapes } from './shapes.ts';

const RESERVED = new Set([
  'id',
  'type',
  'uuid',
  'bundle',
  'links',
  'meta',
  'attributes',
  'relationships',
  'revision_id',
  'entity_id',
  'delta',
]);
const REFERENCE_TYPES = new Set<FieldType>(['entity_reference', 'entity_reference_revisions', 'file', 'image']);

type FileOf<K extends SourceFile['kind']> = Extract<SourceFile, { kind: K }>;
type EntityTypes = Record<string, EntityTypeDescriptor>;

interface PendingField {
  file: SourceFile;
  path: Array<string | number>;
  descriptor: FieldDescriptor;
}

/** A bundle being built: one per bundle file, plus the single implicit bundle of types without bundles. */
interface PendingBundle {
  file?: FileOf<'bundleFile'>;
  descriptor: Omit<BundleDescriptor, 'fields'>;
  fields: PendingField[];
  defaults: Record<string, unknown>;
}

/** Every problem found, each with its file and line. */
class Problems {
  readonly errors: DefinitionError[] = [];
  /** `atKey`: the line of the path's last key (the name is the problem), not of its value. */
  fail(file: SourceFile, path: Array<string | number>, sentence: string, options: { atKey?: boolean } = {}): void {
    this.errors.push(new DefinitionError(file.path, file.lineOf(path, options), sentence));
  }
}

const filesOf = <K extends SourceFile['kind']>(files: SourceFile[], kind: K) =>
  files.filter((f): f is FileOf<K> => f.kind === kind);

export function buildModel(files: SourceFile[]): DataModel {
  const problems = new Problems();
  const modules = readModules(filesOf(files, 'moduleFile'), problems);
  const entityFiles = filesOf(files, 'entityTypeFile');
  const entityTypes = readEntityTypes(entityFiles, problems);
  const bundles = readBundles(
    filesOf(files, 'bundleFile'),
    entityTypes,
    new Set(modules.map((m) => m.module)),
    problems,
  );
  const fields = new FieldNormaliser(entityTypes, bundles, problems);
  const baseFields = readBaseFields(entityFiles, entityTypes, fields, problems);
  for (const bundle of bundles)
    attachFields(bundle, baseFields.get(bundle.descriptor.entityType) ?? [], fields, problems);
  checkSharedStorage(bundles, problems);
  checkComputedNeeds(bundles, problems);
  if (problems.errors.length) throw new DefinitionErrors(problems.errors);

  const model: DataModel = {
    entityTypes,
    modules: modules.sort((a, b) => a.module.localeCompare(b.module)),
    bundles: bundles
      .map((b) => ({ ...b.descriptor, fields: b.fields.map((f) => f.descriptor) }))
      .sort((a, b) => (a.type < b.type ? -1 : a.type > b.type ? 1 : 0)),
  };
  assignStorage(model);
  return model;
}

/** Modules: one per module.yaml, named after its folder. */
function readModules(files: Array<FileOf<'moduleFile'>>, problems: Problems): ModuleDescriptor[] {
  const modules: ModuleDescriptor[] = [];
  for (const file of files) {
    if (file.data.module !== file.module) {
      problems.fail(
        file,
        ['module'],
        `the module is named "${file.data.module}" but its folder is "${file.module}"; they must match.`,
      );
      continue;
    }
    const twin = files.find((f) => f !== file && f.module === file.module && f.origin !== file.origin);
    if (twin && file.origin === 'site') {
      problems.fail(
        file,
        ['module'],
        `the module "${file.module}" is Tilth's own, defined in ${twin.path}; a site module needs a name of its own.`,
      );
      continue;
    }
    modules.push({ module: file.data.module, label: file.data.label, description: file.data.description });
  }
  return modules;
}

/** Entity types, one per file under definitions/entity-types/. */
function readEntityTypes(files: Array<FileOf<'entityTypeFile'>>, problems: Problems): EntityTypes {
  const entityTypes: Record<string, EntityTypeDescriptor> = {};
  for (const file of files) {
    const d = file.data;
    if (entityTypes[d.entity_type]) {
      problems.fail(file, ['entity_type'], `entity type "${d.entity_type}" is defined twice.`);
      continue;
    }
    entityTypes[d.entity_type] = {
      entityType: d.entity_type,
      label: d.label,
      labelPlural: d.label_plural,
      table: d.table ?? d.entity_type,
      internalId: d.internal_id,
      ...(d.revision_id ? { revisionId: d.revision_id } : {}),
      ...(d.bundle_key ? { bundleKey: d.bundle_key } : {}),
      labelField: d.label_field,
      ...(d.name_pattern ? { namePattern: d.name_pattern } : {}),
      access: d.access,
      hasBundles: Boolean(d.bundle_key),
    };
  }

  return entityTypes;
}

/** Bundles: the implicit one of each type without bundles, then one per bundle file, checked against its place. */
function readBundles(
  files: Array<FileOf<'bundleFile'>>,
  entityTypes: EntityTypes,
  moduleNames: ReadonlySet<string>,
  problems: Problems,
): PendingBundle[] {
  const bundles: PendingBundle[] = [];
  for (const type of Object.values(entityTypes)) {
    if (!type.hasBundles) {
      bundles.push({
        descriptor: {
          type: `${type.entityType}--${type.entityType}`,
          entityType: type.entityType,
          bundle: type.entityType,
          label: capitalise(type.label),
          module: null,
        },
        fields: [],
        defaults: {},
      });
    }
  }
  const seenBundles = new Map<string, SourceFile>();
  // Core files first, whatever their folder's place in the alphabet (modules/ sorts before
  // quantity/ and taxonomy_term/), so that a module's bundle that shadows a core one is the one
  // reported.
  // The site's files last, so that a site bundle with the name of one of Tilth's own is the one reported.
  const rank = (f: SourceFile) => (f.origin === 'site' ? 2 : 0) + (f.module !== null ? 1 : 0);
  for (const file of [...files].sort((a, b) => rank(a) - rank(b))) {
    const d = file.data;
    const type = entityTypes[d.entity_type];
    if (!type) {
      problems.fail(
        file,
        ['entity_type'],
        `unknown entity type "${d.entity_type}". Entity types are: ${Object.keys(entityTypes).sort().join(', ')}.`,
      );
      continue;
    }
    if (!type.hasBundles) {
      problems.fail(
        file,
        ['entity_type'],
        `entity type "${d.entity_type}" has no bundles; its fields belong in definitions/entity-types/${d.entity_type}.yaml.`,
      );
      continue;
    }
    const folder = file.path.split(/[\\/]/).slice(-2, -1)[0];
    if (folder !== d.entity_type) {
      problems.fail(
        file,
        ['entity_type'],
        `this file says entity_type "${d.entity_type}" but sits in the folder "${folder}"; put it in a folder named after its entity type.`,
      );
      continue;
    }
    const fileName = file.path
      .split(/[\\/]/)
      .pop()!
      .replace(/\.ya?ml$/, '');
    if (fileName !== d.bundle) {
      problems.fail(
        file,
        ['bundle'],
        `the bundle is named "${d.bundle}" but the file is "${fileName}.yaml"; name the file after the bundle.`,
      );
      continue;
    }
    if (file.module && !moduleNames.has(file.module)) {
      problems.fail(
        file,
        [],
        `the module folder "${file.module}" has no module.yaml; add one with module, label and description.`,
      );
      continue;
    }
    if (d.births === true && (d.entity_type !== 'log' || d.fields?.mother?.target_type !== 'asset')) {
      problems.fail(
        file,
        ['births'],
        'births needs a log bundle with a "mother" field pointing at assets (target_type: asset).',
      );
      continue;
    }
    if (d.new_revision !== undefined && !type.revisionId) {
      problems.fail(
        file,
        ['new_revision'],
        `entity type "${d.entity_type}" keeps no revisions (its file has no revision_id), so new_revision means nothing here; remove it.`,
      );
      continue;
    }
    const id = `${d.entity_type}--${d.bundle}`;
    const previous = seenBundles.get(id);
    if (previous) {
      problems.fail(
        file,
        ['bundle'],
        file.origin === 'site' && previous.origin === 'core'
          ? `bundle "${id}" is Tilth's own, defined in ${previous.path}; a site bundle cannot redefine or replace it. Give yours a name of its own (e.g. farm_${d.bundle}).`
          : file.module && !previous.module
            ? `bundle "${id}" is a core bundle, defined in ${previous.path}; a module cannot redefine or replace it. Give the module's bundle a name of its own (e.g. ${file.module}_${d.bundle}).`
            : `bundle "${id}" is already defined in ${previous.path}.`,
      );
      continue;
    }
    seenBundles.set(id, file);
    bundles.push({
      file,
      descriptor: {
        type: id,
        entityType: d.entity_type,
        bundle: d.bundle,
        label: d.label,
        ...(d.description ? { description: d.description } : {}),
        module: file.module,
        // Written only when false, so bundles that keep Drupal's default stay as they were.
        ...(d.new_revision === false ? { newRevision: false } : {}),
        ...(d.births === true ? { births: true } : {}),
      },
      fields: [],
      defaults: d.defaults ?? {},
    });
  }

  return bundles;
}

/** Turns one field definition into its descriptor, or reports why it cannot. */
class FieldNormaliser {
  constructor(
    private readonly entityTypes: EntityTypes,
    private readonly bundles: PendingBundle[],
    private readonly problems: Problems,
  ) {}

  /** The names an entity type's documents give its own ids and bundle: no field may show under one. */
  reservedNames(entityType: string): string[] {
    const et = this.entityTypes[entityType];
    return et ? ([et.internalId, et.revisionId, et.bundleKey].filter(Boolean) as string[]) : [];
  }

  private bundleNames(entityType: string): Set<string> {
    return new Set(this.bundles.filter((b) => b.descriptor.entityType === entityType).map((b) => b.descriptor.bundle));
  }

  normalise(
    file: SourceFile,
    name: string,
    raw: Field,
    entityType: string,
    ownBundle: string | null,
  ): FieldDescriptor | null {
    const path = ['fields', name];
    const type = raw.type as FieldType;
    const spec = FIELD_TYPE_SPECS[type];
    let ok = true;
    const bad = (sub: Array<string | number>, sentence: string, options: { atKey?: boolean } = {}) => {
      ok = false;
      this.problems.fail(file, [...path, ...sub], `field "${name}": ${sentence}`, options);
    };
    if (RESERVED.has(name)) bad([], `"${name}" is reserved by JSON:API or by storage; choose another name.`);
    const isReference = REFERENCE_TYPES.has(type);
    let target: FieldDescriptor['target'];
    if (isReference) {
      const targetType = type === 'file' || type === 'image' ? 'file' : raw.target_type;
      if (!targetType)
        bad([], `a ${type} field needs "target_type" (one of ${Object.keys(this.entityTypes).sort().join(', ')}).`);
      else if (isConfigEntityType(targetType)) {
        if (!raw.computed)
          bad(['target_type'], `"${targetType}" is not stored as records here, so a reference to it must be computed.`);
        target = { entityType: targetType, bundles: null };
      } else if (!this.entityTypes[targetType])
        bad(
          ['target_type'],
          `unknown target_type "${targetType}". Entity types are: ${Object.keys(this.entityTypes).sort().join(', ')}.`,
        );
      else {
        let targetBundles: string[] | null = null;
        if (raw.target_bundles) {
          const known = this.bundleNames(targetType);
          targetBundles = [];
          raw.target_bundles.forEach((b, i) => {
            const resolved = b === 'self' && ownBundle && targetType === entityType ? ownBundle : b;
            if (b === 'self' && !ownBundle) {
              targetBundles!.push('self');
              return;
            }
            if (!known.has(resolved))
              bad(
                ['target_bundles', i],
                `target bundle "${resolved}" does not exist in ${targetType}. Known bundles: ${[...known].sort().join(', ')}.`,
              );
            else targetBundles!.push(resolved);
          });
        }
        target = {
          entityType: targetType,
          bundles: targetBundles,
          ...(raw.target_filter ? { filter: raw.target_filter } : {}),
        };
      }
    } else {
      for (const k of ['target_type', 'target_bundles', 'target_filter'] as const)
        if (raw[k] !== undefined) bad([k], `"${k}" only applies to reference fields, not to ${type}.`);
    }
    if (raw.allowed_values && type !== 'list_string' && type !== 'id_tag')
      bad(['allowed_values'], `"allowed_values" only applies to list_string fields, not to ${type}.`);
    if (raw.allowed_values) {
      const seen = new Set<string>();
      raw.allowed_values.forEach((v, i) => {
        if (seen.has(v.value)) bad(['allowed_values', i], `allowed value "${v.value}" is listed twice.`);
        seen.add(v.value);
      });
    }
    let dflt: FieldDescriptor['default'];
    if (raw.default !== undefined) {
      if (type === 'timestamp') {
        if (raw.default === 'now') dflt = { now: true };
        else if (typeof raw.default === 'number' && Number.isInteger(raw.default)) dflt = raw.default;
        else bad(['default'], `a timestamp default must be "now" or whole Unix seconds.`);
      } else if (type === 'boolean' && typeof raw.default !== 'boolean')
        bad(['default'], `a boolean default must be true or false.`);
      else if ((type === 'integer' || type === 'decimal') && typeof raw.default !== 'number')
        bad(['default'], `a ${type} default must be a number.`);
      else if (raw.allowed_values && !raw.allowed_values.some((v) => v.value === raw.default))
        bad(['default'], `default "${raw.default}" is not one of the allowed values.`);
      else dflt = raw.default;
    }
    if (raw.default_callback !== undefined && type !== 'string')
      bad(['default_callback'], `"default_callback" only applies to string fields.`);
    if (raw.default_callback !== undefined && raw.default !== undefined)
      bad(['default_callback'], `give either "default" or "default_callback", not both.`);
    if (raw.max_length !== undefined && !['string', 'email', 'string_long'].includes(type))
      bad(['max_length'], `"max_length" only applies to string and email fields.`);
    if ((raw.min !== undefined || raw.max !== undefined) && !['integer', 'decimal'].includes(type))
      bad([raw.min !== undefined ? 'min' : 'max'], `"min" and "max" only apply to integer and decimal fields.`);
    if (
      raw.renamed_from !== undefined &&
      (raw.computed || type === 'password' || type === 'file_uri' || raw.renamed_from === name)
    ) {
      bad(
        ['renamed_from'],
        raw.renamed_from === name
          ? `"renamed_from" names the field itself.`
          : `a computed field has no stored values to move; remove "renamed_from".`,
      );
    }
    if (raw.converted_from !== undefined) {
      if (raw.renamed_from === undefined)
        bad(
          ['converted_from'],
          `a type change needs a new name: give "renamed_from" the former name (storage is shared, so a column never changes type in place).`,
        );
      else if (!conversionDefined(raw.converted_from as FieldType, type))
        bad(
          ['converted_from'],
          `no conversion from ${raw.converted_from} to ${type} is defined. Defined: ${CONVERSIONS.map(([a, b]) => `${a} → ${b}`).join(', ')}.`,
        );
      else if (raw.multiple)
        bad(['converted_from'], `a multiple field's type cannot be converted yet; add a field with a new name.`);
    }
    const former: Record<string, string | null> = {};
    for (const key of ['renamed_values', 'removed_values'] as const) {
      const map = raw[key];
      if (map === undefined) continue;
      if (type !== 'list_string') {
        bad([key], `"${key}" only applies to list_string fields.`);
        continue;
      }
      const allowed = new Set((raw.allowed_values ?? []).map((v) => v.value));
      for (const [from, to] of Object.entries(map)) {
        if (allowed.has(from))
          bad(
            [key, from],
            `"${from}" is still an allowed value; a value renamed or removed must leave allowed_values.`,
            { atKey: true },
          );
        else if (from in former)
          bad([key, from], `"${from}" is both renamed and removed; say once what its records get.`, { atKey: true });
        else if (to !== null && !allowed.has(to))
          bad(
            [key, from],
            `"${from}" would become "${to}", which is not an allowed value. Allowed: ${[...allowed].join(', ')}.`,
          );
        else if (to === null && raw.required && !raw.multiple)
          bad(
            [key, from],
            `"${from}" would be cleared, but the field is required: name the allowed value its records get instead.`,
          );
        else former[from] = to;
      }
    }
    if ((raw.precision !== undefined || raw.scale !== undefined) && type !== 'decimal')
      bad(
        [raw.precision !== undefined ? 'precision' : 'scale'],
        `"precision" and "scale" only apply to decimal fields.`,
      );
    if (type === 'decimal' && (raw.precision === undefined) !== (raw.scale === undefined))
      bad(
        [raw.precision === undefined ? 'scale' : 'precision'],
        `give both "precision" and "scale" (e.g. precision: 10, scale: 2), or neither for 30 and 10.`,
      );
    if (raw.precision !== undefined && raw.scale !== undefined && raw.scale > raw.precision)
      bad(
        ['scale'],
        `"scale" (${raw.scale}) cannot be more than "precision" (${raw.precision}): the digits after the point are part of all the digits.`,
      );
    if (type === 'inventory' && !raw.computed)
      bad(['type'], `inventory fields are computed; add "computed: inventory".`);
    if (type === 'file_uri' && raw.computed !== 'file_uri')
      bad(['type'], `file_uri fields are computed; add "computed: file_uri".`);
    const shapes = normaliseShapes(name, raw, bad);
    if (!ok) return null;
    const computed = raw.computed;
    return {
      name,
      type,
      kind: spec.kind,
      label: raw.label,
      ...(raw.description ? { description: raw.description } : {}),
      required: Boolean(raw.required),
      ...(raw.nullable === false ? { nullable: false as const } : {}),
      multiple: Boolean(raw.multiple),
      ...(raw.max_length !== undefined ? { maxLength: raw.max_length } : type === 'string' ? { maxLength: 255 } : {}),
      ...(raw.min !== undefined ? { min: raw.min } : {}),
      ...(raw.max !== undefined ? { max: raw.max } : {}),
      ...(raw.precision !== undefined ? { precision: raw.precision, scale: raw.scale } : {}),
      ...(dflt !== undefined ? { default: dflt } : {}),
      ...(raw.default_callback ? { defaultCallback: raw.default_callback } : {}),
      ...(raw.allowed_values ? { allowedValues: raw.allowed_values } : {}),
      ...(Object.keys(former).length ? { formerValues: former } : {}),
      ...(raw.renamed_from ? { renamedFrom: raw.renamed_from } : {}),
      ...(raw.converted_from ? { convertedFrom: raw.converted_from as FieldType } : {}),
      ...(target ? { target } : {}),
      aliases: raw.aliases ?? [],
      // Computed and automatic fields are read-only unless the definition says `read_only: false`
      // (a computed field the runtime itself stores on write, like a user's roles).
      readOnly: raw.read_only === false ? false : Boolean(raw.read_only || computed || raw.auto),
      ...(computed ? { computed } : {}),
      ...(raw.auto ? { auto: raw.auto } : {}),
      internal: Boolean(raw.internal || type === 'password'),
      visibility: raw.visibility ?? 'all',
      storage: { kind: 'none' },
      ...(shapes ? { shapes } : {}),
    };
  }
}

/** The base fields of each entity type, and its label field among them. */
function readBaseFields(
  files: Array<FileOf<'entityTypeFile'>>,
  entityTypes: EntityTypes,
  fields: FieldNormaliser,
  problems: Problems,
): Map<string, PendingField[]> {
  const baseFields = new Map<string, PendingField[]>();
  for (const file of files) {
    const type = file.data.entity_type;
    const list: PendingField[] = [];
    for (const [name, raw] of Object.entries(file.data.fields ?? {})) {
      const descriptor = fields.normalise(file, name, raw, type, null);
      if (descriptor) list.push({ file, path: ['fields', name], descriptor });
    }
    baseFields.set(type, list);
    const et = entityTypes[type]!;
    for (const [key, field] of [['label_field', et.labelField]] as const) {
      if (!list.some((f) => f.descriptor.name === field))
        problems.fail(file, [key], `${key} "${field}" is not one of this entity type's fields.`);
    }
  }

  return baseFields;
}

/** A bundle's fields: its entity type's base fields (with its defaults, `self` targets and ID tag types), then its own. */
function attachFields(bundle: PendingBundle, base: PendingField[], fields: FieldNormaliser, problems: Problems): void {
  const et = bundle.descriptor.entityType;
  // Base fields, with per-bundle defaults and `self` targets resolved.
  for (const pending of base) {
    const f: FieldDescriptor = structuredClone(pending.descriptor);
    if (f.target?.bundles)
      f.target.bundles = f.target.bundles.map((b) => (b === 'self' ? bundle.descriptor.bundle : b));
    bundle.fields.push({ ...pending, descriptor: f });
  }
  if (!bundle.file) return;
  const file = bundle.file;
  const tagTypes = file.data.id_tag_types;
  if (tagTypes) {
    const tags = bundle.fields.filter((f) => f.descriptor.type === 'id_tag');
    if (!tags.length)
      problems.fail(file, ['id_tag_types'], `id_tag_types needs an id_tag field, and ${et} has none.`, { atKey: true });
    for (const { descriptor } of tags) {
      const known = descriptor.allowedValues ?? [];
      descriptor.allowedValues = [...known, ...tagTypes.filter((t) => !known.some((k) => k.value === t.value))];
    }
  }
  for (const [name, value] of Object.entries(bundle.defaults)) {
    const field = bundle.fields.find((f) => f.descriptor.name === name);
    if (!field)
      problems.fail(file, ['defaults', name], `defaults names "${name}", which is not a base field of ${et}.`, {
        atKey: true,
      });
    else field.descriptor.default = value as string | number | boolean;
  }
  for (const [name, raw] of Object.entries(file.data.fields ?? {})) {
    if (base.some((f) => f.descriptor.name === name)) {
      problems.fail(
        file,
        ['fields', name],
        `field "${name}" duplicates a base field that every ${et} already has (definitions/entity-types/${et}.yaml).`,
        { atKey: true },
      );
      continue;
    }
    const descriptor = fields.normalise(file, name, raw, et, bundle.descriptor.bundle);
    if (descriptor) bundle.fields.push({ file, path: ['fields', name], descriptor });
  }
  // Aliases must not shadow another field or alias of the same bundle.
  const names = new Map<string, string>();
  for (const { descriptor: f } of bundle.fields) names.set(f.name, f.name);
  for (const { descriptor: f, path, file: ffile } of bundle.fields) {
    for (const alias of f.aliases) {
      if (names.has(alias))
        problems.fail(
          ffile,
          [...path, 'aliases'],
          `field "${f.name}": alias "${alias}" is already the name of ${names.get(alias) === alias ? 'a field' : `an alias of "${names.get(alias)}"`} in ${bundle.descriptor.type}.`,
        );
      names.set(alias, f.name);
    }
  }
  // Each shape's public names must be unique too (a field renamed in one onto another's name).
  const etd = bundle.descriptor.entityType;
  const pendingByName = new Map(bundle.fields.map((p) => [p.descriptor.name, p]));
  checkShapeNames(
    bundle.fields.map((p) => p.descriptor),
    fields.reservedNames(etd),
    (name, shape, sentence) => {
      const p = pendingByName.get(name)!;
      problems.fail(p.file, [...p.path, 'shapes', shape], sentence);
    },
  );
}

/** One storage per field name per entity type, as Drupal's shared field storage requires. */
function checkSharedStorage(bundles: PendingBundle[], problems: Problems): void {
  // The storage most bundles agree on is taken as intended; the files that differ are reported.
  const sharing = new Map<string, PendingField[]>();
  for (const bundle of bundles) {
    for (const pending of bundle.fields) {
      const key = `${bundle.descriptor.entityType}.${pending.descriptor.name}`;
      sharing.set(key, [...(sharing.get(key) ?? []), pending]);
    }
  }
  for (const group of sharing.values()) {
    const signature = (f: FieldDescriptor) => describeStorage(f);
    const counts = new Map<string, number>();
    for (const p of group) counts.set(signature(p.descriptor), (counts.get(signature(p.descriptor)) ?? 0) + 1);
    if (counts.size < 2) continue;
    const canonical = [...counts.entries()].sort((a, b) => b[1] - a[1])[0]![0];
    const example = group.find((p) => signature(p.descriptor) === canonical)!;
    const reported = new Set<string>();
    for (const p of group) {
      if (signature(p.descriptor) === canonical || reported.has(p.file.path)) continue;
      reported.add(p.file.path);
      problems.fail(
        p.file,
        p.path,
        `field "${p.descriptor.name}" is ${signature(p.descriptor)} here but ${canonical} in ${example.file.path}; a field name shared by bundles of one entity type must have the same type, cardinality and target.`,
        { atKey: true },
      );
    }
  }
}

/** A computed field needs the fields it is computed from (model/computed-needs.ts), on its record and elsewhere. */
function checkComputedNeeds(bundles: PendingBundle[], problems: Problems): void {
  const fieldNames = (entityType: string) =>
    new Set(
      bundles
        .filter((b) => b.descriptor.entityType === entityType)
        .flatMap((b) => b.fields.map((f) => f.descriptor.name)),
    );
  for (const bundle of bundles) {
    const own = new Set(bundle.fields.map((f) => f.descriptor.name));
    for (const { descriptor: f, path, file: ffile } of bundle.fields) {
      if (!f.computed) continue;
      const needs = COMPUTED_NEEDS[f.computed];
      const missingOwn = needs.own.filter((n) => !own.has(n));
      if (missingOwn.length)
        problems.fail(
          ffile,
          [...path, 'computed'],
          `field "${f.name}" is computed (${f.computed}) from ${needs.own.join(', ')} of its own record, but ${bundle.descriptor.type} has no ${missingOwn.map((n) => `"${n}"`).join(', ')}.`,
        );
      for (const [entityType, names] of Object.entries(needs.elsewhere)) {
        const present = fieldNames(entityType);
        const missing = names.filter((n) => !present.has(n));
        if (missing.length)
          problems.fail(
            ffile,
            [...path, 'computed'],
            `field "${f.name}" is computed (${f.computed}) from the ${entityType} fields ${names.join(', ')}, but no ${entityType} bundle has ${missing.map((n) => `"${n}"`).join(', ')} (renamed or removed?).`,
          );
      }
    }
  }
}

function describeStorage(f: FieldDescriptor): string {
  return `${f.multiple ? 'multiple ' : ''}${f.type}${f.target ? ` → ${f.target.entityType}` : ''}${f.computed ? ' (computed)' : ''}`;
}

function capitalise(s: string): string {
  return s.charAt(0).toUpperCase() + s.slice(1);
}
