/**
 * Reads a JSON:API resource document sent to POST or PATCH: checks its shape, coerces every
 * submitted attribute, resolves every relationship identifier to a record in one query per
 * target entity type, and collects all validation problems into one 422. Members a client echoes
 * back but may not set (computed and read-only fields) are ignored, as Drupal does; the record's
 * own numbers are the exception Drupal makes too (assertOwnNumber).
 */
import type { FieldDescriptor } from '../model/descriptor.ts';
import type { ModelRegistry, ResourceType } from '../model/registry.ts';
import type { Db, ItemValue, Reference } from '../storage/records.ts';
import { SqlMemo, quoteName, selectRows } from '../storage/sql.ts';
import { dialectOf } from '../storage/dialect.ts';
import {
  badRequest,
  conflict,
  forbidden,
  MissingReferenceError,
  ValidationError,
  type WireViolation,
} from '../errors.ts';
import { coerceField, quoted } from './coerce.ts';
import { hasVirtualRoot, VIRTUAL_ID } from './virtual.ts';
import { configIdentifier, isConfigEntityType } from '../model/config-entities.ts';
import { ROLES } from '../access/roles.ts';
import type { EntityInput, Secret } from '../entities/input.ts';
import type { ShapedField, ShapedType, ShapeName } from '../model/shapes.ts';

/** The names config entities referenced by records can have (their identifiers derive from them). */
const CONFIG_NAMES: Record<string, readonly string[]> = { user_role: ROLES };

export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

interface PendingIdentifier {
  field: FieldDescriptor;
  pointer: string;
  type: string;
  id: string;
  meta: Record<string, unknown>;
  ref?: Reference;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/** Check the top level of a write document and return its `data` member. */
export function readDataMember(body: unknown): Record<string, unknown> {
  if (
    body === undefined ||
    body === null ||
    (typeof body === 'object' && !Array.isArray(body) && Object.keys(body).length === 0)
  ) {
    throw badRequest('Empty request body: send a JSON:API document {"data": {…}}.', { pointer: '' });
  }
  if (!isObject(body))
    throw badRequest('The request body must be a JSON object with a "data" member.', { pointer: '' });
  if ('relationships' in body || 'attributes' in body)
    throw badRequest(
      'Found "attributes" or "relationships" at the top level of the document; they belong inside "data".',
      { pointer: '' },
    );
  if (!isObject(body.data))
    throw badRequest('The document must have a "data" member holding one resource object.', { pointer: '/data' });
  return body.data;
}

/** A document read up to its relationships' lookup (InputReader.parse). */
interface Parsed {
  id: string | undefined;
  values: Map<string, ItemValue | ItemValue[]>;
  secrets: Map<string, Secret>;
  pending: PendingIdentifier[];
  violations: WireViolation[];
}

/** A parsed document with its resolved references in place; its problems thrown as one 422. */
function finish({ id, values, secrets, pending, violations }: Parsed): EntityInput {
  for (const p of pending) {
    if (!p.ref) continue;
    if (p.field.multiple) (values.get(p.field.name) as ItemValue[]).push(p.ref);
    else values.set(p.field.name, p.ref);
  }
  if (violations.length) throw new ValidationError(violations);
  return { ...(id ? { id } : {}), values, secrets };
}

export class InputReader {
  /** The statements finding referenced records by UUID, by entity type and the columns they read. */
  private readonly sql = new SqlMemo();

  constructor(private readonly registry: ModelRegistry) {}

  /**
   * Read a resource object for `rt`: a new record's, or `current`'s when it updates one. Throws
   * 400/404/409 for malformed documents, 403 for a changed id, and 422 for invalid values.
   */
  async read(
    db: Db,
    rt: ResourceType,
    body: unknown,
    current?: StoredNumbers,
    shape?: ShapeName,
  ): Promise<EntityInput> {
    const parsed = this.parse(rt, body, current, shape);
    await this.resolve(db, parsed.pending, parsed.violations);
    return finish(parsed);
  }

  /**
   * Read many new records' documents of one type at once (an import's page): each is checked as
   * `read` checks it, and the relationships of all of them are resolved together, one query per
   * target entity type for the lot. All or nothing: the first problem of any document is thrown,
   * and the caller reads them one at a time to learn which one it was.
   */
  async readMany(db: Db, rt: ResourceType, bodies: readonly unknown[]): Promise<EntityInput[]> {
    const parsed = bodies.map((body) => this.parse(rt, body));
    const violations: WireViolation[] = [];
    await this.resolve(
      db,
      parsed.flatMap((p) => p.pending),
      violations,
    );
    if (violations.length) throw new ValidationError(violations);
    return parsed.map(finish);
  }

