/**
 * The state of one run of `tilth import farmos`, shared by its jobs: the run (run.ts), the pages
 * (pages.ts), the files (files.ts), the readings (copy-readings.ts) and pruning (prune.ts). What
 * it writes with is the farm's services graph (context.ts); what it found goes into its report.
 */
import type { AppContext, FarmServices } from '../context.ts';
import type { ResourceType } from '../model/registry.ts';
import { ApiError, ValidationError } from '../errors.ts';
import { InputReader } from '../jsonapi/input.ts';
import { effectivePermissions, USER_ACCESS_SCOPE } from '../access/roles.ts';
import type { Principal } from '../access/principal.ts';
import type { FileStore } from '../files/storage.ts';
import type { Placements } from '../farm/placements.ts';
import { FarmSource, SourceError, type SourceResource } from './source.ts';
import { ImportMap } from './mapping.ts';
import type { WriteContext } from './records.ts';
import type { BundleCounts, Progress } from './progress.ts';

/**
 * Entity types in the order their records can be stored: each refers only to those before it (and
 * to itself: parents). Files come before terms (a term's photos and files, farmOS 3.2), farm
 * organizations (farmOS 4.x, where this farm has them) before the assets that name their farm.
 */
export const IMPORT_ORDER = [
  'user',
  'file',
  'taxonomy_term',
  'data_stream',
  'organization',
  'asset',
  'quantity',
  'log',
] as const;

export interface Failure {
  type: string;
  uuid: string;
  reason: string;
}

export interface ImportReport {
  counts: BundleCounts[];
  failures: Failure[];
  /** Resource types the source serves and this farm has not: skipped. */
  unsupported: string[];
  /** Fields the source's records have and this farm's have not, by resource type. */
  notCarried: Map<string, Set<string>>;
  /** Accounts created here without a password: `tilth user password` gives them one. */
  needPassword: string[];
  /** Source users that were already here under the same name (with another UUID). */
  matchedUsers: string[];
  pruned: number;
  assetsRebuilt: number;
}

export interface ImportOptions {
  prune?: boolean;
  /** Carry each new record's past revisions too (a Tilth source serves them; one request per record). */
  revisions?: boolean;
}

/** Who stores users: an administrator with no account here, so nothing is owned by the import itself. */
export function systemPrincipal(): Principal {
  return {
    userId: null,
    userUuid: null,
    userName: 'import',
    roles: ['administrator'],
    scopes: [USER_ACCESS_SCOPE],
    clientId: null,
    tokenChainId: null,
    permissions: effectivePermissions(['administrator'], [USER_ACCESS_SCOPE]),
  };
}

export class ImportRun {
  /** The farm's services graph (context.ts), built once per farm: the import saves and reads through it. */
  readonly services: FarmServices;
  readonly map: ImportMap;
  readonly files: FileStore;
  readonly w: WriteContext;
  readonly report: ImportReport = {
    counts: [],
    failures: [],
    unsupported: [],
    notCarried: new Map(),
    needPassword: [],
    matchedUsers: [],
    pruned: 0,
    assetsRebuilt: 0,
  };
  /** UUIDs the source listed this run, by entity type (what --prune keeps). */
  readonly seen = new Map<string, Set<string>>();
  /** Resource types read whole this run (no mark from an earlier one): `seen` has all their UUIDs. */
  readonly readWhole = new Set<string>();
  readonly placements: Placements;
  /** Source UUIDs that are this farm's own records (isLocal): references to them are left out (records.ts). */
  readonly conflicts = new Set<string>();

  constructor(
    readonly ctx: AppContext,
    readonly source: FarmSource,
    readonly progress: Progress,
    readonly options: ImportOptions = {},
  ) {
    this.services = ctx.services;
    // The farm's own (context.ts): one Placements and one FileStore per farm.
    this.placements = ctx.services.placements;
    this.map = new ImportMap(source.base);
    this.files = ctx.services.files;
    this.w = {
      services: this.services,
      input: new InputReader(ctx.registry),
      message: `Imported from ${source.base} on ${new Date().toISOString().slice(0, 10)}`,
      userIds: new Map(),
      userRemap: new Map(),
      conflicts: this.conflicts,
      system: systemPrincipal(),
    };
  }

  seenSet(entityType: string): Set<string> {
    let set = this.seen.get(entityType);
    if (!set) this.seen.set(entityType, (set = new Set()));
    return set;
  }

  fail(rt: ResourceType, resource: SourceResource, error: unknown, counts: BundleCounts): void {
    counts.failed++;
    const reason = reasonOf(error);
    this.report.failures.push({ type: rt.type, uuid: resource.id, reason });
    this.progress.note(`Failed ${rt.type} ${resource.id}: ${reason}`, { failed: rt.type, uuid: resource.id, reason });
  }
}

export function reasonOf(error: unknown): string {
  if (error instanceof ValidationError) return error.violations.map((v) => v.detail).join(' ');
  if (error instanceof ApiError) return error.detail;
  if (error instanceof SourceError) return error.message;
  return error instanceof Error ? error.message : String(error);
}
