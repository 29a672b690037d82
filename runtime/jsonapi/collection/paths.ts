/**
 * Resolves the dotted paths of filters and sorts against the model (farmos-behaviour.md §4.4):
 * public field names and aliases, `id` for the UUID, properties of compound fields
 * (`notes.value`), and relationships followed to the fields of their targets
 * (`asset.name`, `quantity.units.name`, `asset.id`, `asset.meta.drupal_internal__target_id`),
 * including an asset's computed `location` and `group`, read from their stored intervals.
 * Access is checked on the way: a path through records the caller may not read is refused.
 */
import type { FieldDescriptor, EntityTypeDescriptor } from '../../model/descriptor.ts';
import type { ModelRegistry, ResourceType } from '../../model/registry.ts';
import type { Principal } from '../../access/principal.ts';
import { FIELD_TYPE_SPECS } from '../../model/field-types.ts';
import { fieldFilterable, mayOnType } from '../../access/policy.ts';
import { badParameter, forbidden } from '../../errors.ts';
import { GROUPS_TABLE, PLACEMENTS_TABLE } from '../../farm/placements.ts';

/** Where a path ends: one value to compare. */
export type Terminal =
  | { kind: 'uuid' }
  | { kind: 'internalId' }
  | { kind: 'bundle' }
  /** A stored property of a field: its column on the entity table, or in its side table. */
  | { kind: 'property'; field: FieldDescriptor; property: string; column: string; side: string | null };

/** A step through a relationship, to the target entity type. */
export interface Hop {
  field: FieldDescriptor;
  /** Column holding the target id: on the entity table (single) or `target_id` in a side table. */
  column: string;
  side: string | null;
  target: EntityTypeDescriptor;
  targetTypes: ResourceType[];
  /** An interval (an asset's computed location or groups): it holds only at the query's time. */
  timed?: boolean;
}

export interface ResolvedPath {
  hops: Hop[];
  /** null when the path ends at a relationship itself (only IS NULL / IS NOT NULL allowed). */
  terminal: Terminal | null;
  /** The path as given, for messages. */
  text: string;
}

/** The computed relationships stored as time intervals (farm/placements.ts), by `computed` kind. */
const INTERVAL_TABLES: Readonly<Record<string, string>> = { location: PLACEMENTS_TABLE, group: GROUPS_TABLE };

function storageOf(field: FieldDescriptor, property: string): { column: string; side: string | null } | null {
  if (field.storage.kind === 'columns') {
    const column = field.storage.columns[property];
    return column ? { column, side: null } : null;
  }
  if (field.storage.kind === 'table') {
    const column = field.storage.columns[property];
    return column ? { column, side: field.storage.table } : null;
  }
  return null;
}

