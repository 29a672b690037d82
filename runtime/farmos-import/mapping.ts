/**
 * The import map (table `tilth_import_map`, core migration 0009): which records of which source
 * are here, with a digest of the document they were copied from. Rows are written in the same
 * transaction as the records of their page, so a run killed at any moment leaves the map and the
 * records in step, and the next run skips what is already here and unchanged.
 */
import { createHash } from 'node:crypto';
import type { Db } from '../storage/records.ts';
import { chunks } from '../storage/records.ts';
import type { SourceResource } from './source.ts';

export const IMPORT_MAP_TABLE = 'tilth_import_map';

export interface MapRow {
  uuid: string;
  bundle: string;
  digest: string;
}

/** A stable digest of what a source record says: its attributes and relationships, keys sorted, the source's own numbers left out. */
export function digestOf(resource: SourceResource): string {
  const relationships: Record<string, unknown> = {};
  for (const [name, member] of Object.entries(resource.relationships ?? {})) relationships[name] = member?.data ?? null;
  return createHash('sha256').update(stableJson({ type: resource.type, attributes: resource.attributes ?? {}, relationships })).digest('hex');
}

function stableJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(stableJson).join(',')}]`;
  if (value && typeof value === 'object') {
    return `{${Object.keys(value)
      .filter((k) => !k.startsWith('drupal_internal__') && k !== 'links')
      .sort()
      .map((k) => `${JSON.stringify(k)}:${stableJson((value as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(value ?? null);
}

export class ImportMap {
  constructor(private readonly source: string) {}

  /** The rows of these UUIDs of an entity type, by UUID (one statement per 500). */
  async rows(db: Db, entityType: string, uuids: string[]): Promise<Map<string, MapRow>> {
    const out = new Map<string, MapRow>();
    for (const part of chunks(uuids, 500)) {
      const rows = (await db(IMPORT_MAP_TABLE).where({ source: this.source, entity_type: entityType }).whereIn('uuid', part).select('uuid', 'bundle', 'digest')) as MapRow[];
      for (const r of rows) out.set(r.uuid, r);
    }
    return out;
  }

  /** Record (or re-record) what was copied. */
  async record(db: Db, entityType: string, resource: SourceResource, changed: number | null, digest: string, bundle: string): Promise<void> {
    const row = { source: this.source, entity_type: entityType, uuid: resource.id, bundle, source_changed: changed, digest, imported_at: Math.floor(Date.now() / 1000) };
    await db(IMPORT_MAP_TABLE).insert(row).onConflict(['source', 'entity_type', 'uuid']).merge(['bundle', 'source_changed', 'digest', 'imported_at']);
  }

  /** Every UUID recorded for an entity type (and bundle), for --prune. */
  async uuids(db: Db, entityType: string, bundle?: string): Promise<string[]> {
    const q = db(IMPORT_MAP_TABLE).where({ source: this.source, entity_type: entityType });
    if (bundle) q.where('bundle', bundle);
    return ((await q.select('uuid')) as Array<{ uuid: string }>).map((r) => r.uuid);
  }

  async forget(db: Db, entityType: string, uuids: string[]): Promise<void> {
    for (const part of chunks(uuids, 500)) await db(IMPORT_MAP_TABLE).where({ source: this.source, entity_type: entityType }).whereIn('uuid', part).delete();
  }
}
