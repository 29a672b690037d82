/**
 * What every part of a running farm shares: its settings, database, model, the process's logger
 * and body budget, and its services graph (built once per farm by host/farm.ts, used by the
 * JSON:API face, the importers and the CLI alike). Nothing per-request lives here.
 */
import type { Logger } from 'pino';
import type { Config } from './config.ts';
import type { Database } from './storage/database.ts';
import type { ModelRegistry } from './model/registry.ts';
import type { GeneratedArtifacts } from './generated.ts';
import type { PasswordGuard } from './accounts/password-guard.ts';
import type { BodyLimits } from './access/body-limits.ts';
import { RecordStore } from './storage/records.ts';
import { FileStore } from './files/storage.ts';
import { Placements } from './farm/placements.ts';
import { InventoryChanges } from './farm/inventory.ts';
import { RecordLoader } from './farm/loader.ts';
import { LogGeometry } from './farm/log-geometry.ts';
import { EntityService } from './entities/service.ts';

/**
 * The farm's services graph: one of each, sharing one RecordStore and one Placements (and so the
 * SQL text and statements they keep), and one FileStore with the farm's upload limits.
 */
export interface FarmServices {
  store: RecordStore;
  placements: Placements;
  /** The assets whose computed inventory changes with a save or a moment (farm/inventory.ts). */
  inventories: InventoryChanges;
  /** Records with their computed fields (farm/loader.ts). */
  loader: RecordLoader;
  /** Saving records: defaults, farm behaviour, account rules, revisions (entities/service.ts). */
  entities: EntityService;
  /** Uploaded files on disk, under the data folder (files/storage.ts). */
  files: FileStore;
}

/** Build a farm's services graph, once (host/farm.ts). */
export function buildFarmServices(
  config: Pick<Config, 'baseUrl' | 'dataDir' | 'uploadMaxBytes' | 'bodyTimeoutSeconds'>,
  registry: ModelRegistry,
  passwords: PasswordGuard,
): FarmServices {
  const store = new RecordStore(registry);
  const placements = new Placements(registry);
  const inventories = new InventoryChanges(registry);
  const loader = new RecordLoader(registry, config.baseUrl, { store, placements });
  const entities = new EntityService(store, new LogGeometry(loader), passwords, { placements, inventories });
  const files = new FileStore(config.dataDir, {
    maxBytes: config.uploadMaxBytes,
    stallMs: config.bodyTimeoutSeconds * 1000,
  });
  return { store, placements, inventories, loader, entities, files };
}

export interface AppContext {
  /** The farm's settings and the process's (config.ts: Config is both halves). */
  config: Config;
  db: Database;
  registry: ModelRegistry;
  generated: GeneratedArtifacts;
  /** The process's logger (host/process.ts). */
  logger: Logger;
  /** Checks passwords and counts failures per account (in the database on PostgreSQL, so every process of the farm counts together). */
  passwords: PasswordGuard;
  /** What request bodies read into memory may cost: stall time and bytes held at once (one budget for the whole process: host/process.ts). */
  bodies: BodyLimits;
  /** The farm's services graph, built once (buildFarmServices). */
  services: FarmServices;
  /** Where this process itself can be reached over loopback (set once listening); subrequests use it. */
  internalUrl: string;
  /** The same for the TILTH_API4_PORT server ('' without one): a 4.x request's subrequests stay in the 4.x shape. */
  internalUrl4: string;
}
