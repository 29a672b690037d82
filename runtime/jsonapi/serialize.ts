/**
 * Builds JSON:API resource objects from records, as farmOS renders them (farmos-behaviour.md
 * §4.8): `drupal_internal__*` ids, timestamps in RFC 3339 UTC, long text with `processed`,
 * fractions with `decimal`, relationships with identifiers, meta and links. Written by hand:
 * no library gets Drupal's shape right.
 */
import type { AppContext } from '../context.ts';
import type { FieldDescriptor } from '../model/descriptor.ts';
import type { Principal } from '../access/principal.ts';
import type { EntityRecord, ItemValue, Reference } from '../storage/records.ts';
import { formatTimestamp } from '../values/timestamps.ts';
import { fractionToDecimal } from '../values/fraction.ts';
import { processText } from '../values/text.ts';
import { bundleIdentifier, configIdentifier } from '../model/config-entities.ts';
import { fieldVisible, labelOnly } from '../access/policy.ts';
import { hasVirtualRoot, virtualIdentifier } from './virtual.ts';
import type { ApiShape } from './shape.ts';
import { showValue, type ShapedField } from '../model/shapes.ts';

export interface ResourceIdentifier {
  type: string;
  id: string;
  meta?: Record<string, unknown>;
}

export interface ResourceObject {
  type: string;
  id: string;
  links: { self: { href: string } };
  /** Left out when empty (a sparse fieldset naming none), as Drupal's `omitIfEmpty` does. */
  attributes?: Record<string, unknown>;
  relationships?: Record<string, unknown>;
}

export function resourcePath(record: {
  rt: { entityType: { entityType: string }; bundle: { bundle: string } };
  uuid: string;
}): string {
  return `/api/${record.rt.entityType.entityType}/${record.rt.bundle.bundle}/${record.uuid}`;
}

function attributeItem(field: FieldDescriptor, item: ItemValue): unknown {
  if (item === null || item === undefined) return null;
  switch (field.type) {
    case 'timestamp':
      return formatTimestamp(item as number);
    case 'text_long': {
      const t = item as { value: string; format: string | null };
      return {
        value: t.value,
        format: t.format ?? 'default',
        processed: processText(String(t.value ?? ''), t.format ?? 'default'),
      };
    }
    case 'fraction': {
      const f = item as { numerator: number; denominator: number };
      return { numerator: f.numerator, denominator: f.denominator, decimal: fractionToDecimal(f) };
    }
    case 'geofield': {
      const g = item as Record<string, unknown>;
      return {
        value: g.value,
        geo_type: g.geo_type ?? null,
        lat: g.lat ?? null,
        lon: g.lon ?? null,
        left: g.left ?? null,
        top: g.top ?? null,
        right: g.right ?? null,
        bottom: g.bottom ?? null,
        geohash: g.geohash ?? null,
        latlon: g.latlon ?? null,
      };
    }
    default:
      return item;
  }
}

/**
 * Identifiers of one field naming the same resource more than once, told apart by `meta.arity`
 * (0, 1, … in their order), as Drupal serves them; an identifier that appears once has none.
 */
function withArity(identifiers: ResourceIdentifier[]): ResourceIdentifier[] {
  const key = (i: ResourceIdentifier) => `${i.type}\u0000${i.id}`;
  const count = new Map<string, number>();
  for (const i of identifiers) count.set(key(i), (count.get(key(i)) ?? 0) + 1);
  const next = new Map<string, number>();
  return identifiers.map((i) => {
    if (count.get(key(i))! < 2) return i;
    const arity = next.get(key(i)) ?? 0;
    next.set(key(i), arity + 1);
    return { ...i, meta: { ...i.meta, arity } };
  });
}

/** The one attribute of a user seen by label only. */
const LABEL_ATTRIBUTE = 'display_name';

export class Serializer {
  private readonly base: string;

  constructor(private readonly ctx: AppContext) {
    this.base = ctx.config.baseUrl;
  }

  identifier(field: FieldDescriptor, ref: Reference): ResourceIdentifier {
    const et = this.ctx.registry.model.entityTypes[field.target!.entityType];
    if (!et) return configIdentifier(field.target!.entityType, String(ref.meta.name));
    const meta: Record<string, unknown> = { drupal_internal__target_id: ref.targetId };
    if (field.type === 'entity_reference_revisions' && ref.revisionId) meta.target_revision_id = ref.revisionId;
    for (const [k, v] of Object.entries(ref.meta)) if (v !== null && v !== undefined) meta[k] = v;
    if (!ref.uuid)
      return { type: `${et.entityType}--${et.hasBundles ? 'missing' : et.entityType}`, id: 'missing', meta };
    return { type: `${et.entityType}--${ref.bundle}`, id: ref.uuid, meta };
  }

