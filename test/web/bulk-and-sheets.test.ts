// Bulk actions on lists and spreadsheets in and out of the web interface (issue 42 §3, §4), in
// Debian's Chromium against a real server: 200 logs rescheduled by days and 50 marked done from
// their list, checked through the API, each in the change feed once and each with a revision
// naming the action; a bulk delete that farmOS's reference integrity refuses for one record
// changes nothing and names it; a viewer is offered no action and a direct POST is refused; a CSV
// with one bad row imports nothing and names its line and column, a good one imports and its
// list's export reads back equal; the read statements of a bulk action on 20 and on 200 records;
// axe-core and hostile markup on the new pages.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Browser, type BrowserContext, type Page } from 'playwright-core';
import { launchChromium } from '../support/browser.ts';
import { startTestServer, ADMIN, type TestServer } from '../support/server.ts';
import { passwordToken, request } from '../support/http.ts';
import { createUser } from '../../runtime/accounts/users.ts';

const AXE = createRequire(import.meta.url).resolve('axe-core/axe.min.js');
const VIEWER = { name: 'vera-viewer', password: 'vera-password-1' };
const DAY = 86_400;
const PAYLOAD = `<img src=x onerror=window.__pwned=1>"><script>window.__pwned=2</script>`;

let server: TestServer;
let browser: Browser;
let token: string;
const dir = mkdtempSync(join(tmpdir(), 'tilth-sheets-'));

before(async () => {
  server = await startTestServer({ env: { TILTH_FARM_NAME: 'Willow Creek', TILTH_TIME_ZONE: 'UTC' } });
  token = await passwordToken(server.url, ADMIN.name, ADMIN.password);
  await createUser(server.ctx.db.knex, { name: VIEWER.name, password: VIEWER.password, roles: ['farm_viewer'] });
  browser = await launchChromium();
});
after(async () => {
  await browser?.close();
  await server?.close();
});

async function post(path: string, data: unknown): Promise<{ type: string; id: string; attributes: any }> {
  const res = await request(`${server.url}/api/${path}`, { method: 'POST', token, json: { data } });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body.data;
}
/** A CSV line, every cell quoted. */
const csvLine = (cells: string[]) => cells.map((c) => `"${c.replace(/"/g, '""')}"`).join(',');
const iso = (s: number) => new Date(s * 1000).toISOString().replace(/\.\d{3}Z$/, '+00:00');

async function signedIn(who = ADMIN): Promise<{ context: BrowserContext; page: Page }> {
  const context = await browser.newContext({ bypassCSP: true });
  const page = await context.newPage();
  await page.goto(`${server.url}/farm/sign-in`);
  await page.fill('#username', who.name);
  await page.fill('#password', who.password);
  await Promise.all([page.waitForURL(`${server.url}/farm`), page.click('button[type=submit]')]);
  return { context, page };
}

/** axe-core's serious and critical violations on the page shown. */
async function seriousViolations(page: Page): Promise<string[]> {
  await page.addScriptTag({ path: AXE });
  const violations = (await page.evaluate(async () => {
    const axe = (globalThis as unknown as { axe: { run: (o: unknown) => Promise<{ violations: unknown[] }> } }).axe;
    return (await axe.run({ resultTypes: ['violations'] })).violations;
  })) as Array<{ id: string; impact: string | null; help: string }>;
  return violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => `${v.id}: ${v.help}`);
}

/** The change feed's cursor now (its last page's). */
async function feedCursor(): Promise<string> {
  let url = `${server.url}/api/changes?since=0&page[limit]=500`;
  for (;;) {
    const res = await request(url, { token });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    if (!res.body.links?.next) return res.body.meta.cursor;
    url = res.body.links.next.href ?? res.body.links.next;
  }
}

/** Every entry of the change feed since `cursor`, as type:id. */
async function feedSince(cursor: string): Promise<string[]> {
  const out: string[] = [];
  let url = `${server.url}/api/changes?since=${encodeURIComponent(cursor)}&page[limit]=500`;
  for (;;) {
    const res = await request(url, { token });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    for (const e of res.body.data) out.push(`${e.type}:${e.id}`);
    if (!res.body.links?.next) return out;
    url = res.body.links.next.href ?? res.body.links.next;
  }
}

/** The message of a record's newest revision. */
async function lastMessage(entityType: string, uuid: string): Promise<string> {
  const knex = server.ctx.db.knex;
  const found = await server.ctx.services.store.findByUuid(knex, entityType, uuid);
  const [last] = await server.ctx.services.store.revisions.list(knex, entityType, found!.id, { offset: 0, limit: 1 });
  return String(last?.message ?? '');
}

