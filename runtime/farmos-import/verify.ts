/**
 * Did the farm come across? For every resource type both farms have: the set of UUIDs, each
 * record's attributes and relationships as both serve them (normalised: the farms' own numbers,
 * revision bookkeeping, rendered text and link URLs left out; timestamps as seconds, fractions as
 * numbers, users and roles by who they are), each file's SHA-256, and each data stream's readings.
 * Computed members (an asset's location, geometry, groups and inventory) are compared too: they
 * must come out equal from the logs copied. Every difference is named by type, UUID and field.
 */
import { createHash } from 'node:crypto';
import type { AppContext } from '../context.ts';
import type { ResourceType } from '../model/registry.ts';
import { Serializer } from '../jsonapi/serialize.ts';
import type { RecordLoader } from '../farm/loader.ts';
import type { FileStore } from '../files/storage.ts';
import { parseTimestamp } from '../values/timestamps.ts';
import { SourceError, type FarmSource, type SourceResource } from './source.ts';
import { digestOf, ImportMap, type MapRow } from './mapping.ts';
import { systemPrincipal } from './run-state.ts';
import { storedSha256 } from './files.ts';
import { sourceDigest, storedDigest } from './readings.ts';
import type { Progress } from './progress.ts';

export interface Difference {
  type: string;
  uuid: string;
  field: string;
  source: unknown;
  here: unknown;
}

/** Members that are each farm's own bookkeeping, not the farm's records. */
const OWN_ATTRIBUTES = new Set([
  'langcode',
  'default_langcode',
  'revision_default',
  'revision_translation_affected',
  'revision_log_message',
  'revision_created',
  'uri',
  'pass',
  'access',
  'login',
  'init',
  'preferred_langcode',
  'preferred_admin_langcode',
  'timezone',
]);
const OWN_RELATIONSHIPS = new Set(['revision_user']);
/**
 * An account is compared by what it is on both farms, not by its times: `changed` moves here when
 * it is given a password (as the README says to do after a move), `access` and `login` with each
 * sign-in on either side.
 */
const ACCOUNT_ATTRIBUTES = new Set(['name', 'mail', 'status', 'timezone']);
const ACCOUNT_RELATIONSHIPS = new Set(['roles']);
/** Item properties worth comparing on a relationship item (files and images). */
const ITEM_META = ['description', 'display', 'alt', 'title', 'width', 'height'];

export async function verifyFarm(
  ctx: AppContext,
  source: FarmSource,
  supported: ResourceType[],
  progress: Progress,
  userRemap: ReadonlyMap<string, string> = new Map(),
): Promise<Difference[]> {
  const verifier = new FarmVerifier(ctx, source, userRemap);
  progress.phase('verifying');
  for (const rt of supported) {
    let seen: Set<string>;
    try {
      seen = await verifier.verifyType(rt, (n) => progress.advance(n));
    } catch (error) {
      // A collection the source will not give: none of it is verified, and the report says so.
      if (!(error instanceof SourceError)) throw error;
      verifier.out.push({
        type: rt.type,
        uuid: '(unread)',
        field: '(records)',
        source: error.message,
        here: 'not compared',
      });
      continue;
    }
    await verifier.notAtSource(rt, seen);
  }
  const streams = supported.find((rt) => rt.entityType.entityType === 'data_stream');
  if (streams) await verifier.verifyReadings(streams);
  progress.done();
  return verifier.out;
}

class FarmVerifier {
  readonly out: Difference[] = [];
  /** The farm's loader (context.ts services graph) and the JSON:API serializer both farms' documents are compared in. */
  private readonly loader: RecordLoader;
  private readonly serializer: Serializer;
  private readonly map: ImportMap;
  private readonly files: FileStore;
  private readonly principal = systemPrincipal();

  constructor(
    private readonly ctx: AppContext,
    private readonly source: FarmSource,
    private readonly userRemap: ReadonlyMap<string, string>,
  ) {
    this.loader = ctx.services.loader;
    this.serializer = new Serializer(ctx);
    this.map = new ImportMap(source.base);
    this.files = ctx.services.files;
  }

