/**
 * The data endpoints of data streams and sensors, outside JSON:API as in farmOS:
 *
 * - `/api/data_stream/{uuid}/data` (data_stream module, DataStreamController + Basic.php)
 * - `/asset/{uuid}/data/basic` (farm_sensor, SensorDataController)
 * - `/farm/sensor/listener/{public_key}` (farm_sensor_listener, the farmOS 1.x URL)
 *
 * GET returns readings newest first (`start`, `end`, `limit`, `offset`, `name`) to anyone when the
 * stream or sensor is public, to a request carrying its `private_key`, or to a bearer token that
 * may view it. POST stores readings and needs the `private_key` query parameter: devices hold no
 * OAuth token. A sensor's POST creates a basic data stream for each new value name and links it to
 * the sensor. Non-numeric values are skipped and unreadable timestamps are the time of the post, as
 * in farmOS. A POST's key is checked before its body is read (a stranger's body is never read),
 * and bodies are read whole, within the body limits, before any transaction starts; a refused
 * post writes nothing.
 */
import express, { Router, type NextFunction, type Request, type Response } from 'express';
import type { AppContext } from '../context.ts';
import type { ResourceType } from '../model/registry.ts';
import type { Db, EntityRecord, Reference } from '../storage/records.ts';
import { lockToChange } from '../storage/locks.ts';
import { ANONYMOUS, principalOf, type Principal } from '../access/principal.ts';
import { isAuthenticated, mayOnType } from '../access/policy.ts';
import { JsonApiServices } from '../jsonapi/handlers/services.ts';
import { UUID } from '../jsonapi/input.ts';
import { ApiError, badRequest, forbidden, methodNotAllowed, notFound } from '../errors.ts';
import {
  insertReadings,
  keysMatch,
  queryReadings,
  readingsFromPayload,
  readingsQueryFrom,
  type StreamRef,
} from '../farm/data-streams.ts';
import { write } from '../storage/transactions.ts';

/** Largest readings body accepted: the same as a JSON:API document. */
const BODY_LIMIT_BYTES = 4 * 1024 * 1024;
/** Value names a sensor may introduce in one post (each becomes a data stream). */
const MAX_NEW_STREAMS_PER_POST = 100;
const NAME_MAX_LENGTH = 255;
const ALLOWED = ['GET', 'POST'];

/** Where dataStreamRoutes answers: every path of its routes starts with one of these (app.ts scopes it to them). */
export const DATA_STREAM_PATHS = ['/api/data_stream/', '/asset/', '/farm/sensor/listener/'];