export function resolvePath(
  registry: ModelRegistry,
  rt: ResourceType,
  path: string,
  principal: Principal,
  parameter: 'filter' | 'sort',
): ResolvedPath {
  const segments = path.split('.');
  const hops: Hop[] = [];
  let types: ResourceType[] = [rt];
  const verb = parameter === 'filter' ? 'filter' : 'sort';
  for (let i = 0; i < segments.length; i++) {
    const segment = segments[i]!;
    const here = segments.slice(0, i + 1).join('.');
    const et = types[0]!.entityType;
    if (segment === 'id') {
      if (i !== segments.length - 1)
        throw badParameter(
          parameter,
          `Invalid ${verb} path "${path}": "id" is the resource's UUID and has no properties.`,
        );
      return { hops, terminal: { kind: 'uuid' }, text: path };
    }
    if (segment === et.internalId) {
      if (i !== segments.length - 1)
        throw badParameter(parameter, `Invalid ${verb} path "${path}": "${segment}" has no properties.`);
      return { hops, terminal: { kind: 'internalId' }, text: path };
    }
    const candidates = types.map((t) => t.fieldsByName.get(segment)).filter((f): f is FieldDescriptor => Boolean(f));
    const field = candidates[0];
    if (!field) {
      if (segment === et.bundleKey && i === segments.length - 1)
        return { hops, terminal: { kind: 'bundle' }, text: path };
      const names = [...new Set(types.flatMap((t) => [...t.fieldsByName.keys()]))].sort();
      throw badParameter(
        parameter,
        `Invalid ${verb} path "${path}": "${segment}" is not a field of ${types.length === 1 ? types[0]!.type : `any of ${types.map((t) => t.type).join(', ')}`}. Fields: id, ${names.join(', ')}.`,
      );
    }
    if (!fieldFilterable(field, principal, et))
      throw forbidden(`The current user is not authorized to ${verb} by "${here}".`);
    // An asset's location and groups are computed, but stored as intervals (farm/placements.ts)
    // that read as a side table.
    const intervals = field.kind === 'relationship' && field.computed ? INTERVAL_TABLES[field.computed] : undefined;
    const placed = intervals !== undefined;
    if (field.computed && !placed) {
      throw badParameter(
        parameter,
        `Invalid ${verb} path "${path}": "${segment}" is computed from other records and cannot be used to ${verb} (yet).`,
      );
    }
    if (field.kind === 'relationship') {
      const targetEt = registry.model.entityTypes[field.target!.entityType]!;
      if (!mayOnType(principal, targetEt, 'view'))
        throw forbidden(
          `The current user is not authorized to ${verb} by "${here}": it may not view ${targetEt.labelPlural}.`,
        );
      const store = intervals ? { column: 'target_id', side: intervals } : storageOf(field, 'target_id')!;
      hops.push({
        field,
        column: store.column,
        side: store.side,
        target: targetEt,
        targetTypes: registry.targetsOf(field),
        ...(placed ? { timed: true } : {}),
      });
      const next = segments[i + 1];
      if (next === undefined) return { hops, terminal: null, text: path };
      if (next === 'meta') {
        const meta = segments.slice(i + 2).join('.');
        if (meta !== 'drupal_internal__target_id')
          throw badParameter(
            parameter,
            `Invalid ${verb} path "${path}": after "meta" only "drupal_internal__target_id" may follow.`,
          );
        return { hops, terminal: { kind: 'internalId' }, text: path };
      }
      types = registry.targetsOf(field);
      if (!types.length)
        throw badParameter(
          parameter,
          `Invalid ${verb} path "${path}": ${segment} cannot point at any resource type that is switched on.`,
        );
      continue;
    }
    // An attribute: single-property fields elide the property; compound ones name it, or mean
    // their main property when they do not (`notes` is `notes.value`), as Drupal resolves them.
    const spec = FIELD_TYPE_SPECS[field.type];
    const props = Object.entries(spec.properties)
      .filter(([, p]) => !p.output)
      .map(([name]) => name);
    const rest = segments.slice(i + 1);
    let property: string;
    if (spec.mainProperty && props.length === 1) {
      if (rest.length)
        throw badParameter(
          parameter,
          `Invalid ${verb} path "${path}": "${segment}" has a single value; leave out ".${rest.join('.')}".`,
        );
      property = spec.mainProperty;
    } else if (spec.mainProperty && rest.length === 0) {
      property = spec.mainProperty;
    } else {
      if (rest.length !== 1 || !props.includes(rest[0]!)) {
        throw badParameter(
          parameter,
          `Invalid ${verb} path "${path}": name one property of "${segment}": ${props.map((p) => `${segment}.${p}`).join(', ')}.`,
        );
      }
      property = rest[0]!;
    }
    const store = storageOf(field, property);
    if (!store)
      throw badParameter(
        parameter,
        `Invalid ${verb} path "${path}": "${segment}" is not stored and cannot be used to ${verb}.`,
      );
    return { hops, terminal: { kind: 'property', field, property, ...store }, text: path };
  }
  throw badParameter(parameter, `Invalid ${verb} path "${path}".`);
}