  /** A document's attributes coerced and its relationship identifiers listed, before any lookup. */
  /**
   * `shape`: the API shape the document is written in (model/shapes.ts): its names, its values,
   * what it requires of a new record and the defaults it gives one. Without one, the stored
   * fields' (the web pages, `tilth import`).
   */
  private parse(rt: ResourceType, body: unknown, current?: StoredNumbers, shape?: ShapeName): Parsed {
    const data = readDataMember(body);
    if (typeof data.type !== 'string' || !data.type)
      throw badRequest('The resource object must include a "type" member.', { pointer: '/data/type' });
    if (data.type !== rt.type) {
      throw conflict(`The type "${data.type}" does not match this endpoint, which takes ${rt.type}.`, {
        pointer: '/data/type',
      });
    }
    const violations: WireViolation[] = [];
    let id: string | undefined;
    if (data.id !== undefined && data.id !== null) {
      if (typeof data.id !== 'string' || !UUID.test(data.id)) {
        violations.push({
          pointer: '/data/id',
          detail: `id: ${quoted(data.id)} is not a UUID. IDs must be properly generated and formatted UUIDs as described in RFC 4122.`,
        });
      } else id = data.id.toLowerCase();
    }
    const values = new Map<string, ItemValue | ItemValue[]>();
    const secrets = new Map<string, Secret>();
    const shaped = shape && rt.shapes[shape].differs ? rt.shapes[shape] : null;
    const byName = shaped ? shaped.byName : rt.fieldsByName;
    const ignored = new Set([rt.entityType.internalId, rt.entityType.revisionId].filter(Boolean) as string[]);

    if (data.attributes !== undefined && data.attributes !== null) {
      if (!isObject(data.attributes))
        throw badRequest('"attributes" must be an object.', { pointer: '/data/attributes' });
      for (const [name, raw] of Object.entries(data.attributes)) {
        const pointer = `/data/attributes/${name}`;
        const field = byName.get(name);
        if (!field) {
          if (ignored.has(name)) {
            assertOwnNumber(rt, name, raw, current);
            continue;
          }
          violations.push({
            pointer,
            detail: `${name}: the attribute ${name} does not exist on the ${rt.type} resource type.`,
          });
          continue;
        }
        if (field.kind === 'relationship') {
          violations.push({
            pointer,
            detail: `${name}: ${name} is a relationship of ${rt.type}; send it under "relationships" as {"data": …}.`,
          });
          continue;
        }
        if (field.type === 'password') {
          const secret = readSecret(raw);
          if (secret === 'invalid') violations.push({ pointer, detail: `${name}: the password must be a string.` });
          else if (secret) secrets.set(field.name, secret);
          continue;
        }
        if (field.readOnly) continue;
        const sf = shaped?.byField.get(field);
        let sent = raw;
        if (sf?.fromShown) {
          const read = storedValue(sf, raw, current);
          if (read.problem) {
            violations.push({ pointer, detail: `${name}: ${read.problem}` });
            continue;
          }
          if (read.keep) continue;
          sent = read.value;
        }
        const c = coerceField(field, sent);
        if (!c.ok)
          violations.push({
            pointer: c.index !== undefined ? `${pointer}/${c.index}` : pointer,
            detail: `${name}: ${c.problem}.`,
          });
        else values.set(field.name, c.value);
      }
    }

    const pending: PendingIdentifier[] = [];
    if (data.relationships !== undefined && data.relationships !== null) {
      if (!isObject(data.relationships))
        throw badRequest('"relationships" must be an object.', { pointer: '/data/relationships' });
      for (const [name, member] of Object.entries(data.relationships)) {
        const pointer = `/data/relationships/${name}`;
        if (name === rt.entityType.bundleKey) continue;
        const field = byName.get(name);
        if (!field || field.internal) {
          violations.push({
            pointer,
            detail: `${name}: the relationship ${name} does not exist on the ${rt.type} resource type.`,
          });
          continue;
        }
        if (field.kind !== 'relationship') {
          violations.push({
            pointer,
            detail: `${name}: ${name} is an attribute of ${rt.type}; send it under "attributes".`,
          });
          continue;
        }
        if (field.readOnly) continue;
        // Drupal ignores a relationship member without "data" (farmOS.js sends some).
        if (!isObject(member) || !('data' in member)) continue;
        const items = readIdentifiers(member.data, field, `${pointer}/data`);
        if (!field.multiple && items.length > 1) {
          violations.push({
            pointer: `${pointer}/data`,
            detail: `${name}: takes one related resource, not ${items.length}.`,
          });
          continue;
        }
        values.set(field.name, field.multiple ? [] : null);
        for (const item of items) {
          // Drupal's "virtual" identifier of a root term's parent, sent back as read: the root,
          // which is stored as no parent at all. Its type must still be one the field allows.
          if (item.id === VIRTUAL_ID && hasVirtualRoot(rt.entityType.entityType, field)) {
            if (!this.registry.targetsOf(field).some((t) => t.type === item.type)) {
              violations.push({
                pointer: item.pointer,
                detail: `${field.name}: the type "${item.type}" is not allowed here; use ${this.registry
                  .targetsOf(field)
                  .map((t) => t.type)
                  .join(', ')}.`,
              });
            }
            continue;
          }
          pending.push({ field, ...item });
        }
      }
    }

    if (shaped && !current) newInShape(shaped, data, values, pending, violations);
    return { id, values, secrets, pending, violations };
  }