export function dataStreamRoutes(ctx: AppContext): Router {
  const s = new JsonApiServices(ctx);
  const router = Router();
  const readRaw = ctx.bodies.read(express.raw({ type: () => true, limit: BODY_LIMIT_BYTES }), {
    limitBytes: BODY_LIMIT_BYTES,
  });
  /** The posted readings, once the caller has shown the key: read, then parsed as JSON. */
  const readPayload = (req: Request, res: Response): Promise<unknown> =>
    new Promise((resolve, reject) => {
      readRaw(req, res, (error?: unknown) => {
        if (error) return reject(bodyError(error));
        try {
          resolve(parseBody(req));
        } catch (e) {
          reject(e);
        }
      });
    });

  const streamType = (): ResourceType => {
    const rt = ctx.registry.get('data_stream--basic');
    if (!rt) throw notFound('Data streams are not available on this server.');
    return rt;
  };
  const sensorType = (): ResourceType => {
    const rt = ctx.registry.get('asset--sensor');
    if (!rt) throw notFound('Sensor assets are not available on this server.');
    return rt;
  };

  /** GET or POST, else 405 with Allow; a POST's handler reads its body with readPayload once the key matches. */
  const endpoint =
    (handler: (req: Request, res: Response) => Promise<void>) => (req: Request, res: Response, next: NextFunction) => {
      if (!ALLOWED.includes(req.method)) return next(methodNotAllowed(req.method, ALLOWED));
      handler(req, res).catch(next);
    };

  router.all(
    '/api/data_stream/:uuid/data',
    endpoint(async (req, res) => {
      const rt = streamType();
      const stream = await loadByUuid(s, rt, String(req.params.uuid));
      const params = searchParams(req);
      if (req.method === 'GET') {
        assertMayRead(stream, params, principalOf(res), rt);
        const query = readingsQueryFrom(params);
        res.json(await queryReadings(s.knex, [streamRef(stream)], query));
        return;
      }
      assertKey(stream, params);
      const payload = await readPayload(req, res);
      const name = streamRef(stream).name;
      const { readings } = readingsFromPayload(payload, nowSeconds(), (key) => key === name);
      await write(s.knex, (trx) =>
        insertReadings(
          trx,
          readings.map((r) => ({ streamId: stream.id, timestamp: r.timestamp, value: r.value })),
        ),
      );
      res.status(201).end();
    }),
  );

  const sensorEndpoint = (find: (req: Request, rt: ResourceType) => Promise<EntityRecord>) =>
    endpoint(async (req, res) => {
      const rt = sensorType();
      const sensor = await find(req, rt);
      const params = searchParams(req);
      if (req.method === 'GET') {
        assertMayRead(sensor, params, principalOf(res), rt);
        const query = readingsQueryFrom(params);
        res.json(await queryReadings(s.knex, await basicStreamsOf(s, s.knex, sensor), query));
        return;
      }
      assertKey(sensor, params);
      const payload = await readPayload(req, res);
      // As farmOS: a stream for every value name posted, numeric or not; only numeric values are stored.
      const { readings, names } = readingsFromPayload(payload, nowSeconds(), () => true);
      const tooLong = names.find((n) => n.length > NAME_MAX_LENGTH);
      if (tooLong)
        throw badRequest(
          `The value name "${tooLong.slice(0, 40)}…" is longer than ${NAME_MAX_LENGTH} characters; it names a data stream.`,
          { pointer: '' },
        );
      await write(s.knex, async (trx) => {
        // Serialise posts to one sensor, so that two of them do not both create a stream for a new
        // name. FOR NO KEY UPDATE (storage/locks.ts), not FOR UPDATE as before: two posts still
        // take turns, but a post no longer waits on every log save naming the sensor (each holds
        // a KEY SHARE lock on it), nor they on it.
        await lockToChange(trx, rt.entityType.table, [sensor.id]);
        const streams = await ensureStreams(s, trx, sensor.id, names);
        const ids = new Map(streams.map((st) => [st.name, st.id]));
        await insertReadings(
          trx,
          readings.map((r) => ({ streamId: ids.get(r.name)!, timestamp: r.timestamp, value: r.value })),
        );
      });
      res.status(201).end();
    });

  router.all(
    '/asset/:uuid/data/basic',
    sensorEndpoint((req, rt) => loadByUuid(s, rt, String(req.params.uuid))),
  );
  router.all(
    '/farm/sensor/listener/:public_key',
    sensorEndpoint(async (req, rt) => {
      const field = rt.fieldsByName.get('public_key');
      const column = field?.storage.kind === 'columns' ? field.storage.columns.value : undefined;
      const key = String(req.params.public_key);
      const row = column
        ? await s
            .knex(rt.entityType.table)
            .where({ bundle: rt.bundle.bundle, [column]: key })
            .first('id')
        : undefined;
      if (!row)
        throw notFound(`There is no sensor with the public key "${key.slice(0, 64)}".`, { parameter: 'public_key' });
      return (await s.loader.load(s.knex, rt.entityType.entityType, [Number(row.id)], null))[0]!;
    }),
  );
  return router;
}

async function loadByUuid(s: JsonApiServices, rt: ResourceType, uuid: string): Promise<EntityRecord> {
  const hit = UUID.test(uuid)
    ? await s.loader.store.findByUuid(s.knex, rt.entityType.entityType, uuid.toLowerCase())
    : null;
  if (!hit || hit.bundle !== rt.bundle.bundle)
    throw notFound(`There is no ${rt.type} with the id "${uuid.slice(0, 64)}".`, { parameter: 'uuid' });
  const [record] = await s.loader.load(s.knex, rt.entityType.entityType, [hit.id], null);
  if (!record) throw notFound(`There is no ${rt.type} with the id "${uuid}".`, { parameter: 'uuid' });
  return record;
}

