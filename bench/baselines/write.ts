/**
 * The *write* baseline (issue 28, P4 and P5): bare node:http over the same database, writing the
 * rows Tilth writes for the benchmark's POST and PATCH of an activity log, each request in one
 * transaction of its own, and answering with the same document (log-document.ts, read back as
 * Tilth reads it back) and headers. The benchmark checks the answers' bytes and the rows written
 * against Tilth's (run.ts), so the ratio Tilth / write is the price of everything Tilth does beyond
 * storing those rows durably.
 *
 * The rows of a POST: the log (its geometry copied from its location's, as Tilth computes it for a
 * log that is not a movement; the owner defaults to the author), its asset, location, owner and
 * quantity rows (the quantity's current revision pinned), a revision snapshot and its number from
 * the type's counter, and the record's row in the change feed. A PATCH of a name and the asset
 * relationship: the log's row, its asset rows replaced, the author as owner of a log that had none
 * (farmOS's Log::preSave, on every save), a snapshot of the whole record, the feed. Snapshots keep
 * a reference's target revision only where it names one, as Tilth's do.
 *
 * SQLite: better-sqlite3 with WAL and `synchronous=FULL` (Tilth's durable default: every COMMIT
 * syncs; Tilth shares a sync between the writes that arrive together, storage/group-commit.ts,
 * which this baseline does not). PostgreSQL (DATABASE_URL): `pg`, one client per request from a
 * small pool, BEGIN … COMMIT, the same statements with $n parameters.
 *
 * It knows only what the benchmark sends: log--activity with asset, location and quantity
 * relationships (POST), a name and the asset relationship (PATCH). Anything else is a 404.
 *
 * Env: PORT, DB (the SQLite file) or DATABASE_URL, SYNCHRONOUS (FULL or NORMAL, SQLite's), BASE_URL (Tilth's, for the links), HEADERS (a
 * JSON file: Tilth's headers for a 200, as [name, value] pairs).
 */
import { createHash, randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import { readFileSync } from 'node:fs';
import Database from 'better-sqlite3';
import { answerWith, type HeaderList } from './headers.ts';
import { JSONAPI, logRenderer } from './log-document.ts';
import { COLUMNS, FROM, SIDE_TABLES, type Row, type SideRow } from './log-sql.ts';

const BASE = process.env.BASE_URL!;
const POSTGRES = !!process.env.DATABASE_URL;

/** One transaction's statements: `?` parameters on both databases. */
interface Tx {
  all<T = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<T[]>;
  run(sql: string, params?: unknown[]): Promise<void>;
}
type Transact = <T>(body: (tx: Tx) => Promise<T>) => Promise<T>;

function sqliteTransact(): Transact {
  const db = new Database(process.env.DB!, { fileMustExist: true });
  db.pragma('journal_mode = WAL');
  // FULL, Tilth's default; NORMAL when the run compares without syncs (run.ts --synchronous).
  db.pragma(`synchronous = ${process.env.SYNCHRONOUS === 'NORMAL' ? 'NORMAL' : 'FULL'}`);
  db.pragma('busy_timeout = 5000');
  db.pragma('foreign_keys = ON');
  // Statement journals in memory, as Tilth's writer keeps them (storage/database.ts). With
  // SQLite's default each POST made a temporary file and removed it again, and wrote some 160
  // pages a request into it and the log (strace: 165,133 pwrite64, 1,023 openat and 1,022 unlink
  // for about 1,000 POSTs): file-system work that is neither the rows' nor durability's (issue 41 Part F).
  db.pragma('temp_store = MEMORY');
  const statements = new Map<string, Database.Statement>();
  const prepared = (sql: string) => {
    let s = statements.get(sql);
    if (!s) statements.set(sql, (s = db.prepare(sql)));
    return s;
  };
  const tx: Tx = {
    all: async (sql, params = []) => prepared(sql).all(...params) as never[],
    run: async (sql, params = []) => void prepared(sql).run(...params),
  };
  // better-sqlite3 is synchronous: a body's awaits resolve at once, but the transaction must not
  // let another request's statements in between, so it runs inside BEGIN IMMEDIATE … COMMIT with
  // nothing else on the event loop able to start one (one write at a time: `queue`).
  let queue: Promise<unknown> = Promise.resolve();
  return (body) => {
    const run = queue.then(async () => {
      db.exec('BEGIN IMMEDIATE');
      try {
        const out = await body(tx);
        db.exec('COMMIT');
        return out;
      } catch (error) {
        db.exec('ROLLBACK');
        throw error;
      }
    });
    queue = run.catch(() => undefined);
    return run;
  };
}

async function pgTransact(): Promise<Transact> {
  const pg = (await import('pg')).default;
  pg.types.setTypeParser(20, (v) => Number(v));
  const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 8 });
  const positional = (sql: string) => {
    let n = 0;
    return sql.replace(/\?/g, () => `$${++n}`);
  };
  const texts = new Map<string, { name: string; text: string }>();
  const named = (sql: string) => {
    let t = texts.get(sql);
    if (!t)
      texts.set(
        sql,
        (t = { name: `w_${createHash('sha1').update(sql).digest('hex').slice(0, 16)}`, text: positional(sql) }),
      );
    return t;
  };
  return async (body) => {
    const client = await pool.connect();
    const tx: Tx = {
      all: async (sql, params = []) => (await client.query({ ...named(sql), values: params })).rows,
      run: async (sql, params = []) => void (await client.query({ ...named(sql), values: params })),
    };
    try {
      await client.query('BEGIN');
      const out = await body(tx);
      await client.query('COMMIT');
      return out;
    } catch (error) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw error;
    } finally {
      client.release();
    }
  };
}

