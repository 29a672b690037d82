/**
 * The benchmark's farms: deterministic, seeded, never committed as data.
 *
 *   farm-S    10,000 logs,   1,000 assets,   3,000 quantities
 *   farm-M   100,000 logs,  10,000 assets,  30,000 quantities
 *   farm-L 1,000,000 logs, 100,000 assets, 300,000 quantities, 2,000 terms, 50 users
 *
 * Logs span ten years across the core log bundles; 20% are pending, 10% are movements (a location
 * and the animals or plants moved there), most name one or two assets, 30% carry a quantity.
 *
 * Rows go straight into the tables the server's own migrations made (`serve --migrate` once, stop,
 * load, start again — as test/stress/export.test.ts does), with prepared better-sqlite3 statements
 * in one transaction: the benchmark measures reading, not the seeding, and farm-L loads in minutes.
 * The loaded database file is cached under bench/.data/ (git-ignored), keyed by scale, seed and a
 * hash of the migrations, so later runs copy it instead of generating it again.
 */
import { createHash } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';

export type Scale = 'S' | 'M' | 'L';

export interface FarmSize {
  logs: number;
  assets: number;
  quantities: number;
  terms: number;
  users: number;
}

export const SIZES: Record<Scale, FarmSize> = {
  S: { logs: 10_000, assets: 1_000, quantities: 3_000, terms: 200, users: 10 },
  M: { logs: 100_000, assets: 10_000, quantities: 30_000, terms: 1_000, users: 25 },
  L: { logs: 1_000_000, assets: 100_000, quantities: 300_000, terms: 2_000, users: 50 },
};

/** Mulberry32: small, fast and the same on every machine, so a seed names one farm. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A version 4 UUID from the seeded generator (crypto.randomUUID would make every farm different). */
function uuidFrom(rand: () => number): string {
  // At most four hex digits per draw: a draw carries 32 bits, and more would leave trailing zeros.
  const hex = (n: number): string =>
    n > 4
      ? hex(4) + hex(n - 4)
      : Math.floor(rand() * 16 ** n)
          .toString(16)
          .padStart(n, '0');
  const variant = (8 + Math.floor(rand() * 4)).toString(16);
  return `${hex(8)}-${hex(4)}-4${hex(3)}-${variant}${hex(3)}-${hex(12)}`;
}

/** Ten years of farm history ending at a fixed instant, so a seed gives the same timestamps every year. */
export const HISTORY_END = Date.UTC(2026, 0, 1) / 1000;
export const HISTORY_START = HISTORY_END - 10 * 365 * 86_400;

// Bundle shares: what a working farm records most (observations and activities) down to the rare.
const LOG_BUNDLES: Array<[string, number]> = [
  ['activity', 0.3],
  ['observation', 0.25],
  ['input', 0.1],
  ['harvest', 0.1],
  ['seeding', 0.06],
  ['maintenance', 0.07],
  ['medical', 0.05],
  ['transplanting', 0.04],
  ['birth', 0.03],
];
const ASSET_BUNDLES: Array<[string, number]> = [
  ['land', 0.01],
  ['structure', 0.005],
  ['plant', 0.4],
  ['animal', 0.45],
  ['equipment', 0.085],
  ['group', 0.05],
];
const TERM_BUNDLES: Array<[string, number]> = [
  ['animal_type', 0.2],
  ['plant_type', 0.4],
  ['log_category', 0.1],
  ['unit', 0.1],
  ['material_type', 0.1],
  ['season', 0.1],
];
const MEASURES = ['weight', 'count', 'volume', 'area', 'length', 'value', 'time', 'rate'];

function pick<T>(rand: () => number, table: Array<[T, number]>): T {
  let r = rand();
  for (const [v, w] of table) if ((r -= w) < 0) return v;
  return table[table.length - 1]![0];
}

/** Split `total` over a table of shares, at least one each, the last taking the rest. */
function counts(total: number, table: Array<[string, number]>): Map<string, number> {
  const out = new Map<string, number>();
  let left = total;
  table.forEach(([name, share], i) => {
    const n = i === table.length - 1 ? left : Math.max(1, Math.floor(total * share));
    out.set(name, n);
    left -= n;
  });
  return out;
}

