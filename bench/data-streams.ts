/**
 * `node --import tsx bench/data-streams.ts`: how long reading one week of one data stream takes
 * when the farm holds BENCH_READINGS readings (default 10,000,000) spread over BENCH_STREAMS
 * streams (default 10), one reading per stream per minute, inserted in arrival order (every
 * stream's reading for a minute, then the next minute) as devices would post them.
 *
 * The readings are loaded by one INSERT … SELECT per million rows, generated inside the database
 * (a recursive CTE on SQLite, generate_series on PostgreSQL): the bench measures reads, not
 * the load. Then GET /api/data_stream/{uuid}/data?start=…&end=… (10,080 readings) is timed over
 * HTTP, BENCH_RUNS times (default 20), and the median and worst are printed. SQLite in a
 * temporary directory unless DATABASE_URL names a PostgreSQL database (which must be empty).
 * Loopback only; bounded in count.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../runtime/config.ts';
import { startServer } from '../runtime/server.ts';
import { createLogger } from '../runtime/http/logging.ts';

const READINGS = Number(process.env.BENCH_READINGS ?? 10_000_000);
const STREAMS = Number(process.env.BENCH_STREAMS ?? 10);
const RUNS = Number(process.env.BENCH_RUNS ?? 20);
const PASSWORD = 'bench-password';
const MINUTE = 60;
const WEEK = 7 * 24 * 3600;
const BATCH_MINUTES = Math.ceil(1_000_000 / STREAMS);

async function main(): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), 'tilth-bench-streams-'));
  const env: Record<string, string> = {
    PORT: '0',
    HOST: '127.0.0.1',
    TILTH_DATA_DIR: dataDir,
    TILTH_ADMIN_PASSWORD: PASSWORD,
    TILTH_LOG_LEVEL: 'silent',
  };
  if (process.env.DATABASE_URL) env.DATABASE_URL = process.env.DATABASE_URL;
  const server = await startServer({ config: loadConfig(env), migrate: true, logger: createLogger('silent') });
  const base = server.ctx.internalUrl;
  const knex = server.ctx.db.knex;
  const dialect = server.ctx.db.dialect;
  try {
    const token = await passwordToken(base);
    const streams: Array<{ id: string; key: string; rowId: number }> = [];
    for (let i = 0; i < STREAMS; i++) {
      const res = await fetch(`${base}/api/data_stream/basic`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/vnd.api+json' },
        body: JSON.stringify({ data: { type: 'data_stream--basic', attributes: { name: `probe_${i}` } } }),
      });
      const body = (await res.json()) as any;
      streams.push({
        id: body.data.id,
        key: body.data.attributes.private_key,
        rowId: body.data.attributes.drupal_internal__id,
      });
    }
    const ids = streams.map((s) => s.rowId);
    const minutes = Math.ceil(READINGS / STREAMS);
    const t0 = 1_600_000_000;
    process.stdout.write(
      `Loading ${minutes * STREAMS} readings (${STREAMS} streams × ${minutes} minutes) on ${dialect}…\n`,
    );
    const loadStarted = Date.now();
    for (let from = 0; from < minutes; from += BATCH_MINUTES) {
      const to = Math.min(minutes, from + BATCH_MINUTES) - 1;
      // Values: a daily sine wave with a per-stream offset, so they are not all alike.
      if (dialect === 'sqlite') {
        await knex.raw(
          `WITH RECURSIVE m(x) AS (SELECT ? UNION ALL SELECT x + 1 FROM m WHERE x < ?),
           s(id) AS (SELECT value FROM json_each(?))
           INSERT INTO data_stream_basic (stream_id, timestamp, value)
           SELECT s.id, ? + m.x * ${MINUTE}, round(20 + 10 * sin(m.x / 229.2) + s.id, 2) FROM m CROSS JOIN s ORDER BY m.x, s.id`,
          [from, to, JSON.stringify(ids), t0],
        );
      } else {
        await knex.raw(
          `INSERT INTO data_stream_basic (stream_id, timestamp, value)
           SELECT s.id, ? + m.x * ${MINUTE}, round((20 + 10 * sin(m.x / 229.2) + s.id)::numeric, 2)::double precision
           FROM generate_series(?::bigint, ?::bigint) AS m(x) CROSS JOIN unnest(?::int[]) AS s(id) ORDER BY m.x, s.id`,
          [t0, from, to, ids],
        );
      }
      process.stdout.write(
        `  ${Math.min(minutes, to + 1) * STREAMS} rows, ${((Date.now() - loadStarted) / 1000).toFixed(0)} s\n`,
      );
    }
    if (dialect === 'postgres') await knex.raw('ANALYZE data_stream_basic');
    const loadSeconds = (Date.now() - loadStarted) / 1000;

    // A week in the middle of one stream's history.
    const stream = streams[Math.floor(STREAMS / 2)]!;
    const start = t0 + Math.floor(minutes / 2) * MINUTE;
    const url = `${base}/api/data_stream/${stream.id}/data?private_key=${stream.key}&start=${start}&end=${start + WEEK - 1}`;
    const times: number[] = [];
    let count = 0;
    for (let i = 0; i < RUNS + 2; i++) {
      const began = process.hrtime.bigint();
      const res = await fetch(url);
      const body = (await res.json()) as unknown[];
      const ms = Number(process.hrtime.bigint() - began) / 1e6;
      if (res.status !== 200) throw new Error(`GET week: ${res.status}`);
      count = body.length;
      if (i >= 2) times.push(ms); // two warm-up requests
    }
    times.sort((a, b) => a - b);
    const median = times[Math.floor(times.length / 2)]!;
    process.stdout.write(
      `Loaded in ${loadSeconds.toFixed(0)} s. Reading one week (${count} readings) of one stream out of ${minutes * STREAMS}: ` +
        `median ${median.toFixed(1)} ms, worst ${times[times.length - 1]!.toFixed(1)} ms over ${RUNS} requests (${dialect}).\n`,
    );
  } finally {
    await server.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

async function passwordToken(base: string): Promise<string> {
  const form = new URLSearchParams({
    grant_type: 'password',
    username: 'admin',
    password: PASSWORD,
    client_id: 'farm',
  });
  const res = await fetch(`${base}/oauth/token`, { method: 'POST', body: form });
  return ((await res.json()) as { access_token: string }).access_token;
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