const transact = POSTGRES ? await pgTransact() : sqliteTransact();
const flag = (b: boolean) => (POSTGRES ? b : b ? 1 : 0);

const GEOMETRY = ['value', 'geo_type', 'lat', 'lon', 'left', 'top', 'right', 'bottom', 'geohash', 'latlon'];
const FEED = POSTGRES
  ? `INSERT INTO change_feed (entity_type, entity_id, bundle, uuid, deleted, changed, txid) VALUES ('log', ?, 'activity', ?, false, ?, pg_current_xact_id())
     ON CONFLICT (entity_type, entity_id) DO UPDATE SET position = nextval('change_feed_position_seq'), txid = EXCLUDED.txid, bundle = EXCLUDED.bundle, uuid = EXCLUDED.uuid, deleted = EXCLUDED.deleted, changed = EXCLUDED.changed
     RETURNING position`
  : `INSERT OR REPLACE INTO change_feed (entity_type, entity_id, bundle, uuid, deleted, changed) VALUES ('log', ?, 'activity', ?, 0, ?) RETURNING position`;
// Tilth's revision numbers (runtime/storage/revision-numbers.ts): a sequence per type on PostgreSQL, a counter row on SQLite.
const NEXT_REVISION = POSTGRES
  ? `SELECT nextval('entity_revision_log_seq') AS last_id`
  : `INSERT INTO entity_revision_counter (entity_type, last_id) VALUES ('log', 1) ON CONFLICT (entity_type) DO UPDATE SET last_id = entity_revision_counter.last_id + 1 RETURNING last_id`;
const REVISION = `INSERT INTO entity_revision (entity_type, entity_id, revision_id, user_id, created, message, data) VALUES ('log', ?, ?, ?, ?, NULL, ?)`;

/** The standard geohash of a point, 12 characters (Tilth computes it for a computed geometry). */
function geohash(lat: number, lon: number): string {
  const ranges = { lat: [-90, 90], lon: [-180, 180] };
  let hash = '';
  for (let bits = 0, ch = 0, even = true; hash.length < 12; even = !even) {
    const [range, value] = even ? [ranges.lon, lon] : [ranges.lat, lat];
    const mid = (range[0]! + range[1]!) / 2;
    ch = ch * 2 + (value >= mid ? 1 : 0);
    range[value >= mid ? 0 : 1] = mid;
    if (++bits === 5) {
      hash += '0123456789bcdefghjkmnpqrstuvwxyz'[ch];
      bits = 0;
      ch = 0;
    }
  }
  return hash;
}

interface Identifier {
  type: string;
  id: string;
}
interface Item {
  targetId: number;
  meta: Record<string, unknown>;
  revisionId?: number | null;
}

/** The ids of `refs` in `table`, in order; a missing one is a 404 (null). */
async function targets(tx: Tx, table: string, refs: Identifier[]): Promise<number[] | null> {
  const out: number[] = [];
  for (const r of refs) {
    const row = (await tx.all<{ id: number }>(`SELECT id FROM ${table} WHERE uuid = ?`, [r.id]))[0];
    if (!row) return null;
    out.push(Number(row.id));
  }
  return out;
}