  /** Compare every record of a resource type, a source page at a time; returns the UUIDs the source listed. */
  async verifyType(rt: ResourceType, advance: (n: number) => void): Promise<Set<string>> {
    const db = this.ctx.db.knex;
    const entityType = rt.entityType.entityType;
    const seen = new Set<string>();
    for await (const page of this.source.pagesInLanes(rt.type, rt.entityType.internalId)) {
      // The anonymous user (no name) is every farm's own.
      const wanted = page.filter(
        (r) => entityType !== 'user' || (typeof r.attributes?.name === 'string' && r.attributes.name !== ''),
      );
      const uuids = wanted.map((r) => this.userRemap.get(r.id) ?? r.id);
      for (const u of uuids) seen.add(u);
      const rows = (await db(rt.entityType.table).whereIn('uuid', uuids).select('id', 'uuid')) as Array<{
        id: number;
        uuid: string;
      }>;
      const records = await this.loader.load(
        db,
        entityType,
        rows.map((r) => Number(r.id)),
        null,
        undefined,
        [rt.bundle.bundle],
      );
      const byUuid = new Map(records.map((r) => [r.uuid, r]));
      const imported =
        entityType === 'file'
          ? await this.map.rows(
              db,
              entityType,
              wanted.map((r) => r.id),
            )
          : new Map<string, MapRow>();
      for (const resource of wanted) {
        const record = byUuid.get(this.userRemap.get(resource.id) ?? resource.id);
        if (!record) {
          this.out.push({ type: rt.type, uuid: resource.id, field: '(record)', source: 'present', here: 'missing' });
          continue;
        }
        if (entityType === 'user' && this.userRemap.has(resource.id)) continue; // an account of this farm's, matched by name
        const here = this.serializer.resourceObject(record, this.principal);
        this.out.push(...compare(rt, resource, here as SourceResource, this.userRemap));
        if (entityType === 'file')
          await this.compareBytes(rt, resource, record.values.get('path'), imported.get(resource.id));
      }
      advance(page.length);
    }
    return seen;
  }

  /**
   * A file's bytes here against the source's: against the SHA-256 they had when imported while
   * the source's file record is the one imported (same digest), else downloaded again and hashed.
   */
  private async compareBytes(
    rt: ResourceType,
    resource: SourceResource,
    path: unknown,
    imported: MapRow | undefined,
  ): Promise<void> {
    const url = (resource.attributes?.uri as { url?: string } | undefined)?.url;
    const recorded = imported?.sha256 && imported.digest === digestOf(resource) ? imported.sha256 : null;
    const there = recorded
      ? Promise.resolve(recorded)
      : url
        ? sourceSha256(this.source, url).catch((e: Error) => `unreadable (${e.message})`)
        : Promise.resolve('no url');
    const [a, b] = await Promise.all([there, typeof path === 'string' ? storedSha256(this.files, path) : null]);
    if (a !== b) this.out.push({ type: rt.type, uuid: resource.id, field: 'sha256', source: a, here: b });
  }

  /** What an earlier run copied from this source and the source no longer lists (--prune deletes it). */
  async notAtSource(rt: ResourceType, seen: Set<string>): Promise<void> {
    const entityType = rt.entityType.entityType;
    if (entityType === 'user') return;
    for (const uuid of await this.map.uuids(this.ctx.db.knex, entityType, rt.bundle.bundle)) {
      if (!seen.has(uuid) && (await this.loader.store.findByUuid(this.ctx.db.knex, entityType, uuid))) {
        this.out.push({
          type: rt.type,
          uuid,
          field: '(record)',
          source: 'missing',
          here: 'present (run with --prune)',
        });
      }
    }
  }

