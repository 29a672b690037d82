/**
 * The bench's rows for the web interface (issue 38, U1–U5): the pages under /farm, signed in with
 * a session cookie as a browser is (the bench's administrator, bench/processes.ts ADMIN), against
 * the API's answers to the same questions, measured alternately in the same run (bench/run.ts's
 * `pair`). U3's form bodies, U4 and U5 come from Chromium (bench/browser.ts, on the load's core).
 *
 * - U1: a list page of 50 logs with two of the list's filters (status, and a date range), against
 *   the API's page of the query the page asks of the API's machinery (the same filter, sort, page
 *   size and includes: the relationships the list shows). Checked first: the same 50 logs in order.
 * - U2: a log's page (a random one of P3's 2,000 each request) against P3's API read of it.
 * - U3: a log's edit form POSTed as Chromium serializes it (the name and the asset changed, as P5's
 *   PATCH changes them), against P5. Answered by a 303 to the record's page (not followed). Sent
 *   without the version the form was opened at (each form is posted many times, and a version is
 *   good once), so, like P5's PATCH without If-Match, it is not checked for staleness.
 * - U4: what a first visit transfers (open /farm, sign in, the dashboard) with an empty cache.
 * - U5: time from navigation to content (first contentful paint) in Chromium, per page kind.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { ADMIN, ROOT } from './processes.ts';
import { inLoadProcess } from './workloads.ts';
import type { BrowserAnswer, BrowserJob, Timing, Transfer } from './browser.ts';

export const SESSION_COOKIE = 'tilth_session';
const FORM = 'application/x-www-form-urlencoded';
const DAY = 86_400;

/** The dates of U1's range (the list's date inputs, in the farm's time zone): P1's nine years. */
export const U1_RANGE = { from: '2017-01-01', to: '2025-12-31' };

/** The cookies a response sets, by name. */
function setCookies(res: Response): Map<string, string> {
  const out = new Map<string, string>();
  for (const line of res.headers.getSetCookie()) {
    const [pair] = line.split(';');
    const at = pair!.indexOf('=');
    out.set(pair!.slice(0, at).trim(), pair!.slice(at + 1).trim());
  }
  return out;
}

/** Sign in through the web sign-in form as a browser does; the session cookie's value. */
export async function webSignIn(base: string, user = ADMIN): Promise<string> {
  const form = await fetch(`${base}/farm/sign-in`, { redirect: 'manual' });
  const html = await form.text();
  const browser = setCookies(form);
  const csrf = /name="csrf_token" value="([^"]+)"/.exec(html)?.[1];
  if (form.status !== 200 || !csrf) throw new Error(`GET /farm/sign-in: ${form.status}, no CSRF token`);
  const res = await fetch(`${base}/farm/sign-in`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'Content-Type': FORM, Cookie: [...browser].map(([k, v]) => `${k}=${v}`).join('; ') },
    body: new URLSearchParams({ csrf_token: csrf, return_to: '/farm', username: user.name, password: user.password }),
  });
  const session = setCookies(res).get(SESSION_COOKIE);
  if (res.status !== 303 || !session) throw new Error(`POST /farm/sign-in: ${res.status} ${await res.text()}`);
  return session;
}

/** U1's page: done activity logs in the range, the list's default sort (newest first). */
export function webListPath(): string {
  const q = new URLSearchParams({ status: 'done', timestamp_from: U1_RANGE.from, timestamp_to: U1_RANGE.to });
  return `/farm/log/activity?${q}`;
}

/** Midnight of a date in this machine's time zone (the server's, and so the farm's), in seconds. */
function localMidnight(date: string): number {
  return new Date(`${date}T00:00`).getTime() / 1000;
}

/**
 * The API's query that U1's page asks (runtime/web/lists.ts): the range from the first day's
 * midnight to before the day after the last, the status, the list's sort, 50 a page, and the
 * relationships the list shows included.
 */
export function apiListPath(include: readonly string[]): string {
  const q = new URLSearchParams();
  const condition = (key: string, path: string, operator: string, value: string) => {
    q.set(`filter[${key}][condition][path]`, path);
    q.set(`filter[${key}][condition][operator]`, operator);
    q.set(`filter[${key}][condition][value]`, value);
  };
  condition('c0', 'timestamp', '>=', String(localMidnight(U1_RANGE.from)));
  condition('c1', 'timestamp', '<', String(localMidnight(U1_RANGE.to) + DAY));
  condition('c2', 'status', '=', 'done');
  q.set('sort', '-timestamp');
  q.set('page[limit]', '50');
  if (include.length) q.set('include', include.join(','));
  return `/api/log/activity?${q}`;
}

/** The relationships the activity log list shows as columns (generated/ui), among those a log has. */
export function listedRelationships(relationships: readonly string[]): string[] {
  const ui = JSON.parse(readFileSync(join(ROOT, 'generated', 'ui', 'log--activity.json'), 'utf8')) as {
    list: { columns: string[] };
  };
  return ui.list.columns.filter((c) => relationships.includes(c));
}

