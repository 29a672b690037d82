/**
 * How each farmOS major version serves a farm's records, and how they read as this farm's: one
 * table (SOURCE_SHAPES), chosen by the source's `meta.farm.version` at `/api`. The source's
 * documents are read into this farm's shape (the farmOS 2.x wire the importer writes and
 * verification compares in) as they arrive (source.ts), so storing and verifying a 4.x farm map
 * its values the same way. Each rule keeps a document already in this farm's shape as it is (a
 * Tilth source, which says "2.x" and serves to-many material types, or a 4.x-shaped Tilth).
 *
 * Where a name or a value comes from: farmOS's API changes page ("3.x vs 2.x"), its 4.0 release
 * post (2026-03-20) and the pull requests named with each rule.
 */
import type { ResourceType } from '../model/registry.ts';
import type { SourceResource } from './source.ts';

/** One way a shape's records differ from this farm's, for the records of `type` (an entity type, or `entity--bundle`). */
export type ShapeRule =
  /** An attribute under another name. */
  | { kind: 'rename'; type: string; from: string; to: string; source: string }
  /**
   * Archiving as a boolean (`flag`) with the time apart (`time`), where this farm has a status
   * (active, archived) and the time under the flag's name.
   */
  | { kind: 'archived-flag'; type: string; flag: string; time: string; source: string }
  /** A relationship the shape serves to-one, which is to-many here. */
  | { kind: 'to-many'; type: string; field: string; source: string }
  /**
   * A value the shape has that this farm's field may not allow yet: a record carrying it is not
   * stored (and is read again by the next run) unless the field allows it here.
   */
  | { kind: 'value'; type: string; field: string; value: string; source: string };

export interface SourceShape {
  /** The major version, as `meta.farm.version` begins ("3.2.0", "4.x", "4.0.0-beta1"). */
  major: number;
  name: string;
  rules: readonly ShapeRule[];
}

export const SOURCE_SHAPES: readonly SourceShape[] = [
  {
    major: 2,
    name: 'farmOS 2.x',
    rules: [
      {
        kind: 'to-many',
        type: 'quantity--material',
        field: 'material_type',
        source: 'to-many since farmOS 3.0 (API changes, "3.x vs 2.x")',
      },
    ],
  },
  { major: 3, name: 'farmOS 3.x', rules: [] },
  {
    major: 4,
    name: 'farmOS 4.x',
    rules: [
      {
        kind: 'archived-flag',
        type: 'asset',
        flag: 'archived',
        time: 'last_archived',
        source: 'asset status removed, farmOS 4.0 (PR #986)',
      },
      { kind: 'rename', type: 'asset--animal', from: 'is_sterile', to: 'is_castrated', source: 'farmOS 4.0 (PR #960)' },
      { kind: 'value', type: 'log', field: 'status', value: 'abandoned', source: 'farmOS 4.0 (PR #945)' },
    ],
  },
];

/** The versions read, for messages: "farmOS 2.x, 3.x and 4.x". */
export const READABLE_VERSIONS = `farmOS ${SOURCE_SHAPES.map((s) => `${s.major}.x`)
  .join(', ')
  .replace(/, ([^,]*)$/, ' and $1')}`;

/** The shape of a source whose `/api` says this `meta.farm.version`; null for one not in the table. */
export function shapeOf(version: unknown): SourceShape | null {
  const major = typeof version === 'string' ? /^\s*(\d+)(?:[.\-+]|$)/.exec(version)?.[1] : undefined;
  return SOURCE_SHAPES.find((s) => String(s.major) === major) ?? null;
}

function applies(rule: ShapeRule, type: string): boolean {
  return rule.type === type || type.startsWith(`${rule.type}--`);
}

/**
 * A source document in this farm's shape: a new object (the source's is left as it was); members
 * a rule does not name, and documents already in this farm's shape, as they were. A sparse
 * document (only some members) is read as far as it goes.
 */
export function readResource(shape: SourceShape, resource: SourceResource): SourceResource {
  const rules = shape.rules.filter((r) => applies(r, resource.type));
  if (!rules.length) return resource;
  const attributes = resource.attributes ? { ...resource.attributes } : undefined;
  const relationships = resource.relationships ? { ...resource.relationships } : undefined;
  for (const rule of rules) {
    if (rule.kind === 'rename' && attributes && rule.from in attributes && !(rule.to in attributes)) {
      attributes[rule.to] = attributes[rule.from];
      delete attributes[rule.from];
    } else if (rule.kind === 'archived-flag' && attributes && typeof attributes[rule.flag] === 'boolean') {
      // farmOS 4.x: `archived` true or false, `last_archived` the time it last was (kept when it is
      // active again); here `status` says which, and `archived` holds the time.
      const archived = attributes[rule.flag] as boolean;
      attributes.status = archived ? 'archived' : 'active';
      attributes[rule.flag] = attributes[rule.time] ?? null;
      delete attributes[rule.time];
    } else if (rule.kind === 'to-many' && relationships) {
      const member = relationships[rule.field];
      if (member && 'data' in member && !Array.isArray(member.data))
        relationships[rule.field] = { ...member, data: member.data === null ? [] : [member.data] };
    }
  }
  return { ...resource, ...(attributes ? { attributes } : {}), ...(relationships ? { relationships } : {}) };
}

/**
 * Why a source record (read into this farm's shape) cannot be stored here as it is: a value of
 * its shape this farm's field does not allow (yet); null when nothing stands in the way.
 */
export function unstorable(shape: SourceShape, rt: ResourceType, resource: SourceResource): string | null {
  for (const rule of shape.rules) {
    if (rule.kind !== 'value' || !applies(rule, rt.type)) continue;
    if (resource.attributes?.[rule.field] !== rule.value) continue;
    const field = rt.fieldsByName.get(rule.field);
    if (field?.allowedValues && !field.allowedValues.some((a) => a.value === rule.value))
      return `its ${rule.field} is ${rule.value} (${shape.name}: ${rule.source}), which this farm's ${rt.type} cannot hold (${field.allowedValues.map((a) => a.value).join(', ')}); not stored, and read again by the next run.`;
  }
  return null;
}
