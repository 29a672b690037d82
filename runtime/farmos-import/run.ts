/**
 * `tilth import farmos`: copy a farm from a farmOS (or Tilth) server into this database, in
 * dependency order (users, files, taxonomy terms, data streams, farm organizations, assets,
 * quantities, logs, then the readings of data streams), a page per transaction. Each record is
 * stored as it was (records.ts) and noted in the import map (mapping.ts) in the same transaction; a
 * record the map already holds with the same digest is not written again, so a run that was killed
 * resumes, and a second run of an unchanged farm writes nothing. A record type read to its end with
 * nothing failed leaves a mark: the next run asks the source only for its records changed since (at
 * or after). A record that cannot be stored is reported by UUID with the reason and the rest goes
 * on; one whose relationship names a record of its own entity type not here yet (a parent on a
 * later page) waits until the end of its phase. The farm's computed locations and groups are
 * rebuilt once, at the end, for every asset: each page that writes leaves the request for it in its
 * transaction, so a run killed before the end leaves it too.
 *
 * This file is the run (its phases, marks and the rebuild at the end); its jobs are files of their
 * own over its state (run-state.ts): the pages (pages.ts), the files (files.ts), the readings
 * (copy-readings.ts) and pruning (prune.ts).
 */
import type { AppContext } from '../context.ts';
import type { ResourceType } from '../model/registry.ts';
import { FarmSource, SourceError, type SourceResource } from './source.ts';
import type { BundleCounts, Progress } from './progress.ts';
import { ImportRun, IMPORT_ORDER, type ImportReport, type ImportOptions } from './run-state.ts';
import { loadUsers, storePage, retryDeferred, matchPageUsers } from './pages.ts';
import { sweepUnrecordedBytes } from './files.ts';
import { copyReadings } from './copy-readings.ts';
import { prune } from './prune.ts';

export { IMPORT_ORDER, systemPrincipal, type Failure, type ImportReport, type ImportOptions } from './run-state.ts';

/**
 * Seconds before the source's time when a bundle's reading began that the next run reads from: a
 * write at the source that began before (its `changed` is its start) and committed while this run
 * read is not missed.
 */
const MARK_MARGIN_SECONDS = 60;

/**
 * Read whole on every run: users (few; each run matches them by name), data streams (few; their
 * readings change without their `changed`, and each run compares them) and files: a file uploaded
 * at the source is kept (its `status` turns true) when a record first refers to it, and its
 * `changed` does not move. File records are few beside logs, and one whose digest is unchanged
 * costs its share of a page read, nothing more (its bytes are downloaded only when it changed).
 * Reading back what verification found different would cost a second pass and still leave a run
 * with --no-verify behind.
 */
const READ_WHOLE = new Set(['user', 'file', 'data_stream']);

/** Resource types of /api that are configuration (bundles, roles, flags…), not records to copy. */
function isConfigType(type: string): boolean {
  const [entityType, bundle] = type.split('--');
  return (
    (entityType === bundle && !['user', 'file'].includes(entityType!)) ||
    /_type$/.test(entityType!) ||
    entityType === 'taxonomy_vocabulary'
  );
}

/** The resource types the source serves (its /api links), split into what this farm has and what it has not. */
export async function sourceTypes(
  source: FarmSource,
  ctx: AppContext,
): Promise<{ supported: ResourceType[]; unsupported: string[] }> {
  // Read once per source (its version, its shape, its links): the run and its verification share it.
  const { document } = await source.entryPoint();
  const links = Object.keys(document.links);
  const supported: ResourceType[] = [];
  const unsupported: string[] = [];
  for (const type of links.filter((k) => k.includes('--') && !isConfigType(k))) {
    const rt = ctx.registry.get(type);
    if (rt && (IMPORT_ORDER as readonly string[]).includes(rt.entityType.entityType)) supported.push(rt);
    else unsupported.push(type);
  }
  const rank = (rt: ResourceType) => IMPORT_ORDER.indexOf(rt.entityType.entityType as (typeof IMPORT_ORDER)[number]);
  supported.sort((a, b) => rank(a) - rank(b) || a.type.localeCompare(b.type));
  return { supported, unsupported: unsupported.sort() };
}

export class FarmImport {
  /** The run's state, shared by its jobs (run-state.ts). */
  private readonly state: ImportRun;

  constructor(ctx: AppContext, source: FarmSource, progress: Progress, options: ImportOptions = {}) {
    this.state = new ImportRun(ctx, source, progress, options);
  }