/** A farm ready in a run's data directory. */
export interface LoadedFarm {
  scale: Scale;
  seed: number;
  size: FarmSize;
  databaseFile: string;
}

/**
 * Fill a freshly migrated Tilth SQLite database with farm `scale` from `seed`. The admin user the
 * server made at its first start stays user 1; everything else is added after it.
 */
export function loadFarm(file: string, scale: Scale, seed: number): void {
  const size = SIZES[scale];
  const rand = prng(seed);
  const db = new Database(file);
  // One writer, no readers while loading: skip the journal's durability, not the data's shape.
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = OFF');
  db.pragma('cache_size = -200000');
  const int = (n: number) => Math.floor(rand() * n);
  const t0 = HISTORY_START;

  const load = db.transaction(() => {
    // Users: the server's admin is id 1; the rest are farm workers who own and record things.
    const userIns =
      db.prepare(`INSERT INTO users (uuid, bundle, preferred_langcode, name, pass, mail, timezone, status, created, changed, access, login, init)
      VALUES (?, 'user', 'en', ?, NULL, ?, 'UTC', 1, ?, ?, 0, 0, ?)`);
    const roleIns = db.prepare(`INSERT INTO user_role (user_id, role) VALUES (?, ?)`);
    const userIds: number[] = [1];
    for (let i = 1; i < size.users; i++) {
      const id = Number(
        userIns.run(uuidFrom(rand), `worker${i}`, `worker${i}@farm.example`, t0, t0, `worker${i}@farm.example`)
          .lastInsertRowid,
      );
      roleIns.run(id, i % 5 === 0 ? 'farm_manager' : 'farm_worker');
      userIds.push(id);
    }
    const someUser = () => userIds[int(userIds.length)]!;

    // Terms by vocabulary.
    const termIns =
      db.prepare(`INSERT INTO taxonomy_term (uuid, bundle, revision_created, revision_log_message, status, name, weight, changed, revision_user)
      VALUES (?, ?, ?, '', 1, ?, 0, ?, 1)`);
    const terms = new Map<string, number[]>();
    for (const [bundle, n] of counts(size.terms, TERM_BUNDLES)) {
      const ids: number[] = [];
      for (let i = 0; i < n; i++)
        ids.push(Number(termIns.run(uuidFrom(rand), bundle, t0, `${bundle} ${i}`, t0).lastInsertRowid));
      terms.set(bundle, ids);
    }
    const term = (bundle: string) => {
      const ids = terms.get(bundle)!;
      return ids[int(ids.length)]!;
    };

    // Assets: fixed land and structures (the locations), then what lives and works on them.
    const assetIns =
      db.prepare(`INSERT INTO asset (uuid, bundle, revision_created, revision_log_message, name, status, created, changed,
        intrinsic_geometry__value, intrinsic_geometry__geo_type, intrinsic_geometry__lat, intrinsic_geometry__lon,
        intrinsic_geometry__left, intrinsic_geometry__top, intrinsic_geometry__right, intrinsic_geometry__bottom, intrinsic_geometry__latlon,
        is_location, is_fixed, revision_user, uid, animal_type, birthdate, sex, land_type, structure_type, manufacturer, model)
      VALUES (@uuid, @bundle, @t, '', @name, @status, @t, @t, @geo, @geoType, @lat, @lon, @lon, @lat, @lon, @lat, @latlon,
        @isLocation, @isFixed, @user, @user, @animalType, @birthdate, @sex, @landType, @structureType, @manufacturer, @model)`);
    const plantTypeIns = db.prepare(`INSERT INTO asset__plant_type (entity_id, delta, target_id) VALUES (?, 0, ?)`);
    const parentIns = db.prepare(`INSERT INTO asset__parent (entity_id, delta, target_id) VALUES (?, 0, ?)`);
    const assets = new Map<string, number[]>();
    for (const [bundle, n] of counts(size.assets, ASSET_BUNDLES)) {
      const ids: number[] = [];
      for (let i = 0; i < n; i++) {
        const fixed = bundle === 'land' || bundle === 'structure';
        const lat = 45 + rand() * 0.1;
        const lon = -93 - rand() * 0.1;
        const t = t0 + int(HISTORY_END - t0);
        const id = Number(
          assetIns.run({
            uuid: uuidFrom(rand),
            bundle,
            t,
            name: `${bundle} ${i}`,
            status: rand() < 0.9 ? 'active' : 'archived',
            geo: fixed ? `POINT(${lon.toFixed(6)} ${lat.toFixed(6)})` : null,
            geoType: fixed ? 'Point' : null,
            lat: fixed ? +lat.toFixed(6) : null,
            lon: fixed ? +lon.toFixed(6) : null,
            latlon: fixed ? `${+lat.toFixed(6)},${+lon.toFixed(6)}` : null,
            isLocation: fixed ? 1 : 0,
            isFixed: fixed ? 1 : 0,
            user: someUser(),
            animalType: bundle === 'animal' ? term('animal_type') : null,
            birthdate: bundle === 'animal' ? t - int(3 * 365 * 86_400) : null,
            sex: bundle === 'animal' ? (rand() < 0.5 ? 'F' : 'M') : null,
            landType: bundle === 'land' ? ['field', 'bed', 'paddock', 'property'][int(4)]! : null,
            structureType: bundle === 'structure' ? ['building', 'greenhouse'][int(2)]! : null,
            manufacturer: bundle === 'equipment' ? 'Bench Tractors' : null,
            model: bundle === 'equipment' ? `M${int(100)}` : null,
          }).lastInsertRowid,
        );
        if (bundle === 'plant') plantTypeIns.run(id, term('plant_type'));
        ids.push(id);
      }
      assets.set(bundle, ids);
    }
    // Some land sits inside other land (fields in a property), as farms draw them.
    const land = assets.get('land')!;
    for (let i = 1; i < land.length; i += 3) parentIns.run(land[i], land[0]);
    const locations = [...land, ...assets.get('structure')!];
    const movable = [...assets.get('animal')!, ...assets.get('plant')!, ...assets.get('group')!];
    const anyAsset = [...movable, ...assets.get('equipment')!, ...locations];

    // Logs, with their assets, locations and quantities in the side tables.
    const logIns =
      db.prepare(`INSERT INTO log (uuid, bundle, revision_created, revision_log_message, name, timestamp, status, created, changed,
        is_movement, is_group_assignment, revision_user, uid)
      VALUES (?, ?, ?, '', ?, ?, ?, ?, ?, ?, 0, ?, ?)`);
    const logAssetIns = db.prepare(`INSERT INTO log__asset (entity_id, delta, target_id) VALUES (?, ?, ?)`);
    const logLocationIns = db.prepare(`INSERT INTO log__location (entity_id, delta, target_id) VALUES (?, 0, ?)`);
    const logQuantityIns = db.prepare(`INSERT INTO log__quantity (entity_id, delta, target_id) VALUES (?, 0, ?)`);
    const logOwnerIns = db.prepare(`INSERT INTO log__owner (entity_id, delta, target_id) VALUES (?, 0, ?)`);
    const quantityIns =
      db.prepare(`INSERT INTO quantity (uuid, bundle, revision_created, revision_log_message, measure, value__numerator, value__denominator,
        label, created, changed, revision_user, uid, units)
      VALUES (?, 'standard', ?, '', ?, ?, ?, ?, ?, ?, ?, ?, ?)`);
    const quantityShare = size.quantities / size.logs;
    let quantities = 0;
    for (let i = 0; i < size.logs; i++) {
      const bundle = pick(rand, LOG_BUNDLES);
      const timestamp = t0 + int(HISTORY_END - t0);
      const status = rand() < 0.2 ? 'pending' : 'done';
      const movement = rand() < 0.1;
      const user = someUser();
      const id = Number(
        logIns.run(
          uuidFrom(rand),
          bundle,
          timestamp,
          `${bundle} ${i}`,
          timestamp,
          status,
          timestamp,
          timestamp,
          movement ? 1 : 0,
          user,
          user,
        ).lastInsertRowid,
      );
      if (movement) {
        logLocationIns.run(id, locations[int(locations.length)]);
        logAssetIns.run(id, 0, movable[int(movable.length)]);
      } else if (rand() < 0.85) {
        const n = rand() < 0.6 ? 1 : 2;
        for (let d = 0; d < n; d++) logAssetIns.run(id, d, anyAsset[int(anyAsset.length)]);
      }
      if (rand() < 0.3) logOwnerIns.run(id, user);
      if (quantities < size.quantities && rand() < quantityShare) {
        const denominator = [1, 10, 100][int(3)]!;
        const q = Number(
          quantityIns.run(
            uuidFrom(rand),
            timestamp,
            MEASURES[int(MEASURES.length)],
            1 + int(100_000),
            denominator,
            `q${i}`,
            timestamp,
            timestamp,
            user,
            user,
            term('unit'),
          ).lastInsertRowid,
        );
        logQuantityIns.run(id, q);
        quantities++;
      }
    }
  });
  load();
  // Placements (asset_location) are derived from the logs: rows loaded behind the server's back
  // ask it to compute them at its next start, as an upgraded farm does (core migration 0005). So
  // is the change feed (0010): without its rows the farm's feed held only the assets the
  // placements touched, and P10 read a feed a tenth of the farm's size (farm-M: 10,001 rows).
  db.prepare(
    `INSERT INTO tilth_pending_work (name) VALUES ('asset_location'), ('change_feed') ON CONFLICT DO NOTHING`,
  ).run();
  db.pragma('wal_checkpoint(TRUNCATE)');
  db.close();
}