  /** Resolve identifiers to records, one query per target entity type; unknown UUIDs are 404. */
  private async resolve(db: Db, pending: PendingIdentifier[], violations: WireViolation[]): Promise<void> {
    const byEntityType = new Map<string, PendingIdentifier[]>();
    for (const p of pending) {
      if (p.field.target && isConfigEntityType(p.field.target.entityType)) {
        resolveConfigReference(p, p.field.target.entityType, violations);
        continue;
      }
      const target = this.registry.get(p.type);
      const allowed = this.registry.targetsOf(p.field).map((t) => t.type);
      if (!target || !allowed.includes(p.type)) {
        violations.push({
          pointer: p.pointer,
          detail: `${p.field.name}: the type "${p.type}" is not allowed here; use ${allowed.length ? allowed.join(', ') : 'no type (nothing can be referenced)'}.`,
        });
        continue;
      }
      const et = target.entityType.entityType;
      byEntityType.set(et, [...(byEntityType.get(et) ?? []), p]);
    }
    for (const [entityType, items] of byEntityType) {
      const et = this.registry.model.entityTypes[entityType]!;
      const filterColumns = new Set<string>();
      for (const p of items) for (const k of Object.keys(p.field.target?.filter ?? {})) filterColumns.add(k);
      const uuids = [...new Set(items.map((p) => p.id.toLowerCase()).filter((u) => UUID.test(u)))];
      // A revision-pinning reference (a log's quantities) names its target's current revision:
      // read here with the target, so that saving needs no second look (revisions.ts pinTargetRevisions).
      const pins = Boolean(et.revisionId) && items.some((p) => p.field.type === 'entity_reference_revisions');
      const columns = ['id', 'uuid', 'bundle', et.labelField, ...filterColumns, ...(pins ? ['revision_id'] : [])];
      const dialect = dialectOf(db);
      const sql = this.sql.get(
        `${et.table}:${dialect.name}:${columns.join(',')}`,
        () =>
          `SELECT ${columns.map(quoteName).join(', ')} FROM ${quoteName(et.table)} WHERE ${dialect.inTextList('uuid')}`,
      );
      const rows = uuids.length
        ? await selectRows<Record<string, unknown>>(db, sql, [dialect.textListParameter(uuids)])
        : [];
      const byUuid = new Map(rows.map((r: Record<string, unknown>) => [String(r.uuid), r]));
      for (const p of items) {
        const row = byUuid.get(p.id.toLowerCase());
        if (!row || !this.registry.get(`${entityType}--${row.bundle}`)) {
          throw new MissingReferenceError(p.type, p.id, { pointer: p.pointer });
        }
        const actual = `${entityType}--${row.bundle}`;
        if (actual !== p.type) {
          violations.push({ pointer: p.pointer, detail: `${p.field.name}: ${p.id} is a ${actual}, not a ${p.type}.` });
          continue;
        }
        const filter = p.field.target?.filter ?? {};
        const failed = Object.entries(filter).find(([k, v]) =>
          typeof v === 'boolean' ? Boolean(row[k]) !== v : row[k] !== v,
        );
        if (failed) {
          violations.push({
            pointer: p.pointer,
            detail: `${p.field.name}: "${String(row[et.labelField] ?? p.id)}" (${actual}) cannot be referenced here: it must have ${failed[0]} set to ${String(failed[1])}.`,
          });
          continue;
        }
        p.ref = { targetId: Number(row.id), uuid: String(row.uuid), bundle: String(row.bundle), meta: p.meta };
        if (pins && p.field.type === 'entity_reference_revisions')
          p.ref.revisionId = row.revision_id === null || row.revision_id === undefined ? null : Number(row.revision_id);
      }
    }
  }
}

/** The numbers a stored record already has: its id and its current revision's; and its values, when the caller has them. */
export interface StoredNumbers {
  id: number;
  revisionId?: number | null;
  values?: ReadonlyMap<string, unknown>;
}

/**
 * A value sent in a shape that shows some stored values differently (model/shapes.ts): the stored
 * value it stands for; `keep` when it is the shown value of the value already stored (a 2.x client
 * echoing the `done` it read of an abandoned log leaves it abandoned); or the problem.
 */
function storedValue(
  sf: ShapedField,
  raw: unknown,
  current: StoredNumbers | undefined,
): { value?: unknown; keep?: true; problem?: string } {
  if (raw === null || raw === undefined) return { value: raw };
  if (sf.field.multiple) return { value: raw };
  const stored = current?.values?.get(sf.field.name);
  if (typeof stored === 'string' && sf.toShown?.has(stored) && sf.toShown.get(stored) === raw) return { keep: true };
  if (typeof raw === 'string' && sf.unwritable.has(raw))
    return {
      problem: `"${raw}" cannot be written in this shape of the API, which reads it as "${String(sf.toShown!.get(raw))}"; use one of: ${sf.allowedValues!.map((a) => a.value).join(', ')}.`,
    };
  if (!sf.shownAsBoolean) return { value: raw };
  const values = typeof raw === 'boolean' ? sf.fromShown!.get(raw) : undefined;
  if (!values) return { problem: `${JSON.stringify(raw)} is not a boolean; send true or false.` };
  return { value: values[0] };
}

/**
 * What a shape asks of a new record: each field it requires was sent (a 4.x log's `timestamp`),
 * and the shape's default where it has its own (a 4.x log's `status`: done).
 */
function newInShape(
  shaped: ShapedType,
  data: Record<string, unknown>,
  values: Map<string, ItemValue | ItemValue[]>,
  pending: PendingIdentifier[],
  violations: WireViolation[],
): void {
  const attributes = isObject(data.attributes) ? data.attributes : {};
  for (const sf of shaped.byField.values()) {
    const field = sf.field;
    if (values.has(field.name) || pending.some((p) => p.field === field)) continue;
    const sent = [sf.name, field.name, ...field.aliases].some((n) => n in attributes);
    // A field the shape requires but that has a default (a log's timestamp: now) is filled in, as
    // Drupal fills a field's default before validating: farmOS 4.x lists the timestamp as required
    // in its schema yet stores a log POSTed without one (farmOS.py 2.0's own tests post such logs).
    if (sf.required && !field.required && !sent && field.default === undefined) {
      const where = field.kind === 'attribute' ? 'attributes' : 'relationships';
      violations.push({ pointer: `/data/${where}/${sf.name}`, detail: `${sf.name}: This value should not be null.` });
    } else if (sf.default !== field.default && sf.default !== undefined && typeof sf.default !== 'object' && !sent)
      values.set(field.name, sf.default);
  }
}

/**
 * `drupal_internal__id` and `drupal_internal__revision_id` are the server's. As in Drupal (core's
 * EntityAccessControlHandler::fieldAccess denies editing an entity's ID; JSON:API's EntityResource
 * tolerates a PATCH that sends back the stored value), an echo of the stored number is ignored and
 * anything else, or any value on POST, is a 403 naming the field, never a silent 200.
 */
function assertOwnNumber(rt: ResourceType, name: string, raw: unknown, current: StoredNumbers | undefined): void {
  const isId = name === rt.entityType.internalId;
  const stored = current ? (isId ? current.id : current.revisionId) : undefined;
  if (stored !== undefined && stored !== null && (raw === stored || raw === String(stored))) return;
  const what = isId ? 'The entity ID' : 'The revision ID';
  throw forbidden(
    `The current user is not allowed to ${current ? 'PATCH' : 'POST'} the selected field (${name}). ${what} cannot be changed.`,
    { pointer: `/data/attributes/${name}` },
  );
}

/** A password attribute: `"new"` or `{"value": "new", "existing": "current"}`; null when absent. */
function readSecret(raw: unknown): Secret | null | 'invalid' {
  const v = isObject(raw) ? raw : { value: raw };
  if (v.value === undefined || v.value === null) return null;
  if (typeof v.value !== 'string') return 'invalid';
  return { value: v.value, ...(typeof v.existing === 'string' ? { existing: v.existing } : {}) };
}

/**
 * The passwords a write document sends, read without the database so that they can be checked
 * and hashed before its transaction opens. Malformed ones are left for InputReader.read to report.
 */
export function readSecrets(rt: ResourceType, body: unknown): Map<string, Secret> {
  const out = new Map<string, Secret>();
  const data = isObject(body) && isObject(body.data) ? body.data : null;
  if (!data || !isObject(data.attributes)) return out;
  for (const [name, raw] of Object.entries(data.attributes)) {
    const field = rt.fieldsByName.get(name);
    if (field?.type !== 'password') continue;
    const secret = readSecret(raw);
    if (secret && secret !== 'invalid') out.set(field.name, secret);
  }
  return out;
}

/** A reference to a config entity (a role): its UUID is derived from its name. */
function resolveConfigReference(p: PendingIdentifier, entityType: string, violations: WireViolation[]): void {
  const type = `${entityType}--${entityType}`;
  if (p.type !== type) {
    violations.push({
      pointer: p.pointer,
      detail: `${p.field.name}: the type "${p.type}" is not allowed here; use ${type}.`,
    });
    return;
  }
  const name = (CONFIG_NAMES[entityType] ?? []).find((n) => configIdentifier(entityType, n).id === p.id.toLowerCase());
  if (!name) throw new MissingReferenceError(p.type, p.id, { pointer: p.pointer });
  p.ref = { targetId: 0, meta: { name } };
}

function readIdentifiers(
  data: unknown,
  field: FieldDescriptor,
  pointer: string,
): Array<Omit<PendingIdentifier, 'field'>> {
  if (data === null) return [];
  const list = Array.isArray(data) ? data : [data];
  return list.map((item, i) => {
    const p = Array.isArray(data) ? `${pointer}/${i}` : pointer;
    if (!isObject(item))
      throw badRequest(`${field.name}: each related resource must be an identifier object {"type", "id"}.`, {
        pointer: p,
      });
    if (typeof item.type !== 'string' || !item.type)
      throw badRequest(`${field.name}: no type specified for related resource.`, { pointer: `${p}/type` });
    if (typeof item.id !== 'string' || !item.id)
      throw badRequest(`${field.name}: no ID specified for related resource.`, { pointer: `${p}/id` });
    const meta: Record<string, unknown> = {};
    if (isObject(item.meta)) {
      // Item properties of files and images; everything else in meta (drupal_internal__*,
      // target_revision_id) is the server's own and ignored.
      for (const [k, v] of Object.entries(item.meta)) {
        if (k === 'display' && (typeof v === 'boolean' || v === 0 || v === 1)) meta[k] = Boolean(v);
        else if (['description', 'alt', 'title'].includes(k) && typeof v === 'string') {
          if (v.includes('\u0000') || v.length > 1024)
            throw badRequest(
              `${field.name}: meta.${k} must be text of at most 1024 characters without NUL characters.`,
              { pointer: `${p}/meta/${k}` },
            );
          meta[k] = v;
        } else if ((k === 'width' || k === 'height') && v !== null && v !== undefined) {
          if (!Number.isSafeInteger(v) || (v as number) < 0 || (v as number) > 2_147_483_647)
            throw badRequest(`${field.name}: meta.${k} must be a whole number of pixels.`, {
              pointer: `${p}/meta/${k}`,
            });
          meta[k] = v;
        }
      }
    }
    return { pointer: p, type: item.type, id: item.id, meta };
  });
}
