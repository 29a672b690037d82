/**
 * Chromium driven through the web pages for the bench's U rows (issue 38), in a process of its own
 * on the load's core (bench/workloads.ts inLoadProcess; Chromium's processes inherit the core): one
 * job described by a JSON spec on stdin, its answer as JSON on stdout. Debian's /usr/bin/chromium
 * through playwright-core, launched as test/web launches it.
 *
 * - `forms` (U3): the bodies a browser sends for the edit forms of the given pages, serialized by
 *   Chromium itself (FormData), so that the form posted under load is the browser's, field for field.
 * - `firstVisit` (U4): every response of a first visit with an empty cache (open /farm, sign in,
 *   the dashboard), then of one more page, with the bytes on the wire (headers and body as sent)
 *   and what each body would be gzipped.
 * - `timing` (U5): navigations to pages already signed in, each timed by the page's own Performance
 *   API: first contentful paint, and the navigation entry's response and load times.
 */
import { readFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { chromium, type Browser, type Page, type Request } from 'playwright-core';

export type BrowserJob =
  | { kind: 'forms'; pages: string[] }
  | { kind: 'firstVisit'; base: string; user: { name: string; password: string }; then: string }
  | {
      kind: 'timing';
      base: string;
      cookie: { name: string; value: string };
      pages: Array<{ what: string; paths: string[] }>;
      runs: number;
    };

/** One response of a visit: bytes on the wire (headers and body as sent), and its body decoded and gzipped. */
export interface Transfer {
  url: string;
  status: number;
  type: string;
  wire: number;
  body: number;
  gzip: number;
}

/** A navigation's times (ms from its start), by the page's Performance API. */
export interface Timing {
  path: string;
  /** First contentful paint: the page's first text or image on screen (null if Chromium reported none). */
  fcp: number | null;
  responseStart: number;
  responseEnd: number;
  domContentLoaded: number;
  load: number;
}

export type BrowserAnswer =
  | { kind: 'forms'; bodies: string[] }
  | { kind: 'firstVisit'; firstVisit: Transfer[]; then: Transfer[] }
  | { kind: 'timing'; pages: Array<{ what: string; timings: Timing[] }> };

async function launch(): Promise<Browser> {
  return chromium.launch({
    executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}

/** Each page's `form.record` as the browser would send it (application/x-www-form-urlencoded). */
async function forms(browser: Browser, pages: string[]): Promise<string[]> {
  const page = await browser.newPage();
  return page.evaluate((htmls) => {
    // The page's own DOM (this runs in Chromium; the project's TypeScript knows Node's globals only).
    const dom = globalThis as unknown as {
      DOMParser: new () => { parseFromString(text: string, type: string): { querySelector(s: string): unknown } };
      FormData: new (form: unknown) => Iterable<[string, unknown]>;
    };
    return htmls.map((text) => {
      const form = new dom.DOMParser().parseFromString(text, 'text/html').querySelector('form.record');
      if (!form) throw new Error('no edit form on the page');
      const body = new URLSearchParams();
      for (const [name, value] of new dom.FormData(form)) body.append(name, String(value));
      return body.toString();
    });
  }, pages);
}

/** Records every response's sizes from now until `take()`. */
function recorder(page: Page): { take(): Promise<Transfer[]> } {
  let pending: Array<Promise<Transfer>> = [];
  const measure = async (request: Request): Promise<Transfer> => {
    const sizes = await request.sizes();
    const response = await request.response();
    const status = response?.status() ?? 0;
    // A redirect has no body to read; every other response's, decoded, gzipped as a server would.
    const body = status >= 300 && status < 400 ? Buffer.alloc(0) : await response!.body();
    return {
      url: request.url(),
      status,
      type: response?.headers()['content-type']?.split(';')[0] ?? '',
      wire: sizes.responseHeadersSize + sizes.responseBodySize,
      body: body.length,
      gzip: body.length ? gzipSync(body).length : 0,
    };
  };
  page.on('requestfinished', (request) => pending.push(measure(request)));
  return {
    take: async () => {
      const done = await Promise.all(pending);
      pending = [];
      return done;
    },
  };
}

async function firstVisit(
  browser: Browser,
  job: Extract<BrowserJob, { kind: 'firstVisit' }>,
): Promise<{ firstVisit: Transfer[]; then: Transfer[] }> {
  const context = await browser.newContext();
  const page = await context.newPage();
  const record = recorder(page);
  await page.goto(`${job.base}/farm`, { waitUntil: 'load' });
  if (new URL(page.url()).pathname !== '/farm/sign-in') throw new Error(`/farm led to ${page.url()}, not the sign-in`);
  await page.fill('#username', job.user.name);
  await page.fill('#password', job.user.password);
  await Promise.all([page.waitForURL(`${job.base}/farm`, { waitUntil: 'load' }), page.click('button[type=submit]')]);
  const first = await record.take();
  await page.goto(`${job.base}${job.then}`, { waitUntil: 'load' });
  const then = await record.take();
  await context.close();
  return { firstVisit: first, then };
}

async function timing(
  browser: Browser,
  job: Extract<BrowserJob, { kind: 'timing' }>,
): Promise<Array<{ what: string; timings: Timing[] }>> {
  const context = await browser.newContext();
  await context.addCookies([{ name: job.cookie.name, value: job.cookie.value, url: job.base }]);
  const page = await context.newPage();
  const out: Array<{ what: string; timings: Timing[] }> = [];
  for (const kind of job.pages) {
    const timings: Timing[] = [];
    for (let i = 0; i < job.runs; i++) {
      const path = kind.paths[i % kind.paths.length]!;
      const res = await page.goto(`${job.base}${path}`, { waitUntil: 'load' });
      if (res?.status() !== 200) throw new Error(`${path}: ${res?.status()}`);
      if (new URL(page.url()).pathname !== path.split('?')[0]) throw new Error(`${path} led to ${page.url()}`);
      // Evaluated through the DevTools protocol, not as the page's script (its CSP allows none).
      // No named functions inside: tsx would wrap them in a helper the page does not have.
      const t = await page.evaluate(async () => {
        // The paint can come a frame after the load event: wait for it a little.
        let fcp: number | null = null;
        for (let waited = 0; waited < 2000; waited += 20) {
          fcp = performance.getEntriesByName('first-contentful-paint')[0]?.startTime ?? null;
          if (fcp !== null) break;
          await new Promise((r) => setTimeout(r, 20));
        }
        const nav = performance.getEntriesByType('navigation')[0] as unknown as {
          responseStart: number;
          responseEnd: number;
          domContentLoadedEventEnd: number;
          loadEventEnd: number;
        };
        return {
          fcp,
          responseStart: nav.responseStart,
          responseEnd: nav.responseEnd,
          domContentLoaded: nav.domContentLoadedEventEnd,
          load: nav.loadEventEnd,
        };
      });
      timings.push({ path, ...t });
    }
    out.push({ what: kind.what, timings });
  }
  await context.close();
  return out;
}

async function main(): Promise<void> {
  const job = JSON.parse(readFileSync(0, 'utf8')) as BrowserJob;
  const browser = await launch();
  try {
    let answer: BrowserAnswer;
    if (job.kind === 'forms') answer = { kind: 'forms', bodies: await forms(browser, job.pages) };
    else if (job.kind === 'firstVisit') answer = { kind: 'firstVisit', ...(await firstVisit(browser, job)) };
    else answer = { kind: 'timing', pages: await timing(browser, job) };
    process.stdout.write(JSON.stringify(answer));
  } finally {
    await browser.close();
  }
}

await main();
