/**
 * Rows M1–M3 (issue 42 §1, "Big farms stay usable"; farmOS issue #280: maps that will not open
 * with 29,000 areas): the farm map on a farm of 30,000 land polygons and 10,000 animals.
 *
 * A Tilth server of its own (SQLite, a temporary folder, as bench/chart.ts). The farm goes in
 * through the storage layer's bulk path, the one `tilth import farmos` stores a page of new
 * records with (EntityService.createManyVerbatim: one INSERT per table per batch, the geofield's
 * bounding box and centroid derived as on any save, first revisions and change feed rows
 * written), then the placements are rebuilt once as after an import:
 *
 * - 30,000 fields in a grid of 200 × 150 (about 31 × 25 km), each a polygon of 16 corners
 *   (a jittered rectangle of about 160 × 165 m), so that simplifying shapes has work to do;
 * - 10,000 animals of one species, moved by 500 done movement logs (an activity with
 *   is_movement) of 20 animals each into 500 fields spread over the farm, each log's geometry its
 *   field's (as farmOS copies a location's geometry to a movement): the animals' computed
 *   geometry.
 *
 * M1: the features endpoint answering several views of the farm as a map of 1086 × 446 px asks
 * for them (the whole farm at the zoom the dashboard opens at, then one to five zoom levels
 * closer at three places), from the load generator in a process of its own (bench/load.ts, open
 * loop at a fixed rate, signed in with a session cookie); its p95.
 * M2: Chromium, signed in, opens the dashboard; from the navigation's start to the map's
 * `data-state=ready` with a load drawn (`data-drawn`, set by browser/map.ts when OpenLayers has
 * rendered the answer). A fresh browser context each run (nothing cached); the slowest of RUNS.
 * M3: with the map focused, the keys a user presses (arrows pan, + and - zoom; OpenLayers animates
 * each for 100 ms), each timed from its keydown to the next answer drawn (`data-loads` one more,
 * state ready); the slowest and the p95 of all.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Page } from 'playwright-core';
import { startTestServer, ADMIN, type TestServer } from '../test/support/server.ts';
import { parseWkt } from '../runtime/values/geometry.ts';
import { write } from '../runtime/storage/transactions.ts';
import type { ItemValue, Reference } from '../runtime/storage/records.ts';
import { prng } from './dataset.ts';
import { SESSION_COOKIE, webSignIn } from './web.ts';
import { load, writeJson, type Row } from './workloads.ts';

export const FIELDS = { cols: 200, rows: 150 };
export const ANIMALS = 10_000;
const PER_MOVE = 20;
/** The farm's south-west corner and each field's cell, in degrees. */
const WEST = 4.8;
const SOUTH = 44.9;
const CELL = { lon: 0.002, lat: 0.0015 };
/** The dashboard's map in Chromium at a 1280 × 900 window, as M2 opens it (measured: the card's width, 28rem less its border). */
const MAP_PX = { width: 1086, height: 446 };
const TARGETS = { M1: 200, M2: 2000, M3: 300 };

type Values = Map<string, ItemValue | ItemValue[]>;
const ref = (targetId: number): Reference => ({ targetId, meta: {} }) as Reference;

/** A field: a rectangle inside its cell with three jittered points along each side (16 corners). */
function fieldWkt(col: number, row: number, rand: () => number): string {
  const x0 = WEST + col * CELL.lon + CELL.lon * 0.05;
  const y0 = SOUTH + row * CELL.lat + CELL.lat * 0.05;
  const w = CELL.lon * 0.9;
  const h = CELL.lat * 0.9;
  const j = () => (rand() - 0.5) * CELL.lon * 0.04;
  const pts: Array<[number, number]> = [];
  const side = (ax: number, ay: number, bx: number, by: number) => {
    for (let i = 0; i < 4; i++) {
      const t = i / 4;
      pts.push([ax + (bx - ax) * t + (i ? j() : 0), ay + (by - ay) * t + (i ? j() : 0)]);
    }
  };
  side(x0, y0, x0 + w, y0);
  side(x0 + w, y0, x0 + w, y0 + h);
  side(x0 + w, y0 + h, x0, y0 + h);
  side(x0, y0 + h, x0, y0);
  pts.push(pts[0]!);
  return `POLYGON ((${pts.map(([x, y]) => `${x.toFixed(7)} ${y.toFixed(7)}`).join(', ')}))`;
}

/** Web Mercator: a longitude and latitude as world pixels at a zoom, and back. */
const worldPx = (z: number) => 256 * 2 ** z;
const toPx = (lon: number, lat: number, z: number): [number, number] => {
  const s = Math.sin((lat * Math.PI) / 180);
  return [((lon + 180) / 360) * worldPx(z), (0.5 - Math.log((1 + s) / (1 - s)) / (4 * Math.PI)) * worldPx(z)];
};
const fromPx = (x: number, y: number, z: number): [number, number] => {
  const n = Math.PI - (2 * Math.PI * y) / worldPx(z);
  return [(x / worldPx(z)) * 360 - 180, (180 / Math.PI) * Math.atan(Math.sinh(n))];
};