/** Chooses an action for the rows ticked (or all matching) and continues to the confirmation. */
async function chooseAction(page: Page, action: string, all: boolean): Promise<void> {
  await page.selectOption('#bulk-action', action);
  if (all) await page.check('#bulk-all');
  await Promise.all([page.waitForURL(/\/bulk$/), page.click('fieldset.bulk button[type=submit]')]);
}

test('200 logs rescheduled by 3 days and 50 marked done from their list: the API shows it, the feed lists each once, revisions name the action', async () => {
  const base = Date.parse('2031-03-01T09:00:00Z') / 1000;
  const logs: Array<{ id: string; at: number }> = [];
  for (let n = 0; n < 200; n++) {
    const at = base + n * 60;
    const log = await post('log/activity', {
      type: 'log--activity',
      attributes: { name: `Weekly task ${String(n).padStart(3, '0')}`, status: 'pending', timestamp: iso(at) },
    });
    logs.push({ id: log.id, at });
  }
  const { context, page } = await signedIn();
  try {
    await page.goto(`${server.url}/farm/log/activity?name=Weekly+task`);
    assert.match((await page.textContent('[role=status]')) ?? '', /200/);
    const cursor = await feedCursor();
    await chooseAction(page, 'reschedule', true);
    assert.match((await page.textContent('main')) ?? '', /Reschedule: 200 records/);
    assert.equal(await page.locator('ol.bulk-records li').count(), 200, 'every record named');
    assert.deepEqual(await seriousViolations(page), [], 'the confirmation page');
    await page.fill('#bulk-days', '3');
    await Promise.all([page.waitForLoadState(), page.click('form.card button.primary')]);
    assert.match((await page.textContent('[role=status]')) ?? '', /Rescheduled by 3 days: 200 records/);
    assert.deepEqual(await seriousViolations(page), [], 'the summary page');

    for (const log of [logs[0]!, logs[137]!, logs[199]!]) {
      const res = await request(`${server.url}/api/log/activity/${log.id}`, { token });
      assert.equal(res.body.data.attributes.timestamp, iso(log.at + 3 * DAY));
    }
    const changed = await feedSince(cursor);
    assert.equal(changed.length, 200, 'the feed lists 200 changes');
    assert.equal(new Set(changed).size, 200, 'each record once');
    for (const log of logs) assert.ok(changed.includes(`log--activity:${log.id}`));
    assert.match(await lastMessage('log', logs[42]!.id), /Bulk action on 200 records: rescheduled by 3 days/);

    // 50 marked done: the first page's rows, ticked.
    const cursor2 = await feedCursor();
    await page.goto(`${server.url}/farm/log/activity?name=Weekly+task&sort=name`);
    const boxes = page.locator('tbody input[type=checkbox][name=id]');
    assert.equal(await boxes.count(), 50);
    for (let i = 0; i < 50; i++) await boxes.nth(i).check();
    await chooseAction(page, 'done', false);
    assert.match((await page.textContent('main')) ?? '', /Mark done: 50 records/);
    await Promise.all([page.waitForLoadState(), page.click('form.card button.primary')]);
    assert.match((await page.textContent('[role=status]')) ?? '', /Marked done: 50 records/);
    const done = await request(
      `${server.url}/api/log/activity?filter[name][operator]=STARTS_WITH&filter[name][value]=Weekly&filter[status]=done&page[limit]=50&sort=name`,
      { token },
    );
    assert.equal(done.body.data.length, 50);
    assert.equal(done.body.data[0].attributes.name, 'Weekly task 000');
    assert.equal(done.body.data[49].attributes.name, 'Weekly task 049');
    const changed2 = await feedSince(cursor2);
    assert.equal(changed2.length, 50);
    assert.equal(new Set(changed2).size, 50);
    assert.match(await lastMessage('log', logs[7]!.id), /marked done/);
    assert.doesNotMatch(await lastMessage('log', logs[60]!.id), /marked done/, 'a log not ticked keeps its revision');
  } finally {
    await context.close();
  }
});

