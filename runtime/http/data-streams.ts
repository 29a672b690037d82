/**
 * The data endpoints of data streams and sensors, outside JSON:API as in farmOS:
 *
 * - `/api/data_stream/{uuid}/data` (data_stream module, DataStreamController + Basic.php)
 * - `/api/data_stream/{uuid}/data/summary` (Tilth's: the readings reduced per chart pixel, GET only)
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
import type { Db, EntityRecord } from '../storage/records.ts';
import { principalOf, type Principal } from '../access/principal.ts';
import { isAuthenticated, mayOnType } from '../access/policy.ts';
import type { RecordLoader } from '../farm/loader.ts';
import { UUID } from '../jsonapi/input.ts';
import { ApiError, badParameter, badRequest, forbidden, methodNotAllowed, notFound } from '../errors.ts';
import {
  keysMatch,
  MAX_READINGS_LIMIT,
  PostRefused,
  queryReadings,
  readingsFromPayload,
  summariseReadings,
  summaryRangeOf,
  type ReadingsQuery,
} from '../farm/data-streams.ts';
import { farmCommands } from '../usecases/commands.ts';
import { streamRef } from '../usecases/readings.ts';

/** Largest readings body accepted: the same as a JSON:API document. */
const BODY_LIMIT_BYTES = 4 * 1024 * 1024;
const ALLOWED = ['GET', 'POST'];

/** Where dataStreamRoutes answers: every path of its routes starts with one of these (app.ts scopes it to them). */
export const DATA_STREAM_PATHS = ['/api/data_stream/', '/asset/', '/farm/sensor/listener/'];

export function dataStreamRoutes(ctx: AppContext): Router {
  // The farm's services graph and commands, built once per farm (context.ts, usecases/commands.ts).
  const { loader } = ctx.services;
  const readings = farmCommands(ctx).readings;
  const knex = ctx.db.knex;
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
      handler(req, res).catch((error: unknown) => next(postApiError(error)));
    };

  router.all(
    '/api/data_stream/:uuid/data',
    endpoint(async (req, res) => {
      const rt = streamType();
      const stream = await loadByUuid(loader, knex, rt, String(req.params.uuid));
      const params = searchParams(req);
      if (req.method === 'GET') {
        assertMayRead(stream, params, principalOf(res), rt);
        const query = readingsQueryFrom(params);
        res.json(await queryReadings(knex, [streamRef(stream)], query));
        return;
      }
      assertKey(stream, params);
      const payload = await readPayload(req, res);
      const name = streamRef(stream).name;
      const posted = readingsFromPayload(payload, nowSeconds(), (key) => key === name);
      await readings.postToStream(streamRef(stream), posted.readings);
      res.status(201).end();
    }),
  );

  // A stream's readings reduced for a chart (issue 42 §6): at most `buckets` rows of min, max and
  // count over [start, end], whatever the stream holds; read as the readings are (public, key or token).
  router.all('/api/data_stream/:uuid/data/summary', (req, res, next) => {
    if (req.method !== 'GET') return next(methodNotAllowed(req.method, ['GET']));
    (async () => {
      const rt = streamType();
      const stream = await loadByUuid(loader, knex, rt, String(req.params.uuid));
      const params = searchParams(req);
      assertMayRead(stream, params, principalOf(res), rt);
      const range = summaryRangeOf((name) => params.get(name), nowSeconds());
      res.json(await summariseReadings(knex, stream.id, range));
    })().catch(next);
  });

  const sensorEndpoint = (find: (req: Request, rt: ResourceType) => Promise<EntityRecord>) =>
    endpoint(async (req, res) => {
      const rt = sensorType();
      const sensor = await find(req, rt);
      const params = searchParams(req);
      if (req.method === 'GET') {
        assertMayRead(sensor, params, principalOf(res), rt);
        const query = readingsQueryFrom(params);
        res.json(await queryReadings(knex, await readings.streamsOf(knex, sensor), query));
        return;
      }
      assertKey(sensor, params);
      const payload = await readPayload(req, res);
      // As farmOS: a stream for every value name posted, numeric or not; only numeric values are stored.
      await readings.postToSensor(
        rt,
        sensor,
        readingsFromPayload(payload, nowSeconds(), () => true),
      );
      res.status(201).end();
    });

  router.all(
    '/asset/:uuid/data/basic',
    sensorEndpoint((req, rt) => loadByUuid(loader, knex, rt, String(req.params.uuid))),
  );
  router.all(
    '/farm/sensor/listener/:public_key',
    sensorEndpoint(async (req, rt) => {
      const field = rt.fieldsByName.get('public_key');
      const column = field?.storage.kind === 'columns' ? field.storage.columns.value : undefined;
      const key = String(req.params.public_key);
      const row = column
        ? await knex(rt.entityType.table)
            .where({ bundle: rt.bundle.bundle, [column]: key })
            .first('id')
        : undefined;
      if (!row)
        throw notFound(`There is no sensor with the public key "${key.slice(0, 64)}".`, { parameter: 'public_key' });
      return (await loader.load(knex, rt.entityType.entityType, [Number(row.id)], null))[0]!;
    }),
  );
  return router;
}

