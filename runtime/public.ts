/**
 * The runtime's public surface: the only module generated/ may import. Keep it to types and the
 * few functions generated code calls, so that the two layers stay apart (a test checks this).
 */
export type {
  AllowedValue,
  BundleDescriptor,
  ColumnSpec,
  DataModel,
  EntityTypeDescriptor,
  FieldDescriptor,
  FieldStorage,
  IndexSpec,
  ModuleDescriptor,
  ReferenceTarget,
  SchemaOp,
  TableSpec,
} from './model/descriptor.ts';
export type { FieldType } from './model/field-types.ts';
export type { HandlerName, RouteEntry } from './model/routes.ts';
export type { GeneratedMigration } from './storage/migrations.ts';
export { applySchemaOps } from './storage/schema-ops.ts';