/** The features request of a map of MAP_PX centred at (lon, lat) at zoom `z`, every layer (as the dashboard asks it). */
function viewPath(lon: number, lat: number, z: number): string {
  const [cx, cy] = toPx(lon, lat, z);
  const [w, n] = fromPx(cx - MAP_PX.width / 2, cy - MAP_PX.height / 2, z);
  const [e, s] = fromPx(cx + MAP_PX.width / 2, cy + MAP_PX.height / 2, z);
  return `/farm/map/features?bbox=${[w, s, e, n].map((v) => v.toFixed(6)).join(',')}&zoom=${Math.round(z)}`;
}

/** The zoom OpenLayers' `fit` gives the farm's extent on MAP_PX with 24 px of padding (browser/map.ts viewFor). */
function fitZoom(w: number, s: number, e: number, n: number): number {
  const [x0, y0] = toPx(w, n, 0);
  const [x1, y1] = toPx(e, s, 0);
  return Math.log2(Math.min((MAP_PX.width - 48) / (x1 - x0), (MAP_PX.height - 48) / (y1 - y0)));
}

const percentile = (xs: number[], q: number) => {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
};

/** The farm of 30,000 fields and 10,000 animals (the top of this file), through the storage layer's bulk path. */
export async function makeFarm(server: TestServer, say: (s: string) => void): Promise<void> {
  const ctx = server.ctx;
  const knex = ctx.db.knex;
  const entities = ctx.services.entities;
  const rtOf = (type: string) => {
    const rt = ctx.registry.get(type);
    if (!rt) throw new Error(`no ${type} here`);
    return rt;
  };
  const rand = prng(42);
  const now = Math.floor(Date.now() / 1000);
  const revision = { userId: 1, created: now, message: 'bench/map.ts' };
  const bulk = async (type: string, values: Values[]): Promise<number[]> => {
    const rt = rtOf(type);
    const ids: number[] = [];
    for (let i = 0; i < values.length; i += 2000)
      ids.push(
        ...(await write(knex, (trx) =>
          entities.createManyVerbatim(
            trx,
            rt,
            values.slice(i, i + 2000).map((v) => ({ uuid: randomUUID(), values: v, revision })),
            now,
          ),
        )),
      );
    return ids;
  };
  const t0 = Date.now();
  const wkts: string[] = [];
  for (let row = 0; row < FIELDS.rows; row++)
    for (let col = 0; col < FIELDS.cols; col++) wkts.push(fieldWkt(col, row, rand));
  const fieldIds = await bulk(
    'asset--land',
    wkts.map(
      (wkt, i) =>
        new Map<string, ItemValue | ItemValue[]>([
          ['name', `Field ${i + 1}`],
          ['land_type', 'field'],
          ['intrinsic_geometry', parseWkt(wkt) as unknown as ItemValue],
        ]),
    ),
  );
  const tFields = Date.now() - t0;
  const [species] = await bulk('taxonomy_term--animal_type', [new Map([['name', 'Sheep']])]);
  const animalIds = await bulk(
    'asset--animal',
    Array.from(
      { length: ANIMALS },
      (_, i) =>
        new Map<string, ItemValue | ItemValue[]>([
          ['name', `Ewe ${i + 1}`],
          ['animal_type', ref(species!)],
        ]),
    ),
  );
  const moves = ANIMALS / PER_MOVE;
  const targets = Array.from({ length: moves }, () => Math.floor(rand() * fieldIds.length));
  await bulk(
    'log--activity',
    targets.map(
      (f, i) =>
        new Map<string, ItemValue | ItemValue[]>([
          ['name', `Move to Field ${f + 1}`],
          ['status', 'done'],
          ['timestamp', now - 86_400 * (1 + (i % 300))],
          ['is_movement', true],
          ['asset', animalIds.slice(i * PER_MOVE, (i + 1) * PER_MOVE).map(ref)],
          ['location', [ref(fieldIds[f]!)]],
          ['geometry', parseWkt(wkts[f]!) as unknown as ItemValue],
        ]),
    ),
  );
  await ctx.services.placements.requestRebuild(knex);
  const rebuilt = await ctx.services.placements.rebuildIfPending(knex);
  const placed = Number(
    ((await knex('asset_location').whereNull('end_ts').count({ n: '*' }).first()) as { n: number | string }).n,
  );
  say(
    `M: farm made in ${((Date.now() - t0) / 1000).toFixed(1)} s (${fieldIds.length.toLocaleString('en')} fields in ${(tFields / 1000).toFixed(1)} s, ${animalIds.length.toLocaleString('en')} animals, ${moves} movement logs; ${rebuilt.toLocaleString('en')} assets' placements rebuilt, ${placed.toLocaleString('en')} animals placed)`,
  );
}