  async run(): Promise<ImportReport> {
    const { supported, unsupported } = await sourceTypes(this.state.source, this.state.ctx);
    this.state.report.unsupported = unsupported;
    for (const type of unsupported)
      this.state.progress.note(`Skipped ${type}: this farm has no such record type.`, { skipped: type });
    await loadUsers(this.state);
    for (const entityType of IMPORT_ORDER) {
      const bundles = supported.filter((rt) => rt.entityType.entityType === entityType);
      if (!bundles.length) continue;
      const sinces = new Map<string, number | null>();
      for (const rt of bundles) sinces.set(rt.type, await this.changedSince(rt));
      this.state.progress.phase(bundles[0]!.entityType.labelPlural, await this.expected(bundles, sinces));
      if (entityType === 'file') await sweepUnrecordedBytes(this.state);
      const deferred: Array<{ rt: ResourceType; resource: SourceResource; counts: BundleCounts }> = [];
      const marks: Array<{ rt: ResourceType; counts: BundleCounts; at: number | null }> = [];
      for (const rt of bundles) {
        const counts: BundleCounts = { type: rt.type, read: 0, created: 0, updated: 0, unchanged: 0, failed: 0 };
        this.state.report.counts.push(counts);
        let last = '';
        const since = sinces.get(rt.type) ?? null;
        if (since === null) this.state.readWhole.add(rt.type);
        // The next run reads from the source's time now, less a margin: a record written at the source
        // while this run reads (after its page went by) is read by the next run.
        marks.push({
          rt,
          counts,
          at: this.state.source.sourceNow === null ? null : this.state.source.sourceNow - MARK_MARGIN_SECONDS,
        });
        try {
          for await (const page of this.state.source.pagesInLanes(
            rt.type,
            rt.entityType.internalId,
            since === null ? {} : { changedSince: since },
          )) {
            counts.read += page.length;
            for (const r of page) this.state.seenSet(entityType).add(r.id);
            const later = await storePage(this.state, rt, page, counts);
            deferred.push(...later.map((resource) => ({ rt, resource, counts })));
            last = page[page.length - 1]!.id;
            this.state.progress.advance(page.length);
          }
        } catch (error) {
          // A page the source would not give (after its retries): the rest of this bundle is
          // unknown, so named as such; the other bundles go on, and --prune does not run.
          if (!(error instanceof SourceError)) throw error;
          this.state.fail(
            rt,
            { type: rt.type, id: last ? `(the page after ${last})` : '(its first page)' },
            error,
            counts,
          );
        }
      }
      await retryDeferred(this.state, deferred);
      // A bundle read to its end with nothing failed: the next run asks only for what changed since.
      // One with a failure is read whole again, so that what failed is tried again.
      for (const m of marks)
        if (m.at !== null && !m.counts.failed && !READ_WHOLE.has(entityType))
          await this.state.map.setMark(this.state.ctx.db.knex, m.rt.type, m.at);
      this.state.progress.done();
      if (entityType === 'user') await loadUsers(this.state);
    }
    const streams = supported.find((rt) => rt.entityType.entityType === 'data_stream');
    if (streams) await copyReadings(this.state, streams);
    if (this.state.options.prune) await prune(this.state, supported);
    await this.rebuildPlacements();
    return this.state.report;
  }

  /**
   * About how many records a phase has, for the time left: the highest of its bundles' own numbers
   * (an entity type's bundles share one numbering; deleted records make it high). Not known (null)
   * when a bundle is read from a mark (only what changed), or the source will not say.
   */
  private async expected(bundles: ResourceType[], sinces: Map<string, number | null>): Promise<number | null> {
    if (bundles.some((rt) => sinces.get(rt.type) !== null)) return null;
    let top = 0;
    for (const rt of bundles) {
      const n = await this.state.source.highest(rt.type, rt.entityType.internalId).catch(() => null);
      if (n === null) continue;
      top = Math.max(top, n);
    }
    return top || null;
  }

  /** The source time to read a bundle from (records changed at or after it), or null: all of it. */
  private async changedSince(rt: ResourceType): Promise<number | null> {
    if (READ_WHOLE.has(rt.entityType.entityType)) return null;
    return this.state.map.mark(this.state.ctx.db.knex, rt.type);
  }

  /** Source users here under another UUID (the same name): their records' references follow them. */
  get userRemap(): Map<string, string> {
    return this.state.w.userRemap;
  }

  /** Match the source's users to this farm's, without copying anything (for --verify-only). */
  async matchUsers(): Promise<Map<string, string>> {
    await loadUsers(this.state);
    const rt = this.state.ctx.registry.get('user--user');
    if (rt)
      for await (const page of this.state.source.pages(rt.type, rt.entityType.internalId))
        await matchPageUsers(this.state, page);
    return this.state.w.userRemap;
  }

  /**
   * Every asset's locations and groups, computed from the logs now here, a thousand assets per
   * transaction, when a page written (by this run or a killed one) asked for it.
   */
  private async rebuildPlacements(): Promise<void> {
    this.state.progress.phase('computed locations and groups');
    this.state.report.assetsRebuilt = await this.state.placements.rebuildIfPending(this.state.ctx.db.knex);
    // The adjustments it copied that are dated ahead count from their time: their moments, for the server's timer.
    await this.state.ctx.services.inventories.recordAllDue(this.state.ctx.db.knex);
    this.state.progress.advance(this.state.report.assetsRebuilt);
    this.state.progress.done();
  }
}