/** Hash of everything that shapes the tables: a cached farm made under older migrations is not reused. */
function schemaHash(root: string): string {
  const h = createHash('sha256');
  for (const dir of ['generated/migrations', 'runtime/storage/core-migrations']) {
    for (const f of readdirSync(join(root, dir)).sort()) h.update(f).update(readFileSync(join(root, dir, f)));
  }
  h.update(readFileSync(join(root, 'bench/dataset.ts')));
  return h.digest('hex').slice(0, 12);
}

export function cacheFile(root: string, scale: Scale, seed: number): string {
  return join(root, 'bench', '.data', `farm-${scale}-seed${seed}-${schemaHash(root)}.sqlite`);
}

/**
 * Put farm `scale` into `dataDir/tilth.sqlite`: copied from the cache when there, else made by
 * `migrate(dataDir)` (which runs and stops the server) and `loadFarm`, then cached.
 */
export async function prepareFarm(
  root: string,
  dataDir: string,
  scale: Scale,
  seed: number,
  migrate: (dataDir: string) => Promise<void>,
  log: (s: string) => void,
): Promise<LoadedFarm> {
  const target = join(dataDir, 'tilth.sqlite');
  const cached = cacheFile(root, scale, seed);
  if (existsSync(cached)) {
    log(`farm-${scale}: from cache ${cached}`);
  } else {
    mkdirSync(join(root, 'bench', '.data'), { recursive: true });
    const work = join(dataDir, 'seed');
    mkdirSync(work, { recursive: true });
    await migrate(work);
    const started = Date.now();
    log(`farm-${scale}: generating (seed ${seed})…`);
    loadFarm(join(work, 'tilth.sqlite'), scale, seed);
    log(`farm-${scale}: loaded in ${((Date.now() - started) / 1000).toFixed(1)} s`);
    // One more start computes the placements the load asked for (loadFarm), so cached farms have them.
    const placing = Date.now();
    await migrate(work);
    log(`farm-${scale}: placements computed in ${((Date.now() - placing) / 1000).toFixed(1)} s`);
    // Written under a temporary name first: an interrupted run leaves no half farm in the cache.
    copyFileSync(join(work, 'tilth.sqlite'), `${cached}.part`);
    renameSync(`${cached}.part`, cached);
    // Farms of this scale and seed made under other migrations (or an older generator) are stale.
    const prefix = `farm-${scale}-seed${seed}-`;
    for (const f of readdirSync(join(root, 'bench', '.data'))) {
      if (f.startsWith(prefix) && join(root, 'bench', '.data', f) !== cached)
        rmSync(join(root, 'bench', '.data', f), { force: true });
    }
    rmSync(work, { recursive: true, force: true });
  }
  copyFileSync(cached, target);
  return { scale, seed, size: SIZES[scale], databaseFile: target };
}
