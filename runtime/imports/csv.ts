/**
 * Logs from a CSV file in the shape `_format=csv` exports: a header row, then one row per record
 * with its UUID (`id`), its `type`, its attributes as text, and each relationship as a names
 * column and a UUIDs column (`asset`, `asset.id`). Each row becomes a JSON:API resource document,
 * so an import is checked exactly as the API checks what clients send. Related records are found
 * by UUID, or by name when there is no UUID or one this farm does not have (an export from another
 * farm); a name that fits no record or several is the row's mistake, named by its column.
 */
import { parse } from 'csv-parse/sync';
import type { Knex } from 'knex';
import type { ModelRegistry, ResourceType } from '../model/registry.ts';
import type { FieldDescriptor } from '../model/descriptor.ts';

export class CsvFileError extends Error {}

export interface CsvRecord {
  /** The row number in the file (the header is row 1). */
  row: number;
  rt: ResourceType;
  document: { data: Record<string, unknown> };
}

/** A cell as the value the API takes for the field, or undefined for an empty cell. */
function attributeValue(field: FieldDescriptor, text: string): unknown {
  if (text === '') return undefined;
  const one = (t: string): unknown => {
    switch (field.type) {
      case 'boolean':
        return t === 'true' || t === '1' ? true : t === 'false' || t === '0' ? false : t;
      case 'integer':
      case 'decimal':
        return Number.isFinite(Number(t)) ? Number(t) : t;
      case 'text_long':
        return { value: t, format: 'default' };
      case 'fraction':
        return { decimal: t };
      default:
        return t;
    }
  };
  return field.multiple ? text.split(/,\s*/).map(one) : one(text);
}

export async function recordsFromCsv(
  text: string,
  registry: ModelRegistry,
  db: Knex,
  entityType = 'log',
): Promise<CsvRecord[]> {
  let rows: string[][];
  try {
    rows = parse(text, { bom: true, relax_column_count: false, skip_empty_lines: true }) as string[][];
  } catch (error) {
    throw new CsvFileError(`it is not valid CSV: ${(error as Error).message}`);
  }
  const [header, ...body] = rows;
  if (!header || !header.includes('type'))
    throw new CsvFileError('its first row must name the columns, among them "type" (as an export writes them).');
  const col = new Map(header.map((h, i) => [h, i]));
  const records: CsvRecord[] = [];
  for (const [i, cells] of body.entries()) {
    const row = i + 2;
    const type = cells[col.get('type')!] ?? '';
    const rt = registry.get(type);
    if (!rt || rt.entityType.entityType !== entityType)
      throw new CsvFileError(
        `row ${row}: "${type}" is not a ${entityType} type served here (e.g. ${registry.bundlesOf(entityType)[0]?.type}).`,
      );
    const attributes: Record<string, unknown> = {};
    const relationships: Record<string, unknown> = {};
    for (const field of rt.bundle.fields) {
      if (field.readOnly || field.internal || field.type === 'password') continue;
      if (field.kind === 'attribute') {
        const at = col.get(field.name);
        const value = at === undefined ? undefined : attributeValue(field, cells[at]!.replace(/^'(?=[=+\-@])/, ''));
        if (value !== undefined) attributes[field.name] = value;
        continue;
      }
      let ids = col.has(`${field.name}.id`) ? cells[col.get(`${field.name}.id`)!]!.split(/,\s*/).filter(Boolean) : [];
      const names = col.has(field.name) ? cells[col.get(field.name)!]!.split(/,\s*/).filter(Boolean) : [];
      if (!ids.length && !names.length) continue;
      const targets = registry.targetsOf(field);
      const et = targets[0]?.entityType;
      if (!et) continue;
      // The export writes quantities as text ("picked (Weight) 12.5 kg"), which names no record.
      if (!ids.length && et.entityType === 'quantity')
        throw new CsvFileError(
          `row ${row}: ${field.name} "${names.join(', ')}" is the quantities' text; give their UUIDs in ${field.name}.id.`,
        );
      let found = ids.length
        ? await db(et.table)
            .whereIn(
              'uuid',
              ids.map((id) => id.toLowerCase()),
            )
            .select('uuid', 'bundle')
        : [];
      // UUIDs this farm does not have: an export from another farm (its users, its assets). The
      // names beside them then say which of this farm's records are meant.
      const unknown = ids.find((id) => !found.some((r: { uuid: string }) => r.uuid === id.toLowerCase()));
      if (unknown !== undefined) {
        if (!names.length)
          throw new CsvFileError(
            `row ${row}: ${field.name}.id "${unknown}" names no record here (an export from another farm?); give the records' names in a ${field.name} column instead.`,
          );
        ids = [];
      }
      if (!ids.length)
        found = await db(et.table).whereIn(et.labelField, names).select('uuid', 'bundle', `${et.labelField} as label`);
      if (!ids.length) {
        for (const n of names) {
          const matches = found.filter((r: { label: string }) => r.label === n).length;
          if (matches !== 1)
            throw new CsvFileError(
              `row ${row}: ${field.name} "${n}" ${matches ? `names ${matches} records; give their UUIDs in ${field.name}.id` : 'names no record'}.`,
            );
        }
      }
      const byUuid = new Map(found.map((r: { uuid: string; bundle: string }) => [r.uuid, r.bundle]));
      const data = (ids.length ? ids.map((id) => id.toLowerCase()) : found.map((r: { uuid: string }) => r.uuid)).map(
        (id) => {
          const bundle = byUuid.get(id);
          return { type: `${et.entityType}--${bundle ?? targets[0]!.bundle.bundle}`, id };
        },
      );
      relationships[field.name] = { data: field.multiple ? data : (data[0] ?? null) };
    }
    const id = col.has('id') ? cells[col.get('id')!] : undefined;
    records.push({ row, rt, document: { data: { type, ...(id ? { id } : {}), attributes, relationships } } });
  }
  return records;
}
