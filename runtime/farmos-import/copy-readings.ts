/** The readings of data streams in `tilth import farmos`, copied after every record (readings.ts sums and spools them). */
import type { ResourceType } from '../model/registry.ts';
import { deleteReadings, insertReadings, READINGS_TABLE } from '../farm/data-streams.ts';
import { SourceError } from './source.ts';
import { sourceDigest, spooledReadings, spoolSourceReadings } from './readings.ts';
import { READINGS_BY_STREAM, READINGS_COUNTS, type BundleCounts } from './progress.ts';
import { reasonOf, type ImportRun } from './run-state.ts';
import { write } from '../storage/transactions.ts';

/**
 * Each data stream's readings, replaced when they differ from what was copied last time, a page
 * at a time (readings.ts): a stream copied before is first summed up at the source (one read);
 * only when that differs, or the stream is new here, are its readings read again and written, in
 * one transaction per stream (a stream is never left half copied), a page of them at a time.
 * Counted by stream, in the summary as in the progress lines: a stream's readings are copied
 * whole or not at all, and which of the readings of a replaced stream differed is not known.
 */
export async function copyReadings(run: ImportRun, rt: ResourceType): Promise<void> {
  const uuids = [...(run.seen.get('data_stream') ?? [])];
  if (!uuids.length) return;
  run.progress.phase(READINGS_BY_STREAM, uuids.length);
  const counts: BundleCounts = { type: READINGS_COUNTS, read: 0, created: 0, updated: 0, unchanged: 0, failed: 0 };
  run.report.counts.push(counts);
  const known = await run.map.rows(run.ctx.db.knex, 'data_stream_readings', uuids);
  for (const uuid of uuids) {
    try {
      const recorded = known.get(uuid)?.digest;
      if (recorded) {
        const there = await sourceDigest(run.source, uuid);
        if (there.digest() === recorded) {
          counts.read++;
          counts.unchanged++;
          run.progress.advance(1);
          continue;
        }
      }
      // Read from the source first, into a file: the transaction that replaces the readings waits
      // on the disk only, never on the source.
      const spooled = await spoolSourceReadings(run.source, uuid, run.files.temporaryPath());
      try {
        await write(run.ctx.db.knex, async (trx) => {
          const stream = await run.services.store.findByUuid(trx, 'data_stream', uuid);
          if (!stream) throw new SourceError('its data stream was not stored.');
          const before = Number(
            (
              (await trx(READINGS_TABLE).where('stream_id', stream.id).count({ n: '*' })) as Array<{
                n: number | string;
              }>
            )[0]!.n,
          );
          await deleteReadings(trx, stream.id);
          for await (const page of spooledReadings(spooled.file)) {
            await insertReadings(
              trx,
              page.map(([timestamp, value]) => ({ streamId: stream.id, timestamp, value })),
            );
          }
          // What is written is what is summed up: the map's digest is of the readings stored.
          await run.map.recordMany(trx, 'data_stream_readings', [
            {
              resource: { type: 'data_stream_readings', id: uuid },
              changed: null,
              digest: spooled.digest.digest(),
              bundle: rt.bundle.bundle,
            },
          ]);
          counts.read++;
          if (before || recorded) counts.updated++;
          else counts.created++;
        });
      } finally {
        spooled.discard();
      }
    } catch (error) {
      counts.failed++;
      run.report.failures.push({ type: 'data_stream readings', uuid, reason: reasonOf(error) });
      run.progress.note(`Failed the readings of data stream ${uuid}: ${reasonOf(error)}`, { failed: 'readings', uuid });
    }
    run.progress.advance(1);
  }
  run.progress.done();
}