/** The bearer check as Tilth does it, and the token's user. */
async function userOf(tx: Tx, header: string | undefined): Promise<number | null> {
  if (!header?.startsWith('Bearer ')) return null;
  const hash = createHash('sha256').update(header.slice(7), 'utf8').digest('hex');
  const row = (
    await tx.all<{ user_id: number; expires: number; revoked: unknown; status: unknown }>(
      `SELECT t.user_id, t.expires, t.revoked, u.status FROM oauth_access_tokens t
    JOIN oauth_clients c ON c.id = t.client_id JOIN users u ON u.id = t.user_id WHERE t.token_hash = ?`,
      [hash],
    )
  )[0];
  return row && row.revoked === null && Number(row.expires) > Date.now() / 1000 && row.status
    ? Number(row.user_id)
    : null;
}

const items = (ids: number[]): Item[] => ids.map((targetId) => ({ targetId, meta: {} }));
/** A revision reference as a snapshot keeps it: its target revision only when there is one. */
const pinnedItem = (targetId: number, meta: Record<string, unknown>, revision: number | null): Item =>
  revision === null ? { targetId, meta } : { targetId, meta, revisionId: revision };

async function insertRefs(
  tx: Tx,
  table: string,
  log: number,
  ids: number[],
  revisions?: Array<number | null>,
): Promise<void> {
  for (const [delta, id] of ids.entries()) {
    if (revisions)
      await tx.run(`INSERT INTO ${table} (entity_id, delta, target_id, target_revision_id) VALUES (?, ?, ?, ?)`, [
        log,
        delta,
        id,
        revisions[delta],
      ]);
    else await tx.run(`INSERT INTO ${table} (entity_id, delta, target_id) VALUES (?, ?, ?)`, [log, delta, id]);
  }
}

/** The log read back with its side tables and rendered, as Tilth answers a write. */
async function document(tx: Tx, id: number): Promise<string> {
  const row = (await tx.all<Row>(`SELECT ${COLUMNS} ${FROM} WHERE l.id = ?`, [id]))[0]!;
  const side = POSTGRES
    ? (ids: number[]) => tx.all<SideRow>(`WITH ids(id) AS (SELECT unnest(?::int[])) ${SIDE_TABLES}`, [ids])
    : (ids: number[]) =>
        tx.all<SideRow>(`WITH ids(id) AS (SELECT value FROM json_each(?)) ${SIDE_TABLES}`, [JSON.stringify(ids)]);
  const { rendered } = await logRenderer(BASE, { side }).renderRows([row]);
  return `${JSONAPI},"data":${rendered[0]},"links":{"self":{"href":"${BASE}/api/log/activity/${row.uuid}"}}}`;
}

type Answer = { status: number; body: string; headers?: Array<[string, string]> };
const notFound: Answer = { status: 404, body: '{"errors":[{"status":"404"}]}' };

