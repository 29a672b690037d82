/**
 * How big the stress tests run. `npm test` runs the short versions; `npm run stress` sets
 * TILTH_STRESS=full for the long ones the README's figures come from, and TILTH_STRESS_RESULTS to
 * a file each test appends its figures to (one JSON object a line).
 */
import { appendFileSync } from 'node:fs';

export const FULL = process.env.TILTH_STRESS === 'full';

export const SCALE = {
  /** Concurrent writers and how long they write. */
  writers: { clients: 16, seconds: FULL ? 120 : 4 },
  /** PATCHes by each of two clients to different fields of one record. */
  fieldRace: FULL ? 1000 : 100,
  /** Times the server is killed under load. */
  kills: FULL ? 100 : 10,
  /** `tilth import farmos`: times a run is SIGKILLed before one completes, and observation logs in the source farm. */
  importKills: FULL ? 10 : 1,
  importLogs: FULL ? 2000 : 5,
  /** Three processes behind a proxy (issue 26): 16 clients; one process killed and restarted every `killEvery` seconds. */
  processes: { clients: 16, seconds: FULL ? 120 : 0, killEvery: 15 },
  /** The change feed under concurrency: writers, readers, seconds a run and fast-check runs. */
  feed: { writers: 16, readers: 4, seconds: FULL ? 60 : 3, runs: 1 },
};

/** Record a test's figures for `npm run stress` (and show them in the test's output). */
export function report(name: string, figures: Record<string, unknown>): void {
  const line = JSON.stringify({
    name,
    database: process.env.DATABASE_URL ? 'postgres' : 'sqlite',
    full: FULL,
    ...figures,
  });
  console.log(`stress: ${line}`);
  if (process.env.TILTH_STRESS_RESULTS) appendFileSync(process.env.TILTH_STRESS_RESULTS, `${line}\n`);
}