test('a bulk delete including an asset a log refers to deletes nothing and names it; a viewer is offered no action and its POST is refused', async () => {
  const kept = await post('asset/equipment', { type: 'asset--equipment', attributes: { name: 'Bulk tractor' } });
  const spare = await post('asset/equipment', { type: 'asset--equipment', attributes: { name: 'Bulk trailer' } });
  await post('log/maintenance', {
    type: 'log--maintenance',
    attributes: { name: 'Grease the tractor', status: 'done' },
    relationships: { equipment: { data: [{ type: kept.type, id: kept.id }] } },
  });
  const { context, page } = await signedIn();
  try {
    await page.goto(`${server.url}/farm/asset/equipment?name=Bulk`);
    await page.check(`input[name=id][value="${kept.id}"]`);
    await page.check(`input[name=id][value="${spare.id}"]`);
    await chooseAction(page, 'delete', false);
    const [res] = await Promise.all([page.waitForResponse(/\/bulk$/), page.click('form.card button.primary')]);
    // farmOS's answer to deleting a record others refer to: 403.
    assert.equal(res.status(), 403);
    const text = (await page.textContent('main')) ?? '';
    assert.match(text, /Nothing was changed/);
    assert.match(text, /Bulk tractor: other records refer to it/);
    assert.doesNotMatch(text, /Bulk trailer/, 'only the refused record is named');
    for (const a of [kept, spare])
      assert.equal(
        (await request(`${server.url}/api/asset/equipment/${a.id}`, { token })).status,
        200,
        'nothing deleted',
      );
  } finally {
    await context.close();
  }

  const viewer = await signedIn(VIEWER);
  try {
    await viewer.page.goto(`${server.url}/farm/asset/equipment`);
    assert.equal(await viewer.page.locator('input[name=id]').count(), 0, 'no tick boxes');
    assert.equal(await viewer.page.locator('#bulk-action').count(), 0, 'no actions');
    assert.ok(await viewer.page.locator('a[href*="_format=csv"]').count(), 'the view still downloads');
    const csrf = await viewer.page.getAttribute('input[name=csrf_token]', 'value');
    assert.ok(csrf, 'the viewer has a CSRF token (the sign-out form)');
    const refused = await viewer.page.request.post(`${server.url}/farm/asset/equipment/bulk`, {
      form: { csrf_token: csrf!, action: 'archive', step: 'apply', id: spare.id },
    });
    assert.equal(refused.status(), 403);
    const still = await request(`${server.url}/api/asset/equipment/${spare.id}`, { token });
    assert.equal(still.body.data.attributes.status, 'active');
  } finally {
    await viewer.context.close();
  }
});

