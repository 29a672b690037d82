/**
 * Maps the model onto tables: one table per entity type holding every single-valued field of
 * every bundle, and one side table per multi-valued field. Indexes are chosen for the queries
 * the runtime makes: a bundle's collection sorted or filtered by any scalar field (bundle, col,
 * id), reverse lookups of references, and the rows of a multi-valued field by owner or by value.
 */
import { createHash } from 'node:crypto';
import { FIELD_TYPE_SPECS, storedProperties } from '../runtime/model/field-types.ts';
import type {
  ColumnSpec,
  DataModel,
  FieldDescriptor,
  IndexSpec,
  MoveFieldOp,
  RewriteValuesOp,
  TableSpec,
} from '../runtime/model/descriptor.ts';

/** Field types whose single value is worth an index for filtering and sorting. */
const INDEXED_TYPES = new Set(['boolean', 'decimal', 'email', 'integer', 'list_string', 'string', 'timestamp']);

/** PostgreSQL truncates identifiers at 63 bytes; keep names unique and short. */
export function indexName(table: string, columns: string[], { unique = false }: { unique?: boolean } = {}): string {
  const name = `${table}_${columns.join('_')}_${unique ? 'uniq' : 'idx'}`;
  if (name.length <= 60) return name;
  const hash = createHash('sha1').update(name).digest('hex').slice(0, 8);
  return `${name.slice(0, 50)}_${hash}`;
}

/** Fill in `storage` on every field of every bundle. */
export function assignStorage(model: DataModel): void {
  for (const bundle of model.bundles) {
    const table = model.entityTypes[bundle.entityType]!.table;
    for (const field of bundle.fields) field.storage = storageFor(table, field);
  }
}

function storageFor(table: string, field: FieldDescriptor): FieldDescriptor['storage'] {
  if (field.computed) return { kind: 'none' };
  const props = storedProperties(field.type);
  if (field.multiple) {
    return { kind: 'table', table: `${table}__${field.name}`, columns: Object.fromEntries(props.map((p) => [p, p])) };
  }
  if (props.length === 1) return { kind: 'columns', columns: { [props[0]!]: field.name } };
  return { kind: 'columns', columns: Object.fromEntries(props.map((p) => [p, `${field.name}__${p}`])) };
}

/** A decimal column's precision and scale when its field names them (absent: the storage every migration so far made, (30, 10)). */
function numericSize(field: FieldDescriptor, column: string): Pick<ColumnSpec, 'precision' | 'scale'> {
  return column === 'decimal' && field.precision !== undefined
    ? { precision: field.precision, scale: field.scale! }
    : {};
}

