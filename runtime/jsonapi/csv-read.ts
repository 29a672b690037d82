/**
 * Records from a CSV file in the shape `_format=csv` exports (jsonapi/export.ts), read by
 * `tilth import csv` (imports/) and the web interface's spreadsheet import (web/sheets.ts): a header row, then one row per record
 * with its UUID (`id`), its `type`, its attributes as text, and each relationship as a names
 * column and a UUIDs column (`asset`, `asset.id`). Each row becomes a JSON:API resource document,
 * so an import is checked exactly as the API checks what clients send. Related records are found
 * by UUID, or by name when there is no UUID or one this farm does not have (an export from another
 * farm); a name that fits no record or several is the row's mistake, named by its column.
 *
 * `readCsv` names every row's mistakes it finds (by row, the file's line and the column) and reads
 * on; `recordsFromCsv` stops at the first, as `tilth import csv` reports it.
 */
import { parse } from 'csv-parse/sync';
import type { Knex } from 'knex';
import type { ModelRegistry, ResourceType } from '../model/registry.ts';
import type { FieldDescriptor } from '../model/descriptor.ts';

export class CsvFileError extends Error {}

export interface CsvRecord {
  /** The row number in the file (the header is row 1). */
  row: number;
  /** The file's line the row starts on (a cell may hold line breaks). */
  line: number;
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

/** A row's mistake, by its row, the file's line and the column ('' when the row as a whole). */
export interface CsvProblem {
  row: number;
  line: number;
  column: string;
  detail: string;
}

export interface CsvReading {
  /** The columns, as the header names them. */
  header: string[];
  /** The rows read into documents (those with a mistake of their own are left out). */
  records: CsvRecord[];
  problems: CsvProblem[];
}

/**
 * Every row of a CSV file as a JSON:API document of `entityType`. `bundle`: the type a row takes
 * when it has no `type` (a file made from one bundle's template); a row of another type is then
 * a mistake. A file that is not CSV, or whose header names no type when there is no `bundle`,
 * throws a CsvFileError.
 */
export async function readCsv(
  text: string,
  registry: ModelRegistry,
  db: Knex,
  { entityType = 'log', bundle }: { entityType?: string; bundle?: ResourceType } = {},
): Promise<CsvReading> {
  let parsed: Array<{ record: string[]; info: { lines: number } }>;
  try {
    parsed = parse(text, {
      bom: true,
      relax_column_count: false,
      skip_empty_lines: true,
      info: true,
    }) as unknown as Array<{
      record: string[];
      info: { lines: number };
    }>;
  } catch (error) {
    throw new CsvFileError(`it is not valid CSV: ${(error as Error).message}`);
  }
  const [first, ...body] = parsed;
  const header = first?.record;
  if (!header || (!header.includes('type') && !bundle))
    throw new CsvFileError('its first row must name the columns, among them "type" (as an export writes them).');
  const col = new Map(header.map((h, i) => [h, i]));
  const records: CsvRecord[] = [];
  const problems: CsvProblem[] = [];
  for (const [i, { record: cells, info }] of body.entries()) {
    const row = i + 2;
    // csv-parse counts the lines read when the record ends: its first line is that less its own breaks.
    const line = info.lines - cells.reduce((n, cell) => n + (cell.match(/\n/g)?.length ?? 0), 0);
    const problem = (column: string, detail: string) => problems.push({ row, line, column, detail });
    const type = (col.has('type') ? cells[col.get('type')!] : '') || bundle?.type || '';
    const rt = registry.get(type);
    if (!rt || rt.entityType.entityType !== entityType || (bundle && rt !== bundle)) {
      problem(
        'type',
        bundle
          ? `"${type}" is not ${bundle.type}, the type this import makes.`
          : `"${type}" is not a ${entityType} type served here (e.g. ${registry.bundlesOf(entityType)[0]?.type}).`,
      );
      continue;
    }
    const attributes: Record<string, unknown> = {};
    const relationships: Record<string, unknown> = {};
    const before = problems.length;
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
      if (!ids.length && et.entityType === 'quantity') {
        problem(
          field.name,
          `${field.name} "${names.join(', ')}" is the quantities' text; give their UUIDs in ${field.name}.id.`,
        );
        continue;
      }
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
        if (!names.length) {
          problem(
            `${field.name}.id`,
            `${field.name}.id "${unknown}" names no record here (an export from another farm?); give the records' names in a ${field.name} column instead.`,
          );
          continue;
        }
        ids = [];
      }
      if (!ids.length)
        found = await db(et.table).whereIn(et.labelField, names).select('uuid', 'bundle', `${et.labelField} as label`);
      if (!ids.length) {
        const wrong = names
          .map((n) => ({ n, matches: found.filter((r: { label: string }) => r.label === n).length }))
          .find(({ matches }) => matches !== 1);
        if (wrong) {
          problem(
            field.name,
            `${field.name} "${wrong.n}" ${wrong.matches ? `names ${wrong.matches} records; give their UUIDs in ${field.name}.id` : 'names no record'}.`,
          );
          continue;
        }
      }
      const byUuid = new Map(found.map((r: { uuid: string; bundle: string }) => [r.uuid, r.bundle]));
      const data = (ids.length ? ids.map((id) => id.toLowerCase()) : found.map((r: { uuid: string }) => r.uuid)).map(
        (id) => {
          const b = byUuid.get(id);
          return { type: `${et.entityType}--${b ?? targets[0]!.bundle.bundle}`, id };
        },
      );
      relationships[field.name] = { data: field.multiple ? data : (data[0] ?? null) };
    }
    if (problems.length > before) continue;
    const id = col.has('id') ? cells[col.get('id')!] : undefined;
    records.push({
      row,
      line,
      rt,
      document: { data: { type: rt.type, ...(id ? { id } : {}), attributes, relationships } },
    });
  }
  return { header, records, problems };
}

/** `readCsv` for `tilth import csv`: the first mistake stops it, as a CsvFileError naming the row. */
export async function recordsFromCsv(
  text: string,
  registry: ModelRegistry,
  db: Knex,
  entityType = 'log',
): Promise<CsvRecord[]> {
  const { records, problems } = await readCsv(text, registry, db, { entityType });
  const [first] = problems;
  if (first) throw new CsvFileError(`row ${first.row}: ${first.detail}`);
  return records;
}
