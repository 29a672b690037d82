/**
 * The data model as the running server sees it: the generated model narrowed to core plus the
 * switched-on modules, with lookups by resource type, path and public field name (aliases
 * included). Built once at start.
 */
import type { BundleDescriptor, DataModel, EntityTypeDescriptor, FieldDescriptor } from './descriptor.ts';
import { ConfigError } from '../config.ts';
import { compileShapes, type ShapedType, type ShapeName } from './shapes.ts';

export interface ResourceType {
  /** `<entity_type>--<bundle>` */
  type: string;
  entityType: EntityTypeDescriptor;
  bundle: BundleDescriptor;
  /** Public name or alias → field. */
  fieldsByName: Map<string, FieldDescriptor>;
  attributes: FieldDescriptor[];
  relationships: FieldDescriptor[];
  /** The bundle as each API shape names and shows it (model/shapes.ts), compiled once here. */
  shapes: Record<ShapeName, ShapedType>;
}

export class ModelRegistry {
  readonly resourceTypes: Map<string, ResourceType> = new Map();
  readonly modules: string[];

  readonly model: DataModel;

  constructor(generated: DataModel, enabledModules: readonly string[]) {
    // Narrowing targets below edits descriptors; keep the generated model itself untouched.
    const model = structuredClone(generated);
    this.model = model;
    const known = new Set(model.modules.map((m) => m.module));
    for (const m of enabledModules) {
      if (!known.has(m))
        throw new ConfigError(
          `TILTH_MODULES names "${m}", which is not a module. Modules: ${[...known].join(', ') || 'none'}.`,
        );
    }
    this.modules = [...enabledModules];
    const enabled = new Set(enabledModules);
    for (const bundle of model.bundles) {
      if (bundle.module && !enabled.has(bundle.module)) continue;
      const fieldsByName = new Map<string, FieldDescriptor>();
      for (const f of bundle.fields) fieldsByName.set(f.name, f);
      for (const f of bundle.fields) for (const a of f.aliases) if (!fieldsByName.has(a)) fieldsByName.set(a, f);
      const visible = bundle.fields.filter((f) => !f.internal);
      this.resourceTypes.set(bundle.type, {
        type: bundle.type,
        entityType: model.entityTypes[bundle.entityType]!,
        bundle,
        fieldsByName,
        attributes: visible.filter((f) => f.kind === 'attribute'),
        relationships: visible.filter((f) => f.kind === 'relationship'),
        shapes: compileShapes(bundle.fields),
      });
    }
    // A reference may only name bundles that are switched on.
    for (const rt of this.resourceTypes.values()) {
      for (const f of rt.bundle.fields) {
        if (f.target?.bundles)
          f.target.bundles = f.target.bundles.filter((b) =>
            this.resourceTypes.has(this.typeName(f.target!.entityType, b)),
          );
      }
    }
  }

  typeName(entityType: string, bundle: string): string {
    return `${entityType}--${bundle}`;
  }

  get(type: string): ResourceType | undefined {
    return this.resourceTypes.get(type);
  }

  /** Every enabled bundle of an entity type. */
  bundlesOf(entityType: string): ResourceType[] {
    return [...this.resourceTypes.values()].filter((rt) => rt.entityType.entityType === entityType);
  }

  /** The resource types a reference field may point at. */
  targetsOf(field: FieldDescriptor): ResourceType[] {
    if (!field.target) return [];
    const all = this.bundlesOf(field.target.entityType);
    return field.target.bundles ? all.filter((rt) => field.target!.bundles!.includes(rt.bundle.bundle)) : all;
  }
}