test('a CSV with one bad row imports nothing and names its line and column; a good one imports and its export reads back equal', async () => {
  const { context, page } = await signedIn();
  try {
    const bad = [
      ['name', 'timestamp', 'status', 'notes'],
      ['Sow carrots', '2031-04-01T08:00:00+00:00', 'pending', 'Bed 1'],
      ['Sow beets', 'not a date', 'pending', 'Bed 2'],
      [`Sow ${PAYLOAD}`, '2031-04-03T08:00:00+00:00', 'done', PAYLOAD],
    ]
      .map(csvLine)
      .join('\r\n');
    writeFileSync(join(dir, 'bad.csv'), bad);
    await page.goto(`${server.url}/farm/log/seeding/import`);
    assert.deepEqual(await seriousViolations(page), [], 'the import form');
    await page.setInputFiles('#sheet-file', join(dir, 'bad.csv'));
    const [res] = await Promise.all([page.waitForResponse(/\/import$/), page.click('button[value=preview]')]);
    assert.equal(res.status(), 422, (await page.textContent('main')) ?? '');
    const rows = await page.$$eval('table.problems tbody tr', (trs) =>
      trs.map((tr) => [...tr.children].map((td) => td.textContent!.trim())),
    );
    assert.equal(rows.length, 1, JSON.stringify(rows));
    assert.equal(rows[0]![0], '3', `line 3: ${JSON.stringify(rows)}`);
    assert.equal(rows[0]![2], 'timestamp', 'the column');
    assert.equal(await page.locator('button[value=import]').count(), 0, 'no import offered');
    assert.equal(await page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned), undefined);
    assert.deepEqual(await seriousViolations(page), [], 'the preview with mistakes');
    const none = await request(
      `${server.url}/api/log/seeding?filter[name][operator]=STARTS_WITH&filter[name][value]=Sow`,
      { token },
    );
    assert.equal(none.body.data.length, 0, 'nothing stored by the preview');

    const goodRows = [
      ['name', 'timestamp', 'status', 'flag'],
      ['Sow carrots', '2031-04-01T08:00:00+00:00', 'pending', 'priority'],
      ['Sow beets', '2031-04-02T08:00:00+00:00', 'done', ''],
      [`Sow ${PAYLOAD}`, '2031-04-03T08:00:00+00:00', 'done', 'review'],
    ];
    const good = goodRows.map(csvLine).join('\r\n');
    writeFileSync(join(dir, 'good.csv'), good);
    await page.goto(`${server.url}/farm/log/seeding/import`);
    await page.setInputFiles('#sheet-file', join(dir, 'good.csv'));
    await Promise.all([page.waitForResponse(/\/import$/), page.click('button[value=preview]')]);
    assert.equal(await page.locator('table.problems').count(), 0);
    assert.equal(await page.locator('table tbody tr').count(), 3, 'the rows as they will be stored');
    assert.equal(await page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned), undefined);
    assert.deepEqual(await seriousViolations(page), [], 'the preview');
    const [imported] = await Promise.all([page.waitForResponse(/\/import$/), page.click('button[value=import]')]);
    assert.equal(imported.status(), 200);
    assert.match((await page.textContent('[role=status]')) ?? '', /Imported 3/);

    // The list's export (its filter, sort and columns) reads back what was imported.
    const exported = await page.request.get(`${server.url}/farm/log/seeding?name=Sow&sort=timestamp&_format=csv`);
    assert.equal(exported.status(), 200);
    const csv = (await exported.text()).replace(/^\uFEFF/, '');
    const [header, ...lines] = csv.trim().split('\r\n');
    const cols = header!.split(',').map((h) => h.replace(/"/g, ''));
    const cell = (line: string, name: string) => {
      const cells = [...line.matchAll(/("(?:[^"]|"")*"|[^,]*)(?:,|$)/g)].map((m) =>
        m[1]!.replace(/^"|"$/g, '').replace(/""/g, '"'),
      );
      return cells[cols.indexOf(name)]!.replace(/^'/, '');
    };
    assert.equal(lines.length, 3);
    const expected = goodRows.slice(1);
    for (const [i, line] of lines.entries()) {
      assert.equal(cell(line, 'name'), expected[i]![0]);
      assert.equal(cell(line, 'timestamp'), expected[i]![1]);
      assert.equal(cell(line, 'status'), expected[i]![2]);
      assert.equal(cell(line, 'flag'), expected[i]![3]);
    }
    const geo = await page.request.get(`${server.url}/farm/log/seeding?name=Sow&_format=geojson`);
    assert.equal(geo.status(), 200);
    assert.equal((await geo.json()).type, 'FeatureCollection');
    const template = await page.request.get(`${server.url}/farm/log/seeding/import/template.csv`);
    assert.match(await template.text(), /^\uFEFFtype,name,timestamp,status/);
  } finally {
    await context.close();
  }
});

test('the read statements of a bulk action on 20 and on 200 records', async () => {
  const make = async (prefix: string, n: number) => {
    const ids: string[] = [];
    for (let i = 0; i < n; i++)
      ids.push(
        (
          await post('log/observation', {
            type: 'log--observation',
            attributes: { name: `${prefix} ${i}`, status: 'pending', timestamp: iso(1_900_000_000 + i) },
          })
        ).id,
      );
    return ids;
  };
  const few = await make('Few', 20);
  const many = await make('Many', 200);
  const { context, page } = await signedIn();
  try {
    await page.goto(`${server.url}/farm/log/observation`);
    const csrf = (await page.getAttribute('input[name=csrf_token]', 'value'))!;
    const reads = async (ids: string[]) => {
      const knex = server.ctx.db.knex;
      let selects = 0;
      let all = 0;
      const listener = (q: { sql: string }) => {
        all++;
        // Reads: not the row locks, nor PostgreSQL's revision numbers (SELECT nextval(…): a sequence
        // taken, one per revision written, as the INSERTs are).
        // The session's own read (kept on SQLite until the database changes) is the page's, not the action's.
        if (/^\s*(with|select)\b/i.test(q.sql) && !/\bfor (no key )?update\b|nextval\(|oauth_sessions/i.test(q.sql))
          selects++;
      };
      knex.on('query', listener);
      try {
        const body = new URLSearchParams({ csrf_token: csrf, action: 'done', step: 'apply' });
        for (const id of ids) body.append('id', id);
        const res = await page.request.post(`${server.url}/farm/log/observation/bulk`, {
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          data: body.toString(),
        });
        assert.equal(res.status(), 200, await res.text());
        return { selects, all };
      } finally {
        knex.removeListener('query', listener);
      }
    };
    const twenty = await reads(few);
    const twoHundred = await reads(many);
    process.stdout.write(
      `# bulk "mark done": 20 records ${JSON.stringify(twenty)}, 200 records ${JSON.stringify(twoHundred)}\n`,
    );
    // Ten times the records, not ten times the reads: a read per record would add 180. A few either
    // way are what the server keeps between requests until the database changes (the session).
    assert.ok(
      Math.abs(twoHundred.selects - twenty.selects) < 10,
      `read statements: ${twoHundred.selects} for 200, ${twenty.selects} for 20`,
    );
  } finally {
    await context.close();
  }
});