/** A refused post (farm/data-streams.ts PostRefused) as this face answers it: a 400 pointing at the point in the body, or at the body. */
function postApiError(error: unknown): unknown {
  if (!(error instanceof PostRefused)) return error;
  return badRequest(error.message, { pointer: error.point === null ? '' : `/${error.point}` });
}

async function loadByUuid(loader: RecordLoader, db: Db, rt: ResourceType, uuid: string): Promise<EntityRecord> {
  const hit = UUID.test(uuid) ? await loader.store.findByUuid(db, rt.entityType.entityType, uuid.toLowerCase()) : null;
  if (!hit || hit.bundle !== rt.bundle.bundle)
    throw notFound(`There is no ${rt.type} with the id "${uuid.slice(0, 64)}".`, { parameter: 'uuid' });
  const [record] = await loader.load(db, rt.entityType.entityType, [hit.id], null);
  if (!record) throw notFound(`There is no ${rt.type} with the id "${uuid}".`, { parameter: 'uuid' });
  return record;
}

function truncate(s: string): string {
  return s.length > 80 ? `${s.slice(0, 77)}…` : s;
}

/** Read `start`, `end`, `limit`, `offset` and `name` from a query string; 400 names a bad parameter, 422 a limit over the cap. */
function readingsQueryFrom(params: URLSearchParams): ReadingsQuery {
  const integer = (name: string, min: number): number | null => {
    const raw = params.get(name);
    if (raw === null || raw === '') return null;
    if (!/^-?\d{1,15}$/.test(raw.trim()) || Number(raw) < min) {
      throw badParameter(
        name,
        `The "${name}" parameter must be a whole number${min === 0 ? ' of 0 or more' : ''}${name === 'start' || name === 'end' ? ' of Unix seconds' : ''}; it is "${truncate(raw)}".`,
      );
    }
    return Number(raw);
  };
  const start = integer('start', Number.MIN_SAFE_INTEGER);
  const end = integer('end', Number.MIN_SAFE_INTEGER);
  const limit = integer('limit', 0);
  if (limit !== null && limit > MAX_READINGS_LIMIT) {
    throw new ApiError(
      422,
      `The "limit" parameter may be at most ${MAX_READINGS_LIMIT}; it is ${limit}. Page with "offset", or narrow "start" and "end".`,
      { source: { parameter: 'limit' } },
    );
  }
  const offset = integer('offset', 0);
  const names = [...params.getAll('name'), ...params.getAll('name[]')].filter(Boolean);
  return { start, end, limit: limit ?? MAX_READINGS_LIMIT, offset: offset ?? 0, names: names.length ? names : null };
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
