/**
 * The import map (table `tilth_import_map`, core migration 0009): which records of which source
 * are here, with a digest of the document they were copied from. Rows are written in the same
 * transaction as the records of their page, so a run killed at any moment leaves the map and the
 * records in step, and the next run skips what is already here and unchanged. With it, the marks
 * (`tilth_import_marks`, core migration 0012): per source and resource type, the source's time from
 * which the next run asks only for what changed.
 */
import { createHash } from 'node:crypto';
import type { Db } from '../storage/records.ts';
import { chunks } from '../storage/records.ts';
import type { SourceResource } from './source.ts';

export const IMPORT_MAP_TABLE = 'tilth_import_map';
export const IMPORT_MARKS_TABLE = 'tilth_import_marks';

export interface MapRow {
  uuid: string;
  bundle: string;
  digest: string;
  /** A file's bytes' SHA-256 as imported (null for other records, and files imported before 0012). */
  sha256: string | null;
}

/** A record to note in the map. */
export interface MapEntry {
  resource: SourceResource;
  changed: number | null;
  digest: string;
  bundle: string;
  sha256?: string | null;
}

/**
 * A user's attributes that move at the source without a change to the account: its sign-in times
 * (each run that signs in as an account moves them), and `changed`, which a password set there
 * moves (a password is never carried). In a digest, they would have every run rewrite the account.
 */
const MOVING_USER_ATTRIBUTES = ['access', 'login', 'changed'];

/** A stable digest of what a source record says: its attributes and relationships, keys sorted, the source's own numbers left out. */
export function digestOf(resource: SourceResource): string {
  const relationships: Record<string, unknown> = {};
  for (const [name, member] of Object.entries(resource.relationships ?? {})) relationships[name] = member?.data ?? null;
  const attributes = { ...resource.attributes };
  if (resource.type === 'user--user') for (const name of MOVING_USER_ATTRIBUTES) delete attributes[name];
  return createHash('sha256')
    .update(stableJson({ type: resource.type, attributes, relationships }))
    .digest('hex');
}

/** JSON with object keys sorted and the source's own numbers and links left out (one JSON.stringify: much faster than one per key). */
function stableJson(value: unknown): string {
  return JSON.stringify(canonical(value));
}

function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical);
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const k of Object.keys(value).sort())
      if (!k.startsWith('drupal_internal__') && k !== 'links')
        out[k] = canonical((value as Record<string, unknown>)[k]);
    return out;
  }
  return value ?? null;
}

export class ImportMap {
  constructor(private readonly source: string) {}

  /** The rows of these UUIDs of an entity type, by UUID (one statement per 500). */
  async rows(db: Db, entityType: string, uuids: string[]): Promise<Map<string, MapRow>> {
    const out = new Map<string, MapRow>();
    for (const part of chunks(uuids, 500)) {
      const rows = (await db(IMPORT_MAP_TABLE)
        .where({ source: this.source, entity_type: entityType })
        .whereIn('uuid', part)
        .select('uuid', 'bundle', 'digest', 'sha256')) as MapRow[];
      for (const r of rows) out.set(r.uuid, r);
    }
    return out;
  }

  /** Record (or re-record) what a page copied: one statement per 100 records. */
  async recordMany(db: Db, entityType: string, entries: MapEntry[]): Promise<void> {
    const now = Math.floor(Date.now() / 1000);
    for (const part of chunks(entries, 100)) {
      const rows = part.map((e) => ({
        source: this.source,
        entity_type: entityType,
        uuid: e.resource.id,
        bundle: e.bundle,
        source_changed: e.changed,
        digest: e.digest,
        imported_at: now,
        sha256: e.sha256 ?? null,
      }));
      await db(IMPORT_MAP_TABLE)
        .insert(rows)
        .onConflict(['source', 'entity_type', 'uuid'])
        .merge(['bundle', 'source_changed', 'digest', 'imported_at', 'sha256']);
    }
  }

  /**
   * The source's time from which the next run reads a resource type (records changed at or after
   * it), or null: read it whole. Set only when a run read the type to its end with nothing failed.
   */
  async mark(db: Db, resourceType: string): Promise<number | null> {
    const row = (await db(IMPORT_MARKS_TABLE)
      .where({ source: this.source, resource_type: resourceType })
      .first('changed_since')) as { changed_since: number | string } | undefined;
    return row ? Number(row.changed_since) : null;
  }

  async setMark(db: Db, resourceType: string, changedSince: number): Promise<void> {
    await db(IMPORT_MARKS_TABLE)
      .insert({ source: this.source, resource_type: resourceType, changed_since: changedSince })
      .onConflict(['source', 'resource_type'])
      .merge(['changed_since']);
  }

  /** Every UUID recorded for an entity type (and bundle), for --prune. */
  async uuids(db: Db, entityType: string, bundle?: string): Promise<string[]> {
    const q = db(IMPORT_MAP_TABLE).where({ source: this.source, entity_type: entityType });
    if (bundle) q.where('bundle', bundle);
    return ((await q.select('uuid')) as Array<{ uuid: string }>).map((r) => r.uuid);
  }

  async forget(db: Db, entityType: string, uuids: string[]): Promise<void> {
    for (const part of chunks(uuids, 500))
      await db(IMPORT_MAP_TABLE).where({ source: this.source, entity_type: entityType }).whereIn('uuid', part).delete();
  }
}