function streamRef(record: EntityRecord): StreamRef {
  return { id: record.id, name: String(record.values.get('name') ?? '') };
}

/** The basic data streams a sensor references, in its order. */
async function basicStreamsOf(s: JsonApiServices, db: Db, sensor: EntityRecord): Promise<StreamRef[]> {
  const refs = ((sensor.values.get('data_stream') as Reference[] | undefined) ?? []).filter(Boolean);
  if (!refs.length) return [];
  const records = await s.loader.load(
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
async function ensureStreams(s: JsonApiServices, trx: Db, sensorId: number, names: string[]): Promise<StreamRef[]> {
  const [sensor] = await s.loader.load(trx, 'asset', [sensorId], null);
  const existing = await basicStreamsOf(s, trx, sensor!);
  const have = new Set(existing.map((st) => st.name));
  const missing = names.filter((n) => !have.has(n));
  if (!missing.length) return existing;
  if (missing.length > MAX_NEW_STREAMS_PER_POST) {
    throw badRequest(
      `The post names ${missing.length} new values; a sensor may gain at most ${MAX_NEW_STREAMS_PER_POST} data streams per post.`,
      { pointer: '' },
    );
  }
  const streamRt = s.ctx.registry.get('data_stream--basic')!;
  const created: StreamRef[] = [];
  for (const name of missing) {
    const { id } = await s.entities.create(
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
  await s.entities.update(trx, sensor!, { values: new Map([['data_stream', refs]]), secrets: new Map() }, ANONYMOUS);
  return [...existing, ...created];
}

/** The query string, read as URLSearchParams (the app's own parser is switched off). */
function searchParams(req: Request): URLSearchParams {
  const i = req.originalUrl.indexOf('?');
  return new URLSearchParams(i < 0 ? '' : req.originalUrl.slice(i + 1));
}

/** Readable when public, with the private key, or by a bearer token that may view the record's type. */
function assertMayRead(record: EntityRecord, params: URLSearchParams, principal: Principal, rt: ResourceType): void {
  if (record.values.get('public') === true) return;
  if (keysMatch(params.get('private_key'), record.values.get('private_key'))) return;
  if (isAuthenticated(principal) && mayOnType(principal, rt.entityType, 'view')) return;
  throw forbidden(
    params.has('private_key')
      ? 'The private_key does not match: this data is not public.'
      : 'This data is not public: send its private_key query parameter, or a bearer token that may view it.',
    { parameter: 'private_key' },
  );
}

function assertKey(record: EntityRecord, params: URLSearchParams): void {
  if (keysMatch(params.get('private_key'), record.values.get('private_key'))) return;
  throw forbidden(
    params.has('private_key')
      ? 'The private_key does not match.'
      : 'Posting data needs the private_key query parameter.',
    { parameter: 'private_key' },
  );
}

function parseBody(req: Request): unknown {
  const raw = Buffer.isBuffer(req.body) ? req.body.toString('utf8') : '';
  if (!raw.trim())
    throw badRequest(
      'The request body is empty: post {"timestamp": 1700000000, "<name>": 76.5} or an array of such objects.',
      { pointer: '' },
    );
  try {
    return JSON.parse(raw);
  } catch (e) {
    throw badRequest(`The request body is not valid JSON: ${(e as Error).message}`, { pointer: '' });
  }
}

function bodyError(error: unknown): unknown {
  const e = error as { type?: string; message?: string };
  if (e?.type === 'entity.too.large')
    return new ApiError(
      413,
      `The request body is larger than ${BODY_LIMIT_BYTES / 1024 / 1024} MiB: post readings in smaller batches.`,
    );
  if (e?.type === 'encoding.unsupported' || e?.type === 'charset.unsupported')
    return new ApiError(415, `The request body's encoding is not supported: ${e.message}`);
  return error;
}

function nowSeconds(): number {
  return Math.floor(Date.now() / 1000);
}
