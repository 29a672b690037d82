/**
 * The web interface's description of a bundle, which the generator emits into generated/ui/ (and a
 * site folder's into <site>/generated/ui/) and runtime/web/ renders for every bundle alike: the
 * list's columns and filters, and each field's place, section and widget on the form and the
 * record page. Defaults come from the field's type (WIDGETS, defaultWidget); a definition's `ui:`
 * hints (definitions/README.md) change them. Pure data: no bundle is named in code.
 */
import type { FieldDescriptor } from './descriptor.ts';
import type { FieldType } from './field-types.ts';
import type { FieldUi } from '../../generated/meta-schema.ts';

export type Widget = NonNullable<FieldUi['widget']>;

/** The widgets that suit each field type, the default first (defaultWidget refines it). Types without any are never edited on a form. */
export const WIDGETS: Readonly<Record<FieldType, readonly Widget[]>> = {
  string: ['text', 'textarea'],
  string_long: ['textarea', 'text'],
  text_long: ['textarea', 'text'],
  email: ['email', 'text'],
  uri: ['text'],
  integer: ['number'],
  decimal: ['decimal', 'text'],
  fraction: ['fraction'],
  list_string: ['select', 'radios', 'checkboxes'],
  boolean: ['checkbox', 'radios'],
  timestamp: ['datetime', 'date'],
  entity_reference: ['reference', 'select'],
  entity_reference_revisions: ['reference'],
  file: ['file'],
  image: ['file'],
  id_tag: ['id_tag'],
  geofield: ['wkt', 'textarea'],
  password: ['password'],
  inventory: [],
  file_uri: [],
};

/** Widgets that show a placeholder in an empty input. */
export const PLACEHOLDER_WIDGETS: ReadonlySet<Widget> = new Set([
  'text',
  'textarea',
  'email',
  'number',
  'decimal',
  'fraction',
  'reference',
  'wkt',
]);

/** A list of allowed values this short or shorter is offered as radios, longer as a select. */
export const RADIOS_UP_TO = 3;

/** The widget a field gets without a hint. */
export function defaultWidget(field: Pick<FieldDescriptor, 'type' | 'multiple' | 'allowedValues'>): Widget | null {
  const suited = WIDGETS[field.type];
  if (!suited.length) return null;
  if (field.type === 'list_string') {
    if (field.multiple) return 'checkboxes';
    return (field.allowedValues?.length ?? 0) <= RADIOS_UP_TO ? 'radios' : 'select';
  }
  return suited[0]!;
}

/** How a list filters by a field: text containing, one of the allowed values, yes/no, a date range, or a record referred to. */
export type FilterKind = 'contains' | 'equals' | 'boolean' | 'range' | 'reference';

/** The filter kind of each field type that can be filtered by (others cannot be offered). */
export const FILTER_KINDS: Readonly<Partial<Record<FieldType, FilterKind>>> = {
  string: 'contains',
  string_long: 'contains',
  text_long: 'contains',
  email: 'contains',
  uri: 'contains',
  list_string: 'equals',
  integer: 'equals',
  decimal: 'equals',
  boolean: 'boolean',
  timestamp: 'range',
  entity_reference: 'reference',
  id_tag: 'contains',
};

/** A field as the interface shows it. */
export interface UiField {
  name: string;
  label: string;
  description?: string;
  /** main, sidebar, or a section of the bundle's own. */
  section: string;
  /** The form control; null for a field that is shown but never edited (computed, automatic, read-only). */
  widget: Widget | null;
  placeholder?: string;
  required: boolean;
  multiple: boolean;
}

export interface UiFilter {
  field: string;
  label: string;
  kind: FilterKind;
}

export interface BundleUi {
  /** JSON:API resource type, `<entity_type>--<bundle>`. */
  type: string;
  entityType: string;
  bundle: string;
  label: string;
  description?: string;
  list: {
    /** Field names, in order. */
    columns: string[];
    filters: UiFilter[];
    /** The default sort, as the API's `sort` parameter. */
    sort: string;
  };
  /** Every field shown on the record page, in order; those with a widget are on the form too. */
  fields: UiField[];
  /** The sections of the form and page in order (main first, sidebar last). */
  sections: string[];
}
