/**
 * Storing readings of basic data streams (farm/data-streams.ts), as the data endpoints of a data
 * stream and of a sensor do (farmOS's DataStreamController and SensorDataController): each post
 * in one transaction, after the face has checked its key and read its body (no transaction waits
 * on the network). A sensor's post first gives the sensor a basic data stream for each value name
 * it lacks, saved through the entity service as anonymous (devices hold no account).
 */
import type { Knex } from 'knex';
import type { ResourceType } from '../model/registry.ts';
import type { Db, EntityRecord, Reference } from '../storage/records.ts';
import { lockToChange } from '../storage/locks.ts';
import { write } from '../storage/transactions.ts';
import { ANONYMOUS } from '../access/principal.ts';
import type { RecordLoader } from '../farm/loader.ts';
import type { EntityService } from '../entities/service.ts';
import {
  insertReadings,
  PostRefused,
  type PostedReadings,
  type Reading,
  type StreamRef,
} from '../farm/data-streams.ts';

/** Value names a sensor may introduce in one post (each becomes a data stream). */
const MAX_NEW_STREAMS_PER_POST = 100;
/** The longest value name: it becomes a data stream's name. */
const NAME_MAX_LENGTH = 255;

/** A data stream record as the readings functions name it: its id and name. */
export function streamRef(record: EntityRecord): StreamRef {
  return { id: record.id, name: String(record.values.get('name') ?? '') };
}

export class ReadingCommands {
  constructor(
    private readonly knex: Knex,
    private readonly loader: RecordLoader,
    private readonly entities: EntityService,
  ) {}

  /** Store readings of one data stream. */
  async postToStream(stream: StreamRef, readings: readonly Reading[]): Promise<void> {
    await write(this.knex, (trx) =>
      insertReadings(
        trx,
        readings.map((r) => ({ streamId: stream.id, timestamp: r.timestamp, value: r.value })),
      ),
    );
  }

  /**
   * Store a sensor's readings: a basic data stream for every value name posted, numeric or not
   * (as farmOS), created and linked to the sensor when it has none of that name; then the
   * numeric readings into them. Refused (`PostRefused`) before anything is written when a name
   * is too long for a stream's name, or when the post would give the sensor too many new streams.
   */
  async postToSensor(rt: ResourceType, sensor: EntityRecord, posted: PostedReadings): Promise<void> {
    const tooLong = posted.names.find((n) => n.length > NAME_MAX_LENGTH);
    if (tooLong)
      throw new PostRefused(
        null,
        `The value name "${tooLong.slice(0, 40)}…" is longer than ${NAME_MAX_LENGTH} characters; it names a data stream.`,
      );
    await write(this.knex, async (trx) => {
      // Serialise posts to one sensor, so that two of them do not both create a stream for a new
      // name. FOR NO KEY UPDATE (storage/locks.ts), not FOR UPDATE as before: two posts still
      // take turns, but a post no longer waits on every log save naming the sensor (each holds
      // a KEY SHARE lock on it), nor they on it. Step 1 of the global lock order (storage/locks.ts).
      await lockToChange(trx, rt.entityType.table, [sensor.id]);
      const streams = await this.ensureStreams(trx, sensor.id, posted.names);
      const ids = new Map(streams.map((st) => [st.name, st.id]));
      await insertReadings(
        trx,
        posted.readings.map((r) => ({ streamId: ids.get(r.name)!, timestamp: r.timestamp, value: r.value })),
      );
    });
  }

  /** The basic data streams a sensor references, in its order. */
  async streamsOf(db: Db, sensor: EntityRecord): Promise<StreamRef[]> {
    const refs = ((sensor.values.get('data_stream') as Reference[] | undefined) ?? []).filter(Boolean);
    if (!refs.length) return [];
    const records = await this.loader.load(
      db,
      'data_stream',
      refs.map((r) => r.targetId),
      null,
    );
    return records.filter((r) => r.bundle === 'basic').map(streamRef);
  }

  /**
   * The sensor's basic streams for these value names, creating (and linking) those it lacks, as
   * farmOS's SensorDataController::createDataStream does. Runs in the post's transaction.
   */
  private async ensureStreams(trx: Db, sensorId: number, names: string[]): Promise<StreamRef[]> {
    const [sensor] = await this.loader.load(trx, 'asset', [sensorId], null);
    const existing = await this.streamsOf(trx, sensor!);
    const have = new Set(existing.map((st) => st.name));
    const missing = names.filter((n) => !have.has(n));
    if (!missing.length) return existing;
    if (missing.length > MAX_NEW_STREAMS_PER_POST) {
      throw new PostRefused(
        null,
        `The post names ${missing.length} new values; a sensor may gain at most ${MAX_NEW_STREAMS_PER_POST} data streams per post.`,
      );
    }
    const streamRt = this.loader.registry.get('data_stream--basic')!;
    const created: StreamRef[] = [];
    for (const name of missing) {
      const { id } = await this.entities.create(
        trx,
        streamRt,
        { values: new Map([['name', name]]), secrets: new Map() },
        ANONYMOUS,
      );
      created.push({ id, name });
    }
    const refs = [
      ...((sensor!.values.get('data_stream') as Reference[] | undefined) ?? []).filter(Boolean),
      ...created.map((c) => ({ targetId: c.id, meta: {} }) as Reference),
    ];
    await this.entities.update(
      trx,
      sensor!,
      { values: new Map([['data_stream', refs]]), secrets: new Map() },
      ANONYMOUS,
    );
    return [...existing, ...created];
  }
}
