/**
 * Emits one JSON Schema per resource type in the shape jsonapi_schema serves and farmOS.js reads
 * (farmos-behaviour.md §3.3), for each API shape: `schemas/<type>.json` the farmOS 2.x shape's
 * (/api), `schemas/<shape>/<type>.json` another's (farmOS 4.x: its names, booleans, required
 * members, defaults and allowed values, from the fields' `shapes:`, model/shapes.ts). URLs carry the
 * `{base_url}` placeholder; the runtime fills in the base of the shape the schema is served in.
 */
import { DEFAULT_DECIMAL } from '../../runtime/values/decimal-value.ts';
import { FIELD_TYPE_SPECS } from '../../runtime/model/field-types.ts';
import { compileShape, SHAPE_NAMES, showValue, type ShapedField, type ShapeName } from '../../runtime/model/shapes.ts';
import type { BundleDescriptor, DataModel, FieldDescriptor } from '../../runtime/model/descriptor.ts';
import { STAMP } from './stamp.ts';
import type { FileMap } from './descriptors.ts';

export const BASE_URL_TOKEN = '{base_url}';

type Schema = Record<string, unknown>;

function propertySchema(field: FieldDescriptor): Schema {
  const spec = FIELD_TYPE_SPECS[field.type];
  const props = Object.entries(spec.properties);
  let schema: Schema;
  if (props.length === 1 || field.type === 'password') {
    const [, prop] = props[0]!;
    schema = { ...prop.schema };
    if (field.type === 'password') {
      schema = {
        type: 'object',
        properties: {
          value: { type: 'string', title: 'Password' },
          existing: { type: 'string', title: 'Existing password' },
          pre_hashed: { type: 'boolean', title: 'Determines if a password needs hashing' },
        },
      };
    }
    if (field.maxLength && field.type !== 'password') schema.maxLength = field.maxLength;
    if (field.type === 'decimal') {
      // Served as a string (as farmOS serves decimals): its digits as numeric(precision, scale) keeps them. A string takes no minimum.
      const { precision, scale } =
        field.precision !== undefined ? { precision: field.precision, scale: field.scale! } : DEFAULT_DECIMAL;
      schema.pattern = `^-?\\d{1,${Math.max(1, precision - scale)}}${scale ? `(\\.\\d{1,${scale}})?` : ''}$`;
    } else {
      if (field.min !== undefined) schema.minimum = field.min;
      if (field.max !== undefined) schema.maximum = field.max;
    }
  } else {
    const properties: Record<string, Schema> = {};
    for (const [name, prop] of props) properties[name] = { ...prop.schema };
    schema = { type: 'object', properties };
    if (field.type === 'text_long') schema.required = ['value'];
    if (field.type === 'fraction') schema.required = ['numerator', 'denominator'];
  }
  return schema;
}

function attributeSchema(field: FieldDescriptor, shaped: ShapedField): Schema {
  // A stored list value a shape shows as a boolean (an asset's 4.x `archived`): a boolean, no list.
  if (shaped.shownAsBoolean) {
    const schema: Schema = { type: 'boolean', title: shaped.label };
    if (shaped.description) schema.description = shaped.description;
    const shown = showValue(shaped, shaped.default);
    if (typeof shown === 'boolean') schema.default = shown;
    if (field.readOnly) schema.readOnly = true;
    return schema;
  }
  const item = propertySchema(field);
  // The shape's values: a stored value it cannot write is not listed (2.x: no abandoned log).
  let enumeration = shaped.allowedValues?.map((v) => ({ const: v.value, title: v.label }));
  // An ID tag's allowed values are its tag types: they constrain the item's `type` property.
  if (field.type === 'id_tag' && enumeration) {
    (item.properties as Record<string, Schema>).type = {
      ...(item.properties as Record<string, Schema>).type,
      anyOf: enumeration,
    };
    enumeration = undefined;
  }
  let schema: Schema;
  if (field.multiple) {
    schema = { type: 'array', title: shaped.label, items: { ...item, title: (item.title as string) ?? 'Text value' } };
    if (field.type === 'list_string' || field.type === 'string') (schema.items as Schema).title = 'Text value';
    if (enumeration) (schema.items as Schema).anyOf = enumeration;
    if (field.required) schema.minItems = 1;
  } else {
    schema = { ...item, title: shaped.label };
    if (enumeration) schema.oneOf = enumeration;
  }
  if (shaped.description) schema.description = shaped.description;
  if (shaped.default !== undefined && typeof shaped.default !== 'object') schema.default = shaped.default;
  if (field.readOnly) schema.readOnly = true;
  return schema;
}

function targetTypes(field: FieldDescriptor, model: DataModel): string[] | undefined {
  const target = field.target!;
  if (!model.entityTypes[target.entityType]) return [`${target.entityType}--${target.entityType}`];
  if (!target.bundles) return undefined;
  return target.bundles.map((b) => {
    const type = model.entityTypes[target.entityType]!;
    return type.hasBundles ? `${target.entityType}--${b}` : `${target.entityType}--${target.entityType}`;
  });
}