/** M1's views: the whole farm as the dashboard opens on it, then one to five zooms closer at three places. */
export function farmViews(): { views: string[]; z0: number } {
  const east = WEST + FIELDS.cols * CELL.lon;
  const north = SOUTH + FIELDS.rows * CELL.lat;
  const z0 = fitZoom(WEST, SOUTH, east, north);
  const centre = [(WEST + east) / 2, (SOUTH + north) / 2] as const;
  const views = [viewPath(centre[0], centre[1], z0)];
  const places = [
    [WEST + (east - WEST) * 0.3, SOUTH + (north - SOUTH) * 0.4],
    [WEST + (east - WEST) * 0.7, SOUTH + (north - SOUTH) * 0.6],
    [WEST + (east - WEST) * 0.05, SOUTH + (north - SOUTH) * 0.9],
  ];
  for (let dz = 1; dz <= 5; dz++) for (const [lon, lat] of places) views.push(viewPath(lon!, lat!, z0 + dz));
  return { views, z0 };
}

export interface MapOptions {
  /** Seconds of M1's load. */
  seconds: number;
  /** M1's requests per second. */
  rate: number;
  /** Navigations of M2, and passes over M3's keys. */
  runs: number;
  /** Which rows to measure (the farm is made for any). */
  rows: ReadonlySet<'M1' | 'M2' | 'M3'>;
}

