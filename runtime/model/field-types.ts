/**
 * What each farmOS field type is made of: its properties, how each is stored, and whether the
 * field is an attribute or a relationship in JSON:API. The generator (storage, schemas) and the
 * runtime (serialisation, validation, filtering) both read this one table.
 */

export const FIELD_TYPES = [
  'boolean',
  'decimal',
  'email',
  'entity_reference',
  'entity_reference_revisions',
  'file',
  'image',
  'fraction',
  'geofield',
  'id_tag',
  'integer',
  'inventory',
  'list_string',
  'string',
  'string_long',
  'text_long',
  'timestamp',
  'uri',
  'password',
  'file_uri',
] as const;

export type FieldType = (typeof FIELD_TYPES)[number];

/** Column types the storage layer knows, the same on SQLite and PostgreSQL. */
export type ColumnType = 'text' | 'integer' | 'bigint' | 'boolean' | 'double' | 'decimal';

export interface PropertySpec {
  /** Column type for the stored property. */
  column: ColumnType;
  /** JSON Schema of the property as jsonapi_schema renders it. */
  schema: Record<string, unknown>;
  /** Derived on write from other properties (geofield extents); clients may not set it. */
  derived?: boolean;
  /** Computed on read only, never stored (text_long `processed`, fraction `decimal`). */
  output?: boolean;
}

export interface FieldTypeSpec {
  kind: 'attribute' | 'relationship';
  /** Properties in output order. A field with one property is rendered as that property's value. */
  properties: Record<string, PropertySpec>;
  /**
   * The property a filter or sort path may leave out: `filter[name]` means `name.value`, and for
   * compound fields too (`filter[notes]` means `notes.value`, as Drupal resolves a bare field name).
   */
  mainProperty?: string;
}

const text = (title: string): PropertySpec => ({ column: 'text', schema: { type: 'string', title } });
const num = (): PropertySpec => ({ column: 'double', schema: {}, derived: true });

export const FIELD_TYPE_SPECS: Record<FieldType, FieldTypeSpec> = {
  boolean: {
    kind: 'attribute',
    properties: { value: { column: 'boolean', schema: { type: 'boolean' } } },
    mainProperty: 'value',
  },
  // A string, as farmOS serves Drupal's decimals ("2.75", no trailing zeros: values/decimal-value.ts); a JSON number is accepted on input.
  decimal: {
    kind: 'attribute',
    properties: {
      value: { column: 'decimal', schema: { type: 'string', title: 'Decimal value', pattern: '^-?\\d+(\\.\\d+)?$' } },
    },
    mainProperty: 'value',
  },
  email: {
    kind: 'attribute',
    properties: { value: { column: 'text', schema: { type: 'string', format: 'email' } } },
    mainProperty: 'value',
  },
  // Drupal's uri field (farmOS 3.2's term `external_uri`): a string that must be an absolute URI,
  // a scheme and what follows it (farm_field's Uri constraint, field-rules.ts).
  uri: {
    kind: 'attribute',
    properties: { value: { column: 'text', schema: { type: 'string', format: 'uri' } } },
    mainProperty: 'value',
  },
  integer: {
    kind: 'attribute',
    properties: { value: { column: 'integer', schema: { type: 'integer' } } },
    mainProperty: 'value',
  },
  list_string: {
    kind: 'attribute',
    properties: { value: { column: 'text', schema: { type: 'string' } } },
    mainProperty: 'value',
  },
  string: {
    kind: 'attribute',
    properties: { value: { column: 'text', schema: { type: 'string' } } },
    mainProperty: 'value',
  },
  string_long: {
    kind: 'attribute',
    properties: { value: { column: 'text', schema: { type: 'string' } } },
    mainProperty: 'value',
  },
  password: {
    kind: 'attribute',
    properties: { value: { column: 'text', schema: { type: 'string' } } },
    mainProperty: 'value',
  },
  timestamp: {
    kind: 'attribute',
    properties: { value: { column: 'bigint', schema: { type: 'string', format: 'date-time' } } },
    mainProperty: 'value',
  },
  text_long: {
    kind: 'attribute',
    properties: {
      value: text('Text'),
      format: text('Text format'),
      processed: { column: 'text', schema: { type: 'string', title: 'Processed text' }, output: true },
    },
    mainProperty: 'value',
  },
  fraction: {
    kind: 'attribute',
    properties: {
      numerator: { column: 'bigint', schema: { type: 'integer', title: 'Numerator value' } },
      denominator: { column: 'bigint', schema: { type: 'integer', title: 'Denominator value' } },
      decimal: { column: 'text', schema: { type: 'string', title: 'Decimal value' }, output: true },
    },
  },
  geofield: {
    kind: 'attribute',
    properties: {
      value: text('Geometry'),
      geo_type: { ...text('Geometry Type'), derived: true },
      lat: num(),
      lon: num(),
      left: num(),
      top: num(),
      right: num(),
      bottom: num(),
      geohash: { ...text('Geohash'), derived: true },
      latlon: { ...text('LatLong Pair'), derived: true },
    },
    mainProperty: 'value',
  },
  id_tag: {
    kind: 'attribute',
    properties: { id: text('ID of the tag'), type: text('Type of the tag'), location: text('Location of the tag') },
    mainProperty: 'id',
  },
  inventory: {
    kind: 'attribute',
    properties: { measure: text('Measure'), value: text('Value'), units: text('Units') },
  },
  // A stored file's place: the stream URI and the URL it downloads from (Drupal's file_uri).
  file_uri: {
    kind: 'attribute',
    properties: {
      value: text('URI'),
      url: { column: 'text', schema: { type: 'string', title: 'Root-relative file URL' }, output: true },
    },
  },
  entity_reference: {
    kind: 'relationship',
    properties: { target_id: { column: 'integer', schema: { type: 'integer' } } },
  },
  entity_reference_revisions: {
    kind: 'relationship',
    properties: {
      target_id: { column: 'integer', schema: { type: 'integer' } },
      target_revision_id: { column: 'integer', schema: { type: 'integer', title: 'Revision ID' } },
    },
  },
  file: {
    kind: 'relationship',
    properties: {
      target_id: { column: 'integer', schema: { type: 'integer', title: 'File ID' } },
      display: {
        column: 'boolean',
        schema: {
          type: 'boolean',
          title: 'Display',
          description: 'Flag to control whether this file should be displayed when viewing content',
        },
      },
      description: { column: 'text', schema: { type: 'string', title: 'Description' } },
    },
  },
  image: {
    kind: 'relationship',
    properties: {
      target_id: { column: 'integer', schema: { type: 'integer', title: 'File ID' } },
      alt: {
        column: 'text',
        schema: {
          type: 'string',
          title: 'Alternative text',
          description: "Alternative image text, for the image's 'alt' attribute.",
        },
      },
      title: {
        column: 'text',
        schema: { type: 'string', title: 'Title', description: "Image title text, for the image's 'title' attribute." },
      },
      width: {
        column: 'integer',
        schema: { type: 'integer', title: 'Width', description: 'The width of the image in pixels.' },
      },
      height: {
        column: 'integer',
        schema: { type: 'integer', title: 'Height', description: 'The height of the image in pixels.' },
      },
    },
  },
};

/** The stored properties of a field type: everything but the output-only ones. */
export function storedProperties(type: FieldType): string[] {
  return Object.entries(FIELD_TYPE_SPECS[type].properties)
    .filter(([, spec]) => !spec.output)
    .map(([name]) => name);
}