  /** Each copied data stream's readings: how many, and their order-free digest, on both sides, read a page at a time. */
  async verifyReadings(rt: ResourceType): Promise<void> {
    const db = this.ctx.db.knex;
    const rows = (await db(rt.entityType.table).select('id', 'uuid')) as Array<{ id: number; uuid: string }>;
    const mapped = new Set(await this.map.uuids(db, 'data_stream'));
    for (const row of rows.filter((r) => mapped.has(r.uuid))) {
      const there = await sourceDigest(this.source, row.uuid).catch(() => null);
      const here = await storedDigest(db, Number(row.id));
      if (!there || there.digest() !== here.digest())
        this.out.push({
          type: 'data_stream readings',
          uuid: row.uuid,
          field: 'readings',
          source: there ? `${there.size} readings` : 'unreadable',
          here: `${here.size} readings${there && there.size === here.size ? ' (some differ)' : ''}`,
        });
    }
  }
}

/** The differences between a source record and the same record here, field by field. */
export function compare(
  rt: ResourceType,
  source: SourceResource,
  here: SourceResource,
  users: ReadonlyMap<string, string>,
): Difference[] {
  const out: Difference[] = [];
  const account = rt.entityType.access === 'user';
  for (const [name, value] of Object.entries(source.attributes ?? {})) {
    if (account ? !ACCOUNT_ATTRIBUTES.has(name) : name.startsWith('drupal_internal__') || OWN_ATTRIBUTES.has(name))
      continue;
    if (!rt.fieldsByName.has(name)) continue;
    const a = normalise(value);
    const b = normalise(here.attributes?.[name]);
    if (JSON.stringify(a) !== JSON.stringify(b))
      out.push({ type: rt.type, uuid: source.id, field: name, source: a, here: b });
  }
  for (const [name, member] of Object.entries(source.relationships ?? {})) {
    if (account ? !ACCOUNT_RELATIONSHIPS.has(name) : name === rt.entityType.bundleKey || OWN_RELATIONSHIPS.has(name))
      continue;
    if (!rt.fieldsByName.has(name)) continue;
    const a = identifiers(member?.data, users);
    const b = identifiers(here.relationships?.[name]?.data, users);
    if (JSON.stringify(a) !== JSON.stringify(b))
      out.push({ type: rt.type, uuid: source.id, field: name, source: a, here: b });
  }
  return out;
}

/** A value as both farms mean it: timestamps as seconds, fractions as numbers, rendered text left out, keys sorted. */
function normalise(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(normalise);
  if (typeof value === 'string' && /^\d{4}-\d\d-\d\dT\d\d:\d\d/.test(value)) return parseTimestamp(value) ?? value;
  if (value && typeof value === 'object') {
    const o = value as Record<string, unknown>;
    if ('decimal' in o && 'numerator' in o) return Number(o.decimal);
    const out: Record<string, unknown> = {};
    for (const k of Object.keys(o).sort()) if (k !== 'processed') out[k] = normalise(o[k]);
    return out;
  }
  return value ?? null;
}

/** Relationship items by who they name: users through the name match, roles by name, with their item properties. */
function identifiers(data: unknown, users: ReadonlyMap<string, string>): unknown {
  const one = (item: any) => {
    if (!item || typeof item !== 'object') return null;
    if (String(item.type).startsWith('user_role--')) return { role: item.meta?.drupal_internal__target_id };
    const meta: Record<string, unknown> = {};
    for (const k of ITEM_META) if (item.meta?.[k] !== undefined && item.meta[k] !== null) meta[k] = item.meta[k];
    return { type: item.type, id: users.get(item.id) ?? item.id, ...(Object.keys(meta).length ? { meta } : {}) };
  };
  if (Array.isArray(data)) return data.map(one);
  return data === undefined ? null : one(data);
}

async function sourceSha256(source: FarmSource, url: string): Promise<string> {
  const body = await source.download(url);
  const hash = createHash('sha256');
  for await (const chunk of body) hash.update(chunk as Buffer);
  return hash.digest('hex');
}
