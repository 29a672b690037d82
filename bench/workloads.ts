/**
 * What the workloads of issue 10 (P0–P9, G; run in order by bench/run.ts) are made of: one
 * autocannon run in the load process (bench/load.ts, pinned to core 1 while the server is on
 * core 0), P1's query, the rows of the results table with their targets, ratios, and the byte
 * comparison behind the rendered baseline's check.
 */
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { LoadResult, LoadSpec } from './load.ts';
import { LOAD_CORE, PINNED, ROOT } from './processes.ts';
import { HISTORY_END, HISTORY_START } from './dataset.ts';

export const CLOSED_CONNECTIONS = 8;
export const RATE_CONNECTIONS = 16;

/** One autocannon run in the load process, on `cores` (a taskset list; null: unpinned). */
export function load(spec: LoadSpec, cores: string | null = LOAD_CORE): Promise<LoadResult> {
  return inLoadProcess<LoadResult>('load.ts', spec, cores);
}

/**
 * A bench script (bench/<file>) run in a process of its own on the load's core, `spec` as JSON on
 * its stdin, its answer as JSON on its stdout: the load generator (load.ts), or Chromium driven
 * through the web pages (browser.ts), whose processes inherit the core.
 */
export function inLoadProcess<T>(file: string, spec: unknown, cores: string | null = LOAD_CORE): Promise<T> {
  const args = ['--import', 'tsx', join('bench', file)];
  const [cmd, argv] =
    PINNED && cores !== null ? ['taskset', ['-c', cores, process.execPath, ...args]] : [process.execPath, args];
  return new Promise((resolve, reject) => {
    const child = spawn(cmd as string, argv as string[], { cwd: ROOT, stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (err += c.toString()));
    child.on('exit', (code) => {
      if (code === 0) resolve(JSON.parse(out) as T);
      else reject(new Error(`bench/${file} exited with ${code}: ${err}`));
    });
    child.stdin.end(JSON.stringify(spec));
  });
}

/** P1's query: done activity logs in a nine-year range, newest first (the range leaves out the first year). */
export function p1Path(): string {
  const from = HISTORY_START + 365 * 86_400;
  const q = [
    'filter[ts][condition][path]=timestamp',
    'filter[ts][condition][operator]=BETWEEN',
    `filter[ts][condition][value][0]=${from}`,
    `filter[ts][condition][value][1]=${HISTORY_END}`,
    'filter[status]=done',
    'sort=-timestamp',
  ];
  // Percent-encoded brackets, as a browser or farmOS.js sends them.
  return `/api/log/activity?${q.map((p) => p.replace(/\[/g, '%5B').replace(/\]/g, '%5D')).join('&')}`;
}

export interface Row {
  id: string;
  what: string;
  /** The measured figure, written out. */
  figure: string;
  target: string;
  /** null: no target for this row (reported only); 'n/a': the target could not be measured. */
  met: boolean | null | 'n/a';
  detail?: Record<string, unknown>;
}

export const fmt = (r: LoadResult) =>
  `${r.rps.toLocaleString('en')} req/s, p50 ${r.p50} ms, p99 ${r.p99} ms${r.errors || r.non2xx ? ` (${r.errors} errors, ${r.non2xx} non-2xx)` : ''}`;
/** A run whose requests failed measured nothing: its figures are not counted as met. */
export const clean = (r: LoadResult) => r.errors === 0 && r.non2xx === 0 && r.requests > 0;
/**
 * Several load generators' results run at once, one per server process, as one: the rates
 * summed, the requests and failures summed, and the worst of their p50s and p99s (a
 * conservative merge: the true percentiles of the whole lie between the best and the worst).
 */
export function sumLoads(parts: LoadResult[]): LoadResult {
  const sum = (k: 'rps' | 'requests' | 'errors' | 'non2xx') => parts.reduce((n, r) => n + r[k], 0);
  return {
    rps: sum('rps'),
    p50: Math.max(...parts.map((r) => r.p50)),
    p99: Math.max(...parts.map((r) => r.p99)),
    requests: sum('requests'),
    errors: sum('errors'),
    non2xx: sum('non2xx'),
  };
}
export const ratio = (a: LoadResult, b: LoadResult) => +(a.rps / Math.max(1, b.rps)).toFixed(3);

/** The first offset where two responses differ, or -1 when they are the same bytes. */
export function firstDifference(a: Buffer, b: Buffer): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return i;
  return a.length === b.length ? -1 : n;
}

export function writeJson(dir: string, name: string, value: unknown): string {
  const file = join(dir, name);
  writeFileSync(file, JSON.stringify(value));
  return file;
}
