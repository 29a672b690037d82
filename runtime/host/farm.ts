/**
 * One farm, opened: its settings, database, model (generated/ and the site folder's), its
 * services graph (context.ts buildFarmServices: one RecordStore, one Placements, one FileStore…),
 * its rate limiters (in memory on SQLite, in the database on PostgreSQL: access/rate-limiter.ts),
 * its OAuth parts, and its timers (the due-changes timer and the tombstone pruner). `openFarm()` is
 * the one path `tilth serve` (server.ts) and every command (cli/database.ts) open a farm by;
 * `close()` stops its timers and closes its database. ARCHITECTURE.md lists what state is per farm
 * and what per process.
 */
import type { Config, FarmSettings } from '../config.ts';
import type { AppContext, FarmServices } from '../context.ts';
import { buildFarmServices } from '../context.ts';
import type { ProcessContext } from './process.ts';
import { openDatabase, openExistingDatabase, type Database } from '../storage/database.ts';
import { assertMigrated } from '../storage/migrations.ts';
import { claimSqliteDirectory } from '../storage/process-lock.ts';
import { DueChanges } from '../storage/due-changes.ts';
import { TombstonePruner } from '../storage/change-feed.ts';
import { loadGenerated, DEFAULT_GENERATED_DIR, type GeneratedArtifacts } from '../generated.ts';
import { ModelRegistry } from '../model/registry.ts';
import { PasswordGuard } from '../accounts/password-guard.ts';
import { knownAddressesFor } from '../accounts/known-addresses.ts';
import { limiterFor } from '../access/rate-limiter.ts';
import { createOAuth, type OAuthComponents } from '../oauth/index.ts';

export interface OpenFarmOptions {
  /**
   * What the farm is opened for:
   * - `serve`: the server's (server.ts): the database is created if missing and, on SQLite, the
   *   data folder claimed for this process; migrations are the server's to check or apply.
   * - `migrate`: `tilth migrate`'s: created if missing, not checked.
   * - `command` (the default): every other command's: only a database that exists
   *   (storage/database.ts openExistingDatabase), named through `opened`, then checked to be
   *   migrated to this code.
   * - `backup`: `tilth backup`'s: as `command`, but not checked to be migrated: a backup is of the
   *   farm as it is, whichever release migrated it last (an older one, just before an upgrade).
   */
  use?: 'serve' | 'migrate' | 'command' | 'backup';
  generatedDir?: string;
  /** Called once the database is open, before anything is read from it (a command names it on stderr). */
  opened?: (db: Database) => void;
}

export class Farm {
  private registryMemo: ModelRegistry | null = null;
  private servicesMemo: FarmServices | null = null;
  private passwordsMemo: PasswordGuard | null = null;
  private ctxMemo: AppContext | null = null;
  private oauthMemo: OAuthComponents | null = null;
  private timers: Array<{ stop(): Promise<void> }> = [];
  private closing: Promise<void> | null = null;

  constructor(
    readonly process: ProcessContext,
    /** Both halves, as the faces read them (ctx.config); `settings` is the farm's. */
    readonly config: Config,
    readonly db: Database,
    readonly generated: GeneratedArtifacts,
    private readonly claim: { release(): void } | null,
    registry: ModelRegistry | null = null,
  ) {
    this.registryMemo = registry;
  }

  get settings(): FarmSettings {
    return this.config;
  }

  /** The record types switched on (built on first use: a command that touches no record never checks TILTH_MODULES, as before). */
  get registry(): ModelRegistry {
    return (this.registryMemo ??= new ModelRegistry(this.generated.model, this.config.modules));
  }

  /** Checks passwords and counts failures per account: in the database on PostgreSQL, so that every process of the farm, commands too, counts together. */
  get passwords(): PasswordGuard {
    return (this.passwordsMemo ??= new PasswordGuard(
      limiterFor(this.db, 'password', this.config.rateLimit.perUsername, this.config.rateLimit.windowSeconds),
      knownAddressesFor(this.db),
    ));
  }

  /** The services graph, built once (context.ts buildFarmServices). */
  get services(): FarmServices {
    return (this.servicesMemo ??= buildFarmServices(this.config, this.registry, this.passwords));
  }

  /** The context every face, importer and command that saves records is handed. */
  get ctx(): AppContext {
    return (this.ctxMemo ??= {
      config: this.config,
      db: this.db,
      registry: this.registry,
      generated: this.generated,
      logger: this.process.logger,
      passwords: this.passwords,
      bodies: this.process.bodies,
      services: this.services,
      internalUrl: '',
      internalUrl4: '',
    });
  }

  /** The farm's authorization server (its routes, bearer authentication, CORS, address limiter); call its bootstrap() before serving. */
  get oauth(): OAuthComponents {
    return (this.oauthMemo ??= createOAuth(this.ctx));
  }

  /**
   * Start the farm's timers: records whose computed fields change when a moment comes get a new
   * version then (storage/due-changes.ts); tombstones older than the days a cursor stays good go,
   * at start and hourly (storage/change-feed.ts).
   */
  startTimers(): void {
    const logger = this.process.logger;
    const due = new DueChanges(
      this.db.knex,
      new Map(Object.entries(this.registry.model.entityTypes).map(([entityType, et]) => [entityType, et.table])),
      (err) => logger.warn({ err }, 'giving records due to change a new version failed'),
    );
    due.start();
    const tombstones = new TombstonePruner(this.db.knex, this.config.tombstoneDays, (err) =>
      logger.warn({ err }, 'pruning the change feed failed'),
    );
    tombstones.start();
    this.timers.push(due, tombstones);
  }

  /** Stop the timers (each finishes what it is doing), in the order they started. */
  async stopTimers(): Promise<void> {
    const timers = this.timers;
    this.timers = [];
    for (const timer of timers) await timer.stop();
  }

  /** Stop the timers, close the database and let the SQLite data folder go; once, however often called. */
  close(): Promise<void> {
    return (this.closing ??= (async () => {
      try {
        await this.stopTimers();
        await this.db.close();
      } finally {
        this.claim?.release();
      }
    })());
  }
}

/** Open the farm `config` describes, for `options.use` (OpenFarmOptions); on failure nothing stays open. */
export async function openFarm(process: ProcessContext, config: Config, options: OpenFarmOptions = {}): Promise<Farm> {
  const use = options.use ?? 'command';
  if (use === 'command' || use === 'backup') {
    // The database first: a command with the wrong settings is told there is no farm there before anything else.
    const db = await openExistingDatabase(config);
    try {
      options.opened?.(db);
      const generated = await loadGenerated(options.generatedDir, config.siteDir);
      if (use === 'command') await assertMigrated(db.knex, generated.migrations);
      return new Farm(process, config, db, generated, null);
    } catch (error) {
      await db.close();
      throw error;
    }
  }
  const generated = await loadGenerated(options.generatedDir ?? DEFAULT_GENERATED_DIR, config.siteDir);
  // The server checks TILTH_MODULES before it creates a database; `tilth migrate` never needed the model.
  const registry = use === 'serve' ? new ModelRegistry(generated.model, config.modules) : null;
  const db = openDatabase(config);
  try {
    options.opened?.(db);
    // One process serves an SQLite file (storage/process-lock.ts); commands beside it are not affected.
    const claim = use === 'serve' && db.dialect === 'sqlite' ? claimSqliteDirectory(config.dataDir) : null;
    return new Farm(process, config, db, generated, claim, registry);
  } catch (error) {
    await db.close();
    throw error;
  }
}
