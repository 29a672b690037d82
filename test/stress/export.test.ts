// An export streams: the server's memory stays flat however many records it writes (operations
// issue, item 8). The logs are stored straight through the storage layer (as the benchmark's
// dataset generator does), then exported as CSV from a server in its own process while its
// resident memory is sampled.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import knexFactory from 'knex';
import { createTestDatabase, ADMIN } from '../support/server.ts';
import { startChildServer } from '../support/child-server.ts';
import { passwordToken } from '../support/http.ts';
import { FULL, report } from './scale.ts';

const LOGS = FULL ? 1_000_000 : 20_000;
const HEAP_MB = 64;

test(`exporting ${LOGS} logs as CSV streams them with flat memory`, async () => {
  const database = await createTestDatabase({ migrated: true });
  let server = await startChildServer(database.env);
  try {
    await server.stop(); // the schema is made; now fill it as fast as the storage layer goes
    const knex = database.env.DATABASE_URL
      ? knexFactory({ client: 'pg', connection: database.env.DATABASE_URL })
      : knexFactory({
          client: 'better-sqlite3',
          connection: { filename: join(database.env.TILTH_DATA_DIR!, 'tilth.sqlite') },
          useNullAsDefault: true,
        });
    try {
      for (let i = 0; i < LOGS; i += 1000) {
        const rows = Array.from({ length: Math.min(1000, LOGS - i) }, (_, k) => ({
          uuid: randomUUID(),
          bundle: 'activity',
          name: `Log ${i + k}`,
          status: 'done',
          timestamp: 1_600_000_000 + i + k,
          created: 1_600_000_000,
          changed: 1_600_000_000,
        }));
        await knex.batchInsert('log', rows, 400);
      }
    } finally {
      await knex.destroy();
    }
    // A small heap: an export that held its rows, or kept anything from one export to the next,
    // would run out of it (the RSS samples below are the figures; the heap cap is the proof, since
    // RSS depends on when the collector last ran).
    server = await startChildServer(database.env, { NODE_OPTIONS: `--max-old-space-size=${HEAP_MB}` });
    const token = await passwordToken(server.url, ADMIN.name, ADMIN.password);
    const rss = () =>
      Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${server.process.pid}/status`, 'utf8'))![1]) / 1024;
    const before = rss();
    /** One export, read slowly at first as a phone on a poor link would: the server must wait, not buffer. */
    const exportOnce = async () => {
      let peak = rss();
      const sampler = setInterval(() => (peak = Math.max(peak, rss())), 50);
      // A server that buffers runs out of its capped heap: it dies or crawls, and the deadline says so.
      const res = await fetch(`${server.url}/api/log/activity?_format=csv&sort=timestamp`, {
        headers: { Authorization: `Bearer ${token}` },
        signal: AbortSignal.timeout(120_000),
      });
      assert.equal(res.status, 200);
      let rows = 0;
      let bytes = 0;
      const reader = res.body!.getReader();
      for (let chunks = 0; ; chunks++) {
        const { done, value } = await reader.read();
        if (done) break;
        bytes += value.length;
        for (const b of value) if (b === 10) rows++;
        if (chunks < 20) await new Promise((r) => setTimeout(r, 20));
      }
      clearInterval(sampler);
      return { rows: rows - 1, bytes, peak };
    };
    const started = Date.now();
    const first = await exportOnce();
    const seconds = (Date.now() - started) / 1000;
    const second = await exportOnce();
    const third = await exportOnce();
    const growth = Math.round(first.peak - before);
    report('export', {
      logs: LOGS,
      rows: first.rows,
      megabytes: Math.round(first.bytes / 1e6),
      seconds: Math.round(seconds),
      rssBeforeMb: Math.round(before),
      rssPeakGrowthMb: growth,
      secondPeakMb: Math.round(second.peak),
      thirdPeakMb: Math.round(third.peak),
      heapCapMb: HEAP_MB,
    });
    assert.equal(first.rows, LOGS, 'every log, one row each');
    // A buffered export would hold the whole file (and its records) at once; a streamed one settles
    // at a working set that does not depend on the size, and does not grow on the next export.
    assert.ok(growth < 200, `the server's memory grew by ${growth} MB while exporting`);
    assert.equal(second.rows, LOGS, 'a second export, in the same capped heap, is whole');
    assert.equal(third.rows, LOGS, 'and a third');
  } finally {
    await server.stop();
    await database.drop();
  }
});
