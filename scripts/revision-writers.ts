/**
 * `DATABASE_URL=postgres://… node --import tsx scripts/revision-writers.ts`: saves per second of
 * one entity type (logs) under WRITERS concurrent writers (default 16), against a real server on a
 * fresh PostgreSQL database made beside the one DATABASE_URL names (and dropped at the end); or on
 * SQLite in a temporary directory without DATABASE_URL. Each writer POSTs a log, then PATCHes it,
 * again and again, for SECONDS (default 10, after a 2 s warm-up): every save takes a revision
 * number of the `log` type (storage/revisions.ts), the thing measured (issue 40 §6). On
 * PostgreSQL it also samples pg_stat_activity every 50 ms: how many of the farm's sessions were
 * waiting on a lock, and on what, on average (a figure a busy machine's CPU does not blur as much as
 * saves per second). Loopback only.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { loadConfig } from '../runtime/config.ts';
import { startServer } from '../runtime/server.ts';
import { createLogger } from '../runtime/http/logging.ts';

const WRITERS = Number(process.env.WRITERS ?? 16);
const SECONDS = Number(process.env.SECONDS ?? 10);
const WARM_UP_MS = 2000;
const PASSWORD = 'bench-password';
const JSONAPI = 'application/vnd.api+json';

async function withAdmin(url: string, sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

/** Sample the farm's sessions while `on()`: the average number waiting on a lock and active, and the locks waited on. */
async function sampleLockWaits(
  url: string,
  on: () => boolean,
): Promise<{ waiting: number; active: number; samples: number; by: string }> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  let waiting = 0;
  let active = 0;
  let samples = 0;
  const by = new Map<string, number>();
  try {
    while (on()) {
      const { rows } = await client.query(
        "SELECT wait_event_type, wait_event, state FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'",
      );
      samples++;
      for (const r of rows as Array<{
        wait_event_type: string | null;
        wait_event: string | null;
        state: string | null;
      }>) {
        if (r.state === 'active' || r.state === 'idle in transaction') active++;
        if (r.wait_event_type === 'Lock') {
          waiting++;
          by.set(r.wait_event ?? '?', (by.get(r.wait_event ?? '?') ?? 0) + 1);
        }
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  } finally {
    await client.end();
  }
  const n = Math.max(1, samples);
  return {
    waiting: waiting / n,
    active: active / n,
    samples,
    by: [...by].map(([event, count]) => `${event} ${(count / n).toFixed(2)}`).join(', ') || 'none',
  };
}

async function main(): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), 'tilth-revision-writers-'));
  const env: Record<string, string> = {
    PORT: '0',
    HOST: '127.0.0.1',
    TILTH_DATA_DIR: dataDir,
    TILTH_ADMIN_PASSWORD: PASSWORD,
    TILTH_LOG_LEVEL: 'silent',
  };
  let drop: (() => Promise<void>) | null = null;
  if (process.env.DATABASE_URL) {
    const name = `tilth_revwriters_${process.pid}`;
    await withAdmin(process.env.DATABASE_URL, `CREATE DATABASE ${name}`);
    const url = new URL(process.env.DATABASE_URL);
    url.pathname = `/${name}`;
    env.DATABASE_URL = url.toString();
    drop = () => withAdmin(process.env.DATABASE_URL!, `DROP DATABASE IF EXISTS ${name}`);
  }
  const server = await startServer({ config: loadConfig(env), migrate: true, logger: createLogger('silent') });
  const base = server.ctx.internalUrl;
  try {
    const form = new URLSearchParams({
      grant_type: 'password',
      username: 'admin',
      password: PASSWORD,
      client_id: 'farm',
    });
    const token = (
      (await (await fetch(`${base}/oauth/token`, { method: 'POST', body: form })).json()) as { access_token: string }
    ).access_token;
    const headers = { Authorization: `Bearer ${token}`, 'Content-Type': JSONAPI, Accept: JSONAPI };
    let counting = false;
    let stop = false;
    let saves = 0;
    let failures = 0;
    const writer = async (w: number): Promise<void> => {
      for (let i = 0; !stop; i++) {
        const created = await fetch(`${base}/api/log/activity`, {
          method: 'POST',
          headers,
          body: JSON.stringify({
            data: {
              type: 'log--activity',
              attributes: { name: `Writer ${w} log ${i}`, status: 'done', timestamp: 1_700_000_000 + i },
            },
          }),
        });
        const body = (await created.json()) as any;
        if (created.status !== 201) failures++;
        else if (counting) saves++;
        if (created.status !== 201 || stop) continue;
        const patched = await fetch(`${base}/api/log/activity/${body.data.id}`, {
          method: 'PATCH',
          headers,
          body: JSON.stringify({
            data: {
              type: 'log--activity',
              id: body.data.id,
              attributes: { notes: { value: `Saved again by writer ${w}`, format: 'default' } },
            },
          }),
        });
        await patched.arrayBuffer();
        if (patched.status !== 200) failures++;
        else if (counting) saves++;
      }
    };
    const running = Array.from({ length: WRITERS }, (_, w) => writer(w));
    await new Promise((r) => setTimeout(r, WARM_UP_MS));
    counting = true;
    const started = Date.now();
    const waits = env.DATABASE_URL ? sampleLockWaits(env.DATABASE_URL, () => counting) : Promise.resolve(null);
    await new Promise((r) => setTimeout(r, SECONDS * 1000));
    counting = false;
    const elapsed = (Date.now() - started) / 1000;
    stop = true;
    await Promise.all(running);
    const sampled = await waits;
    const lockLine = sampled
      ? `; sessions waiting on a lock, on average: ${sampled.waiting.toFixed(2)} of ${sampled.active.toFixed(2)} active (${sampled.samples} samples; ${sampled.by})`
      : '';
    process.stdout.write(
      `${server.ctx.db.dialect}: ${WRITERS} writers of logs, ${(saves / elapsed).toFixed(1)} saves/s over ${elapsed.toFixed(1)} s (${saves} saves, ${failures} failed)${lockLine}\n`,
    );
  } finally {
    await server.close();
    rmSync(dataDir, { recursive: true, force: true });
    await drop?.();
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