function relationshipSchema(
  field: FieldDescriptor,
  shaped: ShapedField,
  bundle: BundleDescriptor,
  model: DataModel,
): Schema {
  const types = targetTypes(field, model);
  const identifier: Schema = {
    type: 'object',
    required: ['type', 'id'],
    properties: {
      type: { type: 'string', title: 'Referenced resource', ...(types ? { enum: types } : {}) },
      id: { type: 'string', title: 'Resource ID', format: 'uuid', maxLength: 128 },
    },
  };
  const spec = FIELD_TYPE_SPECS[field.type];
  const metaProps = Object.entries(spec.properties).filter(([p]) => p !== 'target_id');
  const meta: Schema = metaProps.length
    ? {
        type: 'object',
        properties: Object.fromEntries([
          ['target_id', { ...spec.properties.target_id!.schema }],
          ...metaProps.map(([p, s]) => [p, { ...s.schema }]),
        ]),
        required: ['target_id'],
      }
    : model.entityTypes[field.target!.entityType]
      ? { type: 'integer', title: `${capitalise(model.entityTypes[field.target!.entityType]!.label)} ID` }
      : { type: 'string', title: `${capitalise(field.target!.entityType.replace(/_/g, ' '))} ID` };
  (identifier.properties as Schema).meta = meta;
  const data: Schema = field.multiple ? { type: 'array', items: identifier } : identifier;
  const schema: Schema = {
    type: 'object',
    properties: { data },
    title: shaped.label,
    ...(shaped.description ? { description: shaped.description } : {}),
    ...(field.readOnly ? { readOnly: true } : {}),
    links: [
      {
        href: '{instanceHref}',
        rel: 'related',
        targetMediaType: 'application/vnd.api+json',
        targetSchema: `${BASE_URL_TOKEN}/api/${bundle.entityType}/${bundle.bundle}/resource/relationships/${field.name}/related/schema`,
        templatePointers: { instanceHref: '/links/related/href' },
        templateRequired: ['instanceHref'],
      },
    ],
  };
  return schema;
}

/** The bundle relationship Drupal adds to every bundleable entity (log_type, asset_type, vid). */
function bundleRelationship(bundle: BundleDescriptor, model: DataModel): [string, Schema] | null {
  const type = model.entityTypes[bundle.entityType]!;
  if (!type.bundleKey) return null;
  const configType =
    type.bundleKey === 'vid' ? 'taxonomy_vocabulary--taxonomy_vocabulary' : `${type.bundleKey}--${type.bundleKey}`;
  return [
    type.bundleKey,
    {
      type: 'object',
      properties: {
        data: {
          type: 'object',
          required: ['type', 'id'],
          properties: {
            type: { type: 'string', title: 'Referenced resource', enum: [configType] },
            id: { type: 'string', title: 'Resource ID', format: 'uuid', maxLength: 128 },
            meta: { type: 'string', title: `${capitalise(type.label)} type ID` },
          },
        },
      },
      title: type.bundleKey === 'vid' ? 'Vocabulary' : `${capitalise(type.label)} type`,
      readOnly: true,
    },
  ];
}

/** The resource object schema of one bundle (`…/resource/schema`) in a shape. */
export function resourceSchema(bundle: BundleDescriptor, model: DataModel, shape: ShapeName = 'farmos2'): Schema {
  const type = model.entityTypes[bundle.entityType]!;
  const shaped = compileShape(bundle.fields, shape);
  const attributes: Record<string, Schema> = {};
  const relationships: Record<string, Schema> = {};
  const required: string[] = [];
  attributes[type.internalId] = { type: 'integer', title: 'ID', readOnly: true };
  if (type.revisionId) attributes[type.revisionId] = { type: 'integer', title: 'Revision ID', readOnly: true };
  const bundleRel = bundleRelationship(bundle, model);
  if (bundleRel) relationships[bundleRel[0]] = bundleRel[1];
  for (const field of bundle.fields) {
    if (field.internal && field.type !== 'password') continue;
    const sf = shaped.byField.get(field);
    if (!sf) continue; // not in this shape
    if (field.kind === 'relationship') relationships[sf.name] = relationshipSchema(field, sf, bundle, model);
    else attributes[sf.name] = attributeSchema(field, sf);
    // farmOS lists only attributes as required; a required relationship is checked on write.
    if (sf.required && field.kind === 'attribute' && !field.computed && !field.auto) required.push(sf.name);
  }
  if (type.entityType === 'taxonomy_term' || type.entityType === 'user') required.unshift(type.internalId);
  const title = `${bundle.label} ${type.hasBundles ? type.label : ''}`.trim();
  return {
    $schema: 'https://json-schema.org/draft/2019-09/hyper-schema',
    $id: `${BASE_URL_TOKEN}/api/${bundle.entityType}/${bundle.bundle}/resource/schema`,
    $comment: STAMP,
    title,
    allOf: [
      {
        type: 'object',
        properties: {
          type: { $ref: '#/definitions/type' },
          attributes: { $ref: '#/definitions/attributes' },
          relationships: { $ref: '#/definitions/relationships' },
        },
      },
      { $ref: 'https://jsonapi.org/schema#/definitions/resource' },
    ],
    definitions: {
      type: { const: bundle.type },
      attributes: {
        description: 'Entity attributes',
        type: 'object',
        properties: attributes,
        required,
        additionalProperties: false,
      },
      relationships: {
        description: 'Entity relationships',
        type: 'object',
        properties: relationships,
        additionalProperties: false,
      },
    },
  };
}

/** Where a shape's schema of a resource type is written: the 2.x shape's as always, another's in a folder of its name. */
export function schemaPath(shape: ShapeName, type: string): string {
  return shape === 'farmos2' ? `schemas/${type}.json` : `schemas/${shape}/${type}.json`;
}

export function emitSchemas(model: DataModel): FileMap {
  const files: FileMap = new Map();
  for (const shape of SHAPE_NAMES)
    for (const bundle of model.bundles)
      files.set(schemaPath(shape, bundle.type), JSON.stringify(resourceSchema(bundle, model, shape), null, 2) + '\n');
  return files;
}

function capitalise(s: string): string {
  return s.charAt(0).toUpperCase() + s.slice(1);
}