  /** The `data` member of a relationship. */
  relationshipData(record: EntityRecord, field: FieldDescriptor): ResourceIdentifier | ResourceIdentifier[] | null {
    const value = record.values.get(field.name);
    if (field.multiple) {
      const refs = (value as ItemValue[] | undefined) ?? [];
      if (!refs.length && hasVirtualRoot(record.rt.entityType.entityType, field))
        return [virtualIdentifier(record.rt.type)];
      return withArity(refs.map((ref) => this.identifier(field, ref as Reference)));
    }
    return value ? this.identifier(field, value as Reference) : null;
  }

  /** One attribute under the shape's name, its stored value shown the shape's way (an asset's 4.x `archived`: a boolean). */
  private shapedAttribute(
    record: EntityRecord,
    principal: Principal,
    sf: ShapedField,
    want: (name: string) => boolean,
    into: Record<string, unknown>,
  ): void {
    const field = sf.field;
    if (!want(field.name) || !fieldVisible(field, record, principal)) return;
    const value = record.values.get(field.name);
    if (value === undefined && !field.computed) return;
    into[sf.name] = field.multiple
      ? ((value as ItemValue[] | undefined) ?? []).map((v) => showValue(sf, attributeItem(field, v)))
      : showValue(sf, attributeItem(field, (value ?? null) as ItemValue));
  }

  /** A record the principal sees by its label only (policy.ts labelOnly): `display_name` and nothing else, as Drupal's LabelOnlyResourceObject. */
  private labelOnlyObject(record: EntityRecord, self: string, want: (name: string) => boolean): ResourceObject {
    const object: ResourceObject = { type: record.rt.type, id: record.uuid, links: { self: { href: self } } };
    if (want(LABEL_ATTRIBUTE)) object.attributes = { [LABEL_ATTRIBUTE]: record.values.get(LABEL_ATTRIBUTE) ?? null };
    return object;
  }

  /**
   * One record as a resource object. `shape`: the API shape and the base of its links (the
   * request's, jsonapi/shape.ts); without one the fields as stored on the farm's own base (the
   * web pages, verification). `fieldset` names stored fields (the request reader translated a
   * shape's names).
   */
  resourceObject(
    record: EntityRecord,
    principal: Principal,
    fieldset?: ReadonlySet<string>,
    shape?: ApiShape,
  ): ResourceObject {
    const rt = record.rt;
    const path = resourcePath(record);
    const self = `${shape?.base ?? this.base}${path}`;
    // A revision asked for with ?resourceVersion names its version in its links, as Drupal's do.
    const version = record.revisionView && record.revisionId !== null ? `?resourceVersion=id:${record.revisionId}` : '';
    const attributes: Record<string, unknown> = {};
    const relationships: Record<string, unknown> = {};
    const want = (name: string) => !fieldset || fieldset.has(name);
    if (labelOnly(principal, record)) return this.labelOnlyObject(record, self, want);
    if (want(rt.entityType.internalId)) attributes[rt.entityType.internalId] = record.id;
    if (rt.entityType.revisionId && want(rt.entityType.revisionId))
      attributes[rt.entityType.revisionId] = record.revisionId;
    // The shape's names and values (model/shapes.ts), compiled once per bundle; a shape that
    // differs in nothing takes the stored fields' loop, as every request did before shapes.
    const shaped = shape ? rt.shapes[shape.name] : null;
    if (shaped?.differs) {
      for (const sf of shaped.attributes) this.shapedAttribute(record, principal, sf, want, attributes);
    } else {
      for (const field of rt.attributes) {
        if (!want(field.name) || !fieldVisible(field, record, principal)) continue;
        const value = record.values.get(field.name);
        if (value === undefined && !field.computed) continue;
        attributes[field.name] = field.multiple
          ? ((value as ItemValue[] | undefined) ?? []).map((v) => attributeItem(field, v))
          : attributeItem(field, (value ?? null) as ItemValue);
      }
    }
    const bundleKey = rt.entityType.bundleKey;
    if (bundleKey && want(bundleKey)) {
      relationships[bundleKey] = { data: bundleIdentifier(rt.entityType, rt.bundle.bundle) };
    }
    const fields = shaped?.differs ? shaped.relationships : null;
    for (const [i, field] of (fields?.map((sf) => sf.field) ?? rt.relationships).entries()) {
      if (!want(field.name) || !fieldVisible(field, record, principal)) continue;
      if (!record.values.has(field.name)) continue;
      const name = fields ? fields[i]!.name : field.name;
      const data = this.relationshipData(record, field);
      // References to config entities have no endpoints, so no links.
      relationships[name] = this.ctx.registry.model.entityTypes[field.target!.entityType]
        ? {
            data,
            links: {
              related: { href: `${self}/${name}${version}` },
              self: { href: `${self}/relationships/${name}${version}` },
            },
          }
        : { data };
    }
    const object: ResourceObject = { type: rt.type, id: record.uuid, links: { self: { href: `${self}${version}` } } };
    // farmOS leaves out a member a sparse fieldset empties, rather than sending {}.
    if (Object.keys(attributes).length) object.attributes = attributes;
    if (Object.keys(relationships).length) object.relationships = relationships;
    return object;
  }
}