async function post(authorization: string | undefined, input: any): Promise<Answer> {
  return transact(async (tx) => {
    const user = await userOf(tx, authorization);
    if (user === null) return { status: 401, body: '{"errors":[{"status":"401"}]}' };
    const data = input?.data;
    if (data?.type !== 'log--activity') return notFound;
    const a = data.attributes ?? {};
    const rel = data.relationships ?? {};
    const assets = await targets(tx, 'asset', rel.asset?.data ?? []);
    const locations = await targets(tx, 'asset', rel.location?.data ?? []);
    const quantities = await targets(tx, 'quantity', rel.quantity?.data ?? []);
    if (!assets || !locations || !quantities || locations.length !== 1) return notFound;
    const now = Math.floor(Date.now() / 1000);
    const timestamp = Math.floor(Date.parse(a.timestamp) / 1000);
    // The log's geometry: its one location's (a log that is not a movement takes its locations').
    const place = (
      await tx.all(`SELECT ${GEOMETRY.map((g) => `intrinsic_geometry__${g}`).join(', ')} FROM asset WHERE id = ?`, [
        locations[0],
      ])
    )[0]!;
    const geometry = GEOMETRY.map((g) => place[`intrinsic_geometry__${g}`] ?? null);
    // Tilth writes the computed geometry's WKT afresh from its parsed form ("POINT (x y)"); the farm's
    // locations are points (anything else is not what this baseline was written for).
    if (geometry[0] !== null) {
      if (geometry[1] !== 'Point') throw new Error('only point locations are written by this baseline');
      geometry[0] = `POINT (${Number(place.intrinsic_geometry__lon)} ${Number(place.intrinsic_geometry__lat)})`;
      geometry[8] = geohash(Number(place.intrinsic_geometry__lat), Number(place.intrinsic_geometry__lon));
    }
    const pinned: Array<number | null> = [];
    for (const q of quantities)
      pinned.push(
        ((await tx.all<{ revision_id: number | null }>(`SELECT revision_id FROM quantity WHERE id = ?`, [q]))[0]
          ?.revision_id ?? null) as number | null,
      );
    const revision = Number((await tx.all<{ last_id: number }>(NEXT_REVISION))[0]!.last_id);
    const uuid = randomUUID();
    const id = Number(
      (
        await tx.all<{ id: number }>(
          `INSERT INTO log (uuid, bundle, revision_id, revision_created, revision_log_message, name, timestamp, status, created, changed,
      ${GEOMETRY.map((g) => `geometry__${g}`).join(', ')}, is_movement, is_group_assignment, revision_user, uid)
      VALUES (?, 'activity', ?, ?, '', ?, ?, ?, ?, ?, ${GEOMETRY.map(() => '?').join(', ')}, ?, ?, ?, ?) RETURNING id`,
          [
            uuid,
            revision,
            now,
            a.name,
            timestamp,
            a.status,
            now,
            now,
            ...geometry,
            flag(false),
            flag(false),
            user,
            user,
          ],
        )
      )[0]!.id,
    );
    await insertRefs(tx, 'log__asset', id, assets);
    await insertRefs(tx, 'log__location', id, locations);
    await insertRefs(tx, 'log__owner', id, [user]);
    await insertRefs(tx, 'log__quantity', id, quantities, pinned);
    // The snapshot, keyed as Tilth keys it: the input's attributes and relationships first.
    const snapshot = {
      name: a.name,
      status: a.status,
      timestamp,
      asset: items(assets),
      location: items(locations),
      quantity: quantities.map((targetId, i) => pinnedItem(targetId, {}, pinned[i] ?? null)),
      revision_created: now,
      revision_log_message: '',
      created: now,
      changed: now,
      data: null,
      flag: [],
      notes: null,
      geometry:
        place.intrinsic_geometry__value === null ? null : Object.fromEntries(GEOMETRY.map((g, i) => [g, geometry[i]])),
      is_movement: false,
      is_group_assignment: false,
      revision_user: { targetId: user, meta: {} },
      uid: { targetId: user, meta: {} },
      category: [],
      file: [],
      image: [],
      owner: items([user]),
      equipment: [],
      group: [],
    };
    await tx.run(REVISION, [id, revision, user, now, JSON.stringify(snapshot)]);
    const position = Number((await tx.all<{ position: number }>(FEED, [id, uuid, now]))[0]!.position);
    return {
      status: 201,
      body: await document(tx, id),
      headers: [
        ['etag', `"${position}"`],
        ['location', `${BASE}/api/log/activity/${uuid}`],
      ],
    };
  });
}