/** The logs a list page shows, in order (each row's link to its page). */
export function logsOnListPage(html: string): string[] {
  return [...html.matchAll(/<td><a href="\/farm\/log\/activity\/([0-9a-f-]{36})">/g)].map((m) => m[1]!);
}

/** The edit forms of these logs as Chromium would send them, each with its path. */
export async function editForms(
  base: string,
  cookie: string,
  uuids: readonly string[],
): Promise<Array<{ path: string; body: string }>> {
  const pages: string[] = [];
  // Eight at a time, as the closed loop's connections.
  for (let i = 0; i < uuids.length; i += 8) {
    pages.push(
      ...(await Promise.all(
        uuids.slice(i, i + 8).map(async (u) => {
          const res = await fetch(`${base}/farm/log/activity/${u}/edit`, { headers: { Cookie: cookie } });
          if (res.status !== 200) throw new Error(`GET /farm/log/activity/${u}/edit: ${res.status}`);
          return res.text();
        }),
      )),
    );
  }
  const answer = await browserJob({ kind: 'forms', pages });
  if (answer.kind !== 'forms') throw new Error('bench/browser.ts answered another job');
  return answer.bodies.map((body, i) => {
    const form = new URLSearchParams(body);
    // Not the version the form was opened at: each form is posted many times (see the header).
    form.set('version', '');
    return { path: `/farm/log/activity/${uuids[i]}/edit`, body: form.toString() };
  });
}

/** What to type in a log's asset field for these animals: "Name [UUID]", as the edit form shows a reference. */
export function animalLabels(db: string, count = 200): string[] {
  const sdb = new Database(db, { readonly: true });
  const rows = sdb.prepare(`SELECT uuid, name FROM asset WHERE bundle = 'animal' LIMIT ?`).all(count) as Array<{
    uuid: string;
    name: string;
  }>;
  sdb.close();
  return rows.map((r) => `${r.name} [${r.uuid}]`);
}

/**
 * One edit form POSTed as U3 posts it, then read back through the API: a 303 to the log's page,
 * and the log renamed with the asset typed. The differences, or none.
 */
export async function checkWebEdit(
  base: string,
  cookie: string,
  form: { path: string; body: string },
  asset: string,
  auth: Record<string, string>,
): Promise<string[]> {
  const body = new URLSearchParams(form.body);
  body.set('name', 'Renamed by the form check');
  body.set('asset', asset);
  const res = await fetch(`${base}${form.path}`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'Content-Type': FORM, Cookie: cookie },
    body: body.toString(),
  });
  const problems: string[] = [];
  const id = form.path.split('/')[4]!;
  if (res.status !== 303) problems.push(`the POST answered ${res.status}: ${(await res.text()).slice(0, 300)}`);
  else if (res.headers.get('location') !== `/farm/log/activity/${id}?saved=saved`)
    problems.push(`the POST led to ${res.headers.get('location')}`);
  const read = (await (await fetch(`${base}/api/log/activity/${id}`, { headers: auth })).json()) as {
    data: { attributes: { name: string }; relationships: { asset: { data: Array<{ id: string }> } } };
  };
  if (read.data.attributes.name !== 'Renamed by the form check')
    problems.push(`the API reads ${read.data.attributes.name}`);
  const uuid = /\[([0-9a-f-]{36})\]$/.exec(asset)?.[1];
  const assets = read.data.relationships.asset.data.map((a) => a.id);
  if (assets.length !== 1 || assets[0] !== uuid) problems.push(`the API reads the assets ${assets.join(', ')}`);
  return problems;
}

/** A job of bench/browser.ts, in its own process on the load's core. */
export function browserJob(job: BrowserJob): Promise<BrowserAnswer> {
  return inLoadProcess<BrowserAnswer>('browser.ts', job);
}

/** U4's figures: the responses' bytes on the wire, their bodies, and the bodies gzipped (in KB). */
export function transferred(list: readonly Transfer[]): {
  responses: number;
  wire: number;
  body: number;
  gzip: number;
} {
  const kb = (n: number) => +(n / 1024).toFixed(1);
  const sum = (k: 'wire' | 'body' | 'gzip') => list.reduce((n, t) => n + t[k], 0);
  return { responses: list.length, wire: kb(sum('wire')), body: kb(sum('body')), gzip: kb(sum('gzip')) };
}

/** The median of a page kind's navigations: first contentful paint (or the load event, if Chromium reported no paint). */
export function medianTiming(timings: readonly Timing[]): { fcp: number | null; load: number; response: number } {
  const median = (xs: number[]) => {
    const s = [...xs].sort((a, b) => a - b);
    return s.length ? Math.round(s[Math.floor((s.length - 1) / 2)]!) : NaN;
  };
  const paints = timings.map((t) => t.fcp).filter((x): x is number => x !== null);
  return {
    fcp: paints.length === timings.length ? median(paints) : null,
    load: median(timings.map((t) => t.load)),
    response: median(timings.map((t) => t.responseEnd)),
  };
}