export async function mapRows(say: (s: string) => void, options: MapOptions): Promise<Row[]> {
  const server = await startTestServer({ env: { TILTH_TIME_ZONE: 'UTC' } });
  const work = mkdtempSync(join(tmpdir(), 'tilth-bench-map-'));
  const out: Row[] = [];
  try {
    await makeFarm(server, say);
    const { views, z0 } = farmViews();
    const cookie = `${SESSION_COOKIE}=${await webSignIn(server.url, ADMIN)}`;

    if (options.rows.has('M1')) {
      // Each view once, for what it answers (and to warm the server's code paths).
      const answers: string[] = [];
      for (const path of views) {
        const started = performance.now();
        const res = await fetch(`${server.url}${path}`, { headers: { Cookie: cookie } });
        const text = await res.text();
        if (res.status !== 200) throw new Error(`GET ${path}: ${res.status} ${text.slice(0, 200)}`);
        const body = JSON.parse(text) as { features: Array<{ properties: { kind: string } }>; total: number };
        const kinds = new Map<string, number>();
        for (const f of body.features) kinds.set(f.properties.kind, (kinds.get(f.properties.kind) ?? 0) + 1);
        answers.push(
          `z${/zoom=(\d+)/.exec(path)![1]} ${Math.round(performance.now() - started)} ms ${(text.length / 1024).toFixed(0)} KB ${[
            ...kinds,
          ]
            .map(([k, n]) => `${n} ${k}s`)
            .join(' ')}`,
        );
      }
      say(`M1: the views, each once: ${answers.join('; ')}`);
      const list = writeJson(work, 'm1.json', views);
      const r = await load({
        url: server.url,
        seconds: options.seconds,
        connections: 4,
        rate: options.rate,
        // The same requests for a few seconds first, not counted: a server's first answers of a
        // kind run while V8 still compiles their code.
        warmup: 3,
        headers: { Cookie: cookie },
        mode: 'randomPath',
        list,
      });
      const p95 = r.p95 ?? r.p99;
      out.push({
        id: 'M1',
        what: `the map's features of one view, ${views.length} views of the farm (the whole farm at zoom ${Math.round(z0)}, then zooms ${Math.round(z0) + 1}–${Math.round(z0) + 5} at three places), ${options.rate} req/s from the load process`,
        figure: `p50 ${r.p50} ms, p95 ${p95} ms, p99 ${r.p99} ms (${r.requests} requests${r.errors || r.non2xx ? `, ${r.errors} errors, ${r.non2xx} non-2xx` : ''})`,
        target: `p95 ≤ ${TARGETS.M1} ms`,
        met: r.errors === 0 && r.non2xx === 0 && r.requests > 0 ? p95 <= TARGETS.M1 : 'n/a',
        detail: { load: r, views, answers },
      });
    }

    if (options.rows.has('M2') || options.rows.has('M3')) {
      const browser = await chromium.launch({
        executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
        args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
      });
      try {
        const url = new URL(server.url);
        const cookies = [
          {
            name: SESSION_COOKIE,
            value: cookie.slice(SESSION_COOKIE.length + 1),
            domain: url.hostname,
            path: '/',
          },
        ];
        const map = '.map-card [data-map]';
        const ready = (page: Page, after: number) =>
          page.waitForFunction(
            ([sel, n]) => {
              const el = document.querySelector<HTMLElement>(sel as string);
              return el?.dataset.state === 'ready' && Number(el.dataset.loads ?? 0) > (n as number);
            },
            [map, after] as const,
            { timeout: 30_000, polling: 'raf' },
          );
        const drawnAt = async (page: Page) =>
          Number(await page.locator(map).getAttribute('data-drawn', { timeout: 5_000 }));
        const m2: number[] = [];
        const m3: Array<{ key: string; ms: number; zoom: number }> = [];
        const KEYS = ['+', 'ArrowRight', '+', 'ArrowDown', '+', 'ArrowLeft', '-', 'ArrowUp', '-', '-'];
        for (let run = 0; run < options.runs; run++) {
          // A fresh context: nothing cached, as a first visit.
          const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
          await context.addCookies(cookies);
          const page = await context.newPage();
          const errors: string[] = [];
          page.on('pageerror', (e) => errors.push(e.message));
          await page.goto(`${server.url}/farm`);
          await ready(page, 0);
          m2.push(await drawnAt(page));
          if (options.rows.has('M3')) {
            await page.focus(map);
            for (const key of KEYS) {
              const loads = Number(await page.locator(map).getAttribute('data-loads'));
              await page.evaluate(() => {
                const w = window as unknown as { keyAt?: number };
                delete w.keyAt;
                window.addEventListener('keydown', () => (w.keyAt = performance.now()), { capture: true, once: true });
              });
              await page.keyboard.press(key);
              await ready(page, loads);
              const at = await page.evaluate(() => (window as unknown as { keyAt?: number }).keyAt ?? NaN);
              const zoom = Number(
                /zoom=(\d+)/.exec(
                  await page.evaluate(
                    () =>
                      performance
                        .getEntriesByType('resource')
                        .filter((e) => e.name.includes('/farm/map/features'))
                        .pop()?.name ?? '',
                  ),
                )?.[1],
              );
              m3.push({ key, ms: Math.round((await drawnAt(page)) - at), zoom });
            }
          }
          if (errors.length) throw new Error(`the dashboard's script failed: ${errors.join('; ')}`);
          await context.close();
        }
        if (options.rows.has('M2')) {
          const worst = Math.max(...m2);
          out.push({
            id: 'M2',
            what: `the dashboard's map first drawn in Chromium (navigation start to the first answer drawn; a fresh context each, slowest of ${options.runs})`,
            figure: `${m2.join('/')} ms`,
            target: `≤ ${TARGETS.M2} ms`,
            met: worst <= TARGETS.M2,
            detail: { times: m2 },
          });
        }
        if (options.rows.has('M3')) {
          const times = m3.map((m) => m.ms);
          const worst = Math.max(...times);
          const byZoom = new Map<number, number[]>();
          for (const m of m3) byZoom.set(m.zoom, [...(byZoom.get(m.zoom) ?? []), m.ms]);
          out.push({
            id: 'M3',
            what: `a pan or zoom redrawn (arrow keys and +/- on the focused map, keydown to the answer drawn, 100 ms of it OpenLayers' animation; ${m3.length} moves)`,
            figure: `p50 ${percentile(times, 0.5)} ms, p95 ${percentile(times, 0.95)} ms, slowest ${worst} ms; slowest by zoom ${[
              ...byZoom,
            ]
              .sort(([a], [b]) => a - b)
              .map(([z, ts]) => `z${z} ${Math.max(...ts)}`)
              .join(', ')} ms`,
            target: `≤ ${TARGETS.M3} ms`,
            met: worst <= TARGETS.M3,
            detail: { moves: m3 },
          });
        }
      } finally {
        await browser.close();
      }
    }
    return out;
  } finally {
    rmSync(work, { recursive: true, force: true });
    await server.close();
  }
}

/** `node --import tsx bench/map.ts [--only=M1,M2] [--seconds=N] [--rate=N] [--runs=N]`: the rows alone. */
if (import.meta.url === `file://${process.argv[1]}`) {
  const args = new Map(
    process.argv.slice(2).map((a) => {
      const [k, v] = a.replace(/^--/, '').split('=');
      return [k!, v ?? '1'];
    }),
  );
  const only = (args.get('only') ?? 'M1,M2,M3').split(',') as Array<'M1' | 'M2' | 'M3'>;
  const rows = await mapRows((s) => console.log(s), {
    seconds: Number(args.get('seconds') ?? 10),
    rate: Number(args.get('rate') ?? 5),
    runs: Number(args.get('runs') ?? 3),
    rows: new Set(only),
  });
  for (const r of rows)
    console.log(`${r.met === true ? '✓' : '✗'} ${r.id} ${r.what}: ${r.figure} [target ${r.target}]`);
}