async function patch(authorization: string | undefined, uuid: string, input: any): Promise<Answer> {
  return transact(async (tx) => {
    const user = await userOf(tx, authorization);
    if (user === null) return { status: 401, body: '{"errors":[{"status":"401"}]}' };
    const data = input?.data;
    const log = (
      await tx.all<Record<string, any>>(`SELECT * FROM log WHERE uuid = ? AND bundle = 'activity'`, [uuid])
    )[0];
    if (!log || data?.id !== uuid || data.type !== 'log--activity') return notFound;
    const assets = await targets(tx, 'asset', data.relationships?.asset?.data ?? []);
    if (!assets) return notFound;
    const id = Number(log.id);
    const now = Math.floor(Date.now() / 1000);
    const revision = Number((await tx.all<{ last_id: number }>(NEXT_REVISION))[0]!.last_id);
    await tx.run(
      `UPDATE log SET name = ?, changed = ?, revision_id = ?, revision_created = ?, revision_log_message = '', revision_user = ? WHERE id = ?`,
      [data.attributes.name, now, revision, now, user, id],
    );
    await tx.run(`DELETE FROM log__asset WHERE entity_id = ?`, [id]);
    await insertRefs(tx, 'log__asset', id, assets);
    // A log left without an owner gets the current user, on every save (farmOS's Log::preSave).
    if (!(await tx.all(`SELECT 1 FROM log__owner WHERE entity_id = ?`, [id])).length)
      await insertRefs(tx, 'log__owner', id, [user]);
    // The snapshot of the whole record after the change, in the log's field order.
    const side = await tx.all<{ f: string; target_id: number; target_revision_id?: number | null }>(
      `
      SELECT 'category' AS f, entity_id, delta, target_id, CAST(NULL AS integer) AS target_revision_id FROM log__category WHERE entity_id = ?
      UNION ALL SELECT 'file', entity_id, delta, target_id, CAST(NULL AS integer) FROM log__file WHERE entity_id = ?
      UNION ALL SELECT 'image', entity_id, delta, target_id, CAST(NULL AS integer) FROM log__image WHERE entity_id = ?
      UNION ALL SELECT 'owner', entity_id, delta, target_id, CAST(NULL AS integer) FROM log__owner WHERE entity_id = ?
      UNION ALL SELECT 'quantity', entity_id, delta, target_id, target_revision_id FROM log__quantity WHERE entity_id = ?
      UNION ALL SELECT 'location', entity_id, delta, target_id, CAST(NULL AS integer) FROM log__location WHERE entity_id = ?
      UNION ALL SELECT 'equipment', entity_id, delta, target_id, CAST(NULL AS integer) FROM log__equipment WHERE entity_id = ?
      UNION ALL SELECT 'group', entity_id, delta, target_id, CAST(NULL AS integer) FROM log__group WHERE entity_id = ?
      ORDER BY 1, 3`,
      Array(8).fill(id),
    );
    const flags = (
      await tx.all<{ value: string }>(`SELECT value FROM log__flag WHERE entity_id = ? ORDER BY delta`, [id])
    ).map((r) => r.value);
    const loaded = (f: string) =>
      side
        .filter((s) => s.f === f)
        .map((s) =>
          f === 'quantity'
            ? pinnedItem(
                Number(s.target_id),
                { target_revision_id: s.target_revision_id ?? null },
                s.target_revision_id ?? null,
              )
            : { targetId: Number(s.target_id), meta: {} },
        );
    const snapshot = {
      revision_created: now,
      revision_log_message: '',
      name: data.attributes.name,
      timestamp: log.timestamp === null ? null : Number(log.timestamp),
      status: log.status,
      created: Number(log.created),
      changed: now,
      data: log.data,
      flag: flags,
      notes: log.notes__value === null ? null : { value: log.notes__value, format: log.notes__format },
      geometry:
        log.geometry__value === null ? null : Object.fromEntries(GEOMETRY.map((g) => [g, log[`geometry__${g}`]])),
      is_movement: !!log.is_movement,
      is_group_assignment: !!log.is_group_assignment,
      revision_user: { targetId: user, meta: {} },
      uid: log.uid === null ? null : { targetId: Number(log.uid), meta: {} },
      asset: items(assets),
      category: loaded('category'),
      file: loaded('file'),
      image: loaded('image'),
      owner: loaded('owner'),
      quantity: loaded('quantity'),
      location: loaded('location'),
      equipment: loaded('equipment'),
      group: loaded('group'),
    };
    await tx.run(REVISION, [id, revision, user, now, JSON.stringify(snapshot)]);
    const position = Number((await tx.all<{ position: number }>(FEED, [id, uuid, now]))[0]!.position);
    return { status: 200, body: await document(tx, id), headers: [['etag', `"${position}"`]] };
  });
}

const recorded = JSON.parse(readFileSync(process.env.HEADERS!, 'utf8')) as HeaderList;

createServer((req, res) => {
  const url = req.url ?? '/';
  if (url === '/ready') return res.end('{}');
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    let input: unknown;
    try {
      input = JSON.parse(Buffer.concat(chunks).toString() || 'null');
    } catch {
      input = null;
    }
    const prefix = '/api/log/activity';
    const answer =
      req.method === 'POST' && url === prefix
        ? post(req.headers.authorization, input)
        : req.method === 'PATCH' && url.startsWith(`${prefix}/`)
          ? patch(req.headers.authorization, url.slice(prefix.length + 1), input)
          : Promise.resolve(notFound);
    answer.then(
      (a) =>
        answerWith(
          a.status < 300
            ? [...recorded, ...(a.headers ?? [])]
            : [['content-type', 'application/vnd.api+json; charset=utf-8']],
        )(res, a.status, a.body),
      (error: Error) =>
        answerWith([['content-type', 'application/vnd.api+json; charset=utf-8']])(
          res,
          500,
          JSON.stringify({ errors: [{ status: '500', detail: error.message }] }),
        ),
    );
  });
}).listen(Number(process.env.PORT), '127.0.0.1');