/** The tables the model needs, in a stable order. */
export function tablesFor(model: DataModel): TableSpec[] {
  const tables: TableSpec[] = [];
  for (const type of Object.values(model.entityTypes).sort((a, b) => a.entityType.localeCompare(b.entityType))) {
    const table = type.table;
    const columns: ColumnSpec[] = [
      { name: 'id', type: 'increments', nullable: false },
      { name: 'uuid', type: 'uuid', nullable: false },
      { name: 'bundle', type: 'text', nullable: false },
    ];
    if (type.revisionId) columns.push({ name: 'revision_id', type: 'integer', nullable: true });
    const indexes: IndexSpec[] = [
      { name: indexName(table, ['uuid'], { unique: true }), columns: ['uuid'], unique: true },
      { name: indexName(table, ['bundle', 'id']), columns: ['bundle', 'id'], unique: false },
    ];
    const sideTables: TableSpec[] = [];
    const seen = new Set<string>();
    for (const bundle of model.bundles.filter((b) => b.entityType === type.entityType)) {
      for (const field of bundle.fields) {
        if (seen.has(field.name) || field.storage.kind === 'none') continue;
        seen.add(field.name);
        const spec = FIELD_TYPE_SPECS[field.type];
        if (field.storage.kind === 'columns') {
          for (const [prop, column] of Object.entries(field.storage.columns)) {
            columns.push({
              name: column,
              type: spec.properties[prop]!.column,
              nullable: true,
              ...numericSize(field, spec.properties[prop]!.column),
            });
          }
          if (spec.kind === 'relationship') {
            const col = field.storage.columns.target_id!;
            indexes.push({ name: indexName(table, [col]), columns: [col], unique: false });
          } else if (field.type === 'geofield') {
            // A shape's bounding box (the geofield's derived left, right, bottom and top), for the
            // map's "what is in this view" (farm/map-features.ts): the index holds all four, so a
            // view's lookup ranges over `left` and tests the other three without reading rows.
            const box = ['left', 'right', 'bottom', 'top'].map((p) =>
              field.storage.kind === 'columns' ? field.storage.columns[p]! : p,
            );
            indexes.push({ name: indexName(table, [field.name, 'bbox']), columns: box, unique: false });
          } else if (INDEXED_TYPES.has(field.type)) {
            // Not text_long: notes.value filters are substring searches, which no index helps.
            indexes.push({
              name: indexName(table, ['bundle', field.name, 'id']),
              columns: ['bundle', field.name, 'id'],
              unique: false,
            });
            // The label (name) is what scripts look records up by, and `=`/`IN` on a string ignore
            // case as farmOS's do (jsonapi/collection/compile.ts): an index of it without case too.
            // Only the label: a site's own string fields would each need a migration of the site.
            if (field.type === 'string' && field.name === type.labelField) {
              indexes.push({
                name: indexName(table, ['bundle', `${field.name}_ci`, 'id']),
                columns: ['bundle', field.name, 'id'],
                unique: false,
                caseless: field.name,
              });
            }
          }
        } else if (field.storage.kind === 'table') {
          const side = field.storage.table;
          const sideColumns: ColumnSpec[] = [
            {
              name: 'entity_id',
              type: 'integer',
              nullable: false,
              references: { table, column: 'id', onDelete: 'CASCADE' },
            },
            { name: 'delta', type: 'integer', nullable: false },
          ];
          for (const [prop, column] of Object.entries(field.storage.columns)) {
            const colSpec: ColumnSpec = {
              name: column,
              type: spec.properties[prop]!.column,
              nullable: prop !== 'target_id',
              ...numericSize(field, spec.properties[prop]!.column),
            };
            if (prop === 'target_id' && field.target) {
              colSpec.references = {
                table: model.entityTypes[field.target.entityType]!.table,
                column: 'id',
                onDelete: 'CASCADE',
              };
            }
            sideColumns.push(colSpec);
          }
          const lookup = field.storage.columns.target_id ?? field.storage.columns.value ?? field.storage.columns.id;
          sideTables.push({
            name: side,
            columns: sideColumns,
            primaryKey: ['entity_id', 'delta'],
            indexes: lookup
              ? [{ name: indexName(side, [lookup, 'entity_id']), columns: [lookup, 'entity_id'], unique: false }]
              : [],
          });
        }
      }
    }
    tables.push({ name: table, columns, indexes }, ...sideTables.sort((a, b) => a.name.localeCompare(b.name)));
  }
  return tables;
}

/**
 * The data migrations the model declares: one rewrite per bundle, field and former value
 * (`renamed_values`, `removed_values`). diffSchema emits those no migration has made yet.
 */
export function valueRewritesFor(model: DataModel): Array<RewriteValuesOp | MoveFieldOp> {
  const ops: Array<RewriteValuesOp | MoveFieldOp> = [];
  for (const bundle of model.bundles) {
    const table = model.entityTypes[bundle.entityType]!.table;
    for (const field of bundle.fields) {
      if (field.renamedFrom && field.storage.kind !== 'none') {
        // The former field had this field's type and cardinality (diffSchema checks its storage exists with those columns).
        const from = storageFor(table, {
          ...field,
          name: field.renamedFrom,
          type: field.convertedFrom ?? field.type,
        }) as MoveFieldOp['from']['storage'];
        const convert = field.convertedFrom
          ? {
              convert: {
                from: field.convertedFrom,
                to: field.type,
                ...(field.precision !== undefined ? { precision: field.precision, scale: field.scale } : {}),
              },
            }
          : {};
        ops.push({
          op: 'moveField',
          entityType: bundle.entityType,
          table,
          bundle: bundle.bundle,
          from: { field: field.renamedFrom, storage: from },
          to: { field: field.name, storage: field.storage },
          ...convert,
        });
      }
      if (!field.formerValues || field.storage.kind === 'none') continue;
      const storage: RewriteValuesOp['storage'] =
        field.storage.kind === 'table'
          ? { kind: 'table', table: field.storage.table, column: field.storage.columns.value! }
          : { kind: 'column', column: field.storage.columns.value! };
      for (const [from, to] of Object.entries(field.formerValues))
        ops.push({
          op: 'rewriteValues',
          entityType: bundle.entityType,
          table,
          bundle: bundle.bundle,
          field: field.name,
          storage,
          from,
          to,
        });
    }
  }
  return ops;
}
