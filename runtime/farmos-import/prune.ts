/** `tilth import farmos --prune`: what earlier runs copied and the source no longer lists is deleted, as an API DELETE would. */
import type { ResourceType } from '../model/registry.ts';
import { chunks } from '../storage/records.ts';
import { describeReferrers, recordName, splitReferenced, type Referrers } from '../entities/reference-integrity.ts';
import { SourceError } from './source.ts';
import { IMPORT_ORDER, type ImportRun } from './run-state.ts';
import { write } from '../storage/transactions.ts';

/** --prune: delete what this source's earlier runs copied and it no longer lists. */
export async function prune(run: ImportRun, supported: ResourceType[]): Promise<void> {
  if (run.report.failures.length) {
    run.progress.note('Not pruning: some records failed, and what the source lists is not known for certain.');
    return;
  }
  const store = run.services.store;
  // Bundles read from a mark listed only what changed: the rest of their UUIDs, their numbers only.
  for (const rt of supported.filter((r) => !run.readWhole.has(r.type))) {
    try {
      for await (const page of run.source.pagesInLanes(rt.type, rt.entityType.internalId, { idsOnly: true }))
        for (const r of page) run.seenSet(rt.entityType.entityType).add(r.id);
    } catch (error) {
      if (!(error instanceof SourceError)) throw error;
      run.progress.note(`Not pruning: listing ${rt.type} failed (${error.message}).`);
      return;
    }
  }
  const knex = run.ctx.db.knex;
  // Referencing records first (logs, then quantities, assets…): the reverse of IMPORT_ORDER.
  const types = [...IMPORT_ORDER]
    .reverse()
    .filter((entityType) => supported.some((rt) => rt.entityType.entityType === entityType));
  const gone = new Map<string, string[]>();
  const going = new Map<string, Set<number>>();
  for (const entityType of types) {
    const seen = run.seen.get(entityType) ?? new Set();
    const uuids = (await run.map.uuids(knex, entityType)).filter((u) => !seen.has(u));
    gone.set(entityType, uuids);
    const ids = new Set<number>();
    for (const part of chunks(uuids, 500))
      for (const r of (await knex(store.entityType(entityType).table).whereIn('uuid', part).select('id')) as Array<{
        id: number;
      }>)
        ids.add(Number(r.id));
    going.set(entityType, ids);
  }
  // A record that a record staying here references is kept, as a DELETE refuses it
  // (entities/reference-integrity.ts); references among the records going do not count, whatever
  // their order (a sensor and its data stream name each other). Settled across the types first,
  // then checked again in each deletion once its records are locked.
  for (let more = true; more;) {
    more = false;
    for (const [entityType, ids] of going) {
      const { kept } = await splitReferenced(knex, store, entityType, [...ids], going);
      for (const id of kept.keys()) ids.delete(id);
      more ||= kept.size > 0;
    }
  }
  for (const entityType of types) {
    const uuids = gone.get(entityType)!;
    if (!uuids.length) continue;
    const table = store.entityType(entityType).table;
    const paths: string[] = [];
    const notPruned: Array<{ uuid: string; line: string }> = [];
    let keptCount = 0;
    await write(knex, async (trx) => {
      const rows: Array<{ id: number; uuid: string; path?: string | null }> = [];
      for (const part of chunks(uuids, 500))
        rows.push(
          ...((await trx(table)
            .whereIn('uuid', part)
            .select(entityType === 'file' ? ['id', 'uuid', 'path'] : ['id', 'uuid'])) as typeof rows),
        );
      await run.placements.requestRebuild(trx);
      // A server may be serving this database meanwhile (a farm synced again while in use): on
      // PostgreSQL the records are locked, then the records whose references go, as an API
      // DELETE locks them (entities/deletion-locks.ts), so that a save of one waits for this
      // instead of deadlocking with it or having its new reference to a pruned record missed.
      // EntityService.deleteMany takes the locks and checks the references once they are taken.
      let kept = new Map<number, Referrers[]>();
      await run.services.entities.deleteMany(
        trx,
        entityType,
        rows.map((r) => Number(r.id)),
        {
          going: async (ids) => {
            const split = await splitReferenced(trx, store, entityType, ids, going);
            kept = split.kept;
            return split.deletable;
          },
        },
      );
      for (const id of kept.keys()) going.get(entityType)!.delete(id);
      for (const record of await store.load(trx, entityType, [...kept.keys()])) {
        notPruned.push({
          uuid: record.uuid,
          line: `${recordName(record)} is gone from the source, and not pruned: it is referenced by ${await describeReferrers(trx, store, kept.get(record.id)!)}.`,
        });
      }
      // A record kept stays in the map: a later run prunes it once nothing here names it.
      const keptUuids = new Set(rows.filter((r) => kept.has(Number(r.id))).map((r) => r.uuid));
      keptCount = keptUuids.size;
      await run.map.forget(
        trx,
        entityType,
        uuids.filter((u) => !keptUuids.has(u)),
      );
      for (const r of rows) if (typeof r.path === 'string' && !keptUuids.has(r.uuid)) paths.push(r.path);
    });
    // A pruned file's bytes go once its record is gone for good.
    for (const path of paths) run.files.remove(path);
    for (const { uuid, line } of notPruned) run.progress.note(line, { notPruned: entityType, uuid });
    const pruned = uuids.length - keptCount;
    run.report.pruned += pruned;
    if (pruned)
      run.progress.note(`Pruned ${pruned} ${entityType} record(s) the source no longer has.`, {
        pruned: entityType,
        count: pruned,
      });
  }
}
