// The bulk actions of lists not driven by bulk-and-sheets.test.ts (issue 42 §3), each as its page
// sends it (the list's POST with the CSRF token and the ids, the confirmation, then its form sent
// back with step=apply) from a manager's context in Debian's Chromium, and checked through the API:
// assets archived and made active, their owner, flags and parent set, moved to a location by ONE
// movement log (their computed location follows), added to a group by one group assignment log,
// a log recorded for them (the form filled in), cloned (new records, the same fields) and exported;
// logs' owner, category and flags set, marked pending, rescheduled to a date and cloned with their
// quantities. Every change's revision names the action, the second time too. A record changed by
// someone else after the confirmation was shown is refused and named, and nothing is done; so is
// a confirmation sent a second time (a log rescheduled by a day moves once). A worker may do what
// the API lets them (a new category term, as farmOS 2.x's worker may), a viewer nothing. The import's preview
// names every row's mistake, those the store refuses (an ID taken) too.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { type Browser, type BrowserContext } from 'playwright-core';
import { launchChromium } from '../support/browser.ts';
import { startTestServer, ADMIN, type TestServer } from '../support/server.ts';
import { passwordToken, request } from '../support/http.ts';
import { createUser } from '../../runtime/accounts/users.ts';

const MANAGER = { name: 'mona-manager', password: 'mona-password-1' };
const WORKER = { name: 'walt-worker', password: 'walt-password-1' };
const VIEWER = { name: 'vera-viewer', password: 'vera-password-1' };

interface Ref {
  type: string;
  id: string;
}
interface Resource extends Ref {
  attributes: any;
  relationships: any;
}

/** A person signed in: the browser context (its cookies), and the CSRF token its pages carry. */
interface Session {
  context: BrowserContext;
  csrf: string;
}

let server: TestServer;
let browser: Browser;
let token: string;
let manager: Session;
const users: Record<string, string> = {};

before(async () => {
  server = await startTestServer({ env: { TILTH_FARM_NAME: 'Willow Creek', TILTH_TIME_ZONE: 'UTC' } });
  token = await passwordToken(server.url, ADMIN.name, ADMIN.password);
  for (const [who, role] of [
    [MANAGER, 'farm_manager'],
    [WORKER, 'farm_worker'],
    [VIEWER, 'farm_viewer'],
  ] as const)
    users[who.name] = (await createUser(server.ctx.db.knex, { ...who, roles: [role] })).uuid;
  browser = await launchChromium();
  manager = await signedIn(MANAGER);
});
after(async () => {
  await manager?.context.close();
  await browser?.close();
  await server?.close();
});

/**
 * Signs in through the sign-in form's POST, as the browser sends it, in a context of its own. No
 * page is drawn: every request below is the context's (its cookies), as the pages' forms send them.
 */
async function signedIn(who: { name: string; password: string }): Promise<Session> {
  const context = await browser.newContext();
  const form = await (await context.request.get(`${server.url}/farm/sign-in`)).text();
  const token = /name="csrf_token" value="([^"]*)"/.exec(form)?.[1];
  assert.ok(token, 'the sign-in form has its token');
  // Signed in, the person is sent on to a small page, whose sign-out form carries the session's CSRF token.
  const res = await context.request.post(`${server.url}/farm/sign-in`, {
    form: { csrf_token: unescape(token), return_to: '/farm/quick', username: who.name, password: who.password },
  });
  assert.equal(res.status(), 200);
  assert.match(res.url(), /\/farm\/quick$/, 'signed in');
  const csrf = /name="csrf_token" value="([^"]*)"/.exec(await res.text())?.[1];
  assert.ok(csrf);
  return { context, csrf: unescape(csrf) };
}

const ref = (r: Ref): Ref => ({ type: r.type, id: r.id });
const iso = (s: number) => new Date(s * 1000).toISOString().replace(/\.\d{3}Z$/, '+00:00');

async function post(path: string, data: unknown): Promise<Resource> {
  const res = await request(`${server.url}/api/${path}`, { method: 'POST', token, json: { data } });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body.data;
}
async function get(r: Ref, query = ''): Promise<Resource> {
  const [entity, bundle] = r.type.split('--');
  const res = await request(`${server.url}/api/${entity}/${bundle}/${r.id}${query}`, { token });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body.data;
}
const asset = (name: string, extra: Record<string, unknown> = {}) =>
  post('asset/equipment', { type: 'asset--equipment', attributes: { name, ...extra } });
const activity = (name: string, at: number, extra: Record<string, unknown> = {}, relationships = {}) =>
  post('log/activity', {
    type: 'log--activity',
    attributes: { name, status: 'done', timestamp: iso(at), ...extra },
    relationships,
  });
/** The ids of a relationship, sorted. */
const ids = (r: Resource, field: string): string[] =>
  [r.relationships[field]?.data ?? []]
    .flat()
    .map((d: Ref) => d.id)
    .sort();

/** The messages of a record's newest revisions, newest first, through the API's revision history. */
async function messages(r: Ref, n = 1): Promise<string[]> {
  const [entity, bundle] = r.type.split('--');
  const res = await request(
    `${server.url}/api/${entity}/${bundle}/${r.id}/revision-history?page[limit]=${n}&fields[${r.type}]=revision_log_message`,
    { token },
  );
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body.data.map((d: Resource) => String(d.attributes.revision_log_message ?? ''));
}

const unescape = (s: string) =>
  s
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&amp;/g, '&');
/** A page's text, its tags left out. */
const textOf = (page: string) => unescape(page.replace(/<[^>]*>/g, ' ').replace(/\s+/g, ' '));

/** The hidden inputs of the form that applies a bulk action (the confirmation's), as name/value pairs. */
function confirmationForm(page: string): Array<[string, string]> {
  const form = /<form class="card" method="post" action="[^"]*\/bulk"[^>]*>([\s\S]*?)<\/form>/.exec(page)?.[1];
  assert.ok(form, `a confirmation form: ${textOf(page).slice(0, 500)}`);
  return [...form.matchAll(/<input type="hidden" name="([^"]*)" value="([^"]*)">/g)].map((m) => [
    m[1]!,
    unescape(m[2]!),
  ]);
}

/** POSTs a form as the browser sends one. */
async function send(
  who: Session,
  path: string,
  pairs: Array<[string, string]>,
): Promise<{ status: number; body: string; type: string }> {
  const res = await who.context.request.post(`${server.url}${path}`, {
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    data: new URLSearchParams(pairs).toString(),
  });
  return { status: res.status(), body: await res.text(), type: res.headers()['content-type'] ?? '' };
}

/** Step 1: the list's form sent with the records ticked; the confirmation page. */
async function confirmation(who: Session, list: string, action: string, records: Ref[]): Promise<string> {
  const res = await send(who, `${list}/bulk`, [
    ['csrf_token', who.csrf],
    ['action', action],
    ...records.map((r): [string, string] => ['id', r.id]),
  ]);
  assert.equal(res.status, 200, textOf(res.body).slice(0, 800));
  return res.body;
}

/** Both steps: the confirmation, then its form sent back with the action's inputs. */
async function act(
  who: Session,
  list: string,
  action: string,
  records: Ref[],
  inputs: Record<string, string> = {},
): Promise<{ status: number; body: string; type: string }> {
  return apply(who, list, await confirmation(who, list, action, records), inputs);
}

/** Step 2: a confirmation's form sent back with the action's inputs. */
function apply(who: Session, list: string, page: string, inputs: Record<string, string> = {}) {
  const pairs = confirmationForm(page).filter(([k]) => !(k in inputs));
  return send(who, `${list}/bulk`, [...pairs, ...Object.entries(inputs)]);
}

/** The summary's sentence ("Archived: 2 records."). */
function summary(res: { status: number; body: string }): string {
  assert.equal(res.status, 200, textOf(res.body).slice(0, 800));
  const said = /<p class="notice" role="status">([^<]*)<\/p>/.exec(res.body)?.[1];
  assert.ok(said, textOf(res.body).slice(0, 800));
  return unescape(said);
}

/** A reference as its input takes one: the record's name and its ID in brackets. */
const typed = (name: string, id: string) => `${name} [${id}]`;

test('assets archived and made active; a record changed after the confirmation was shown is named and nothing is done', async () => {
  const a = await asset('Bulk mower A');
  const b = await asset('Bulk mower B');
  const list = '/farm/asset/equipment';

  // The confirmation says what, how many, all or nothing, and names every record.
  const page = await confirmation(manager, list, 'archive', [a, b]);
  assert.match(
    textOf(page),
    /Archive: 2 records, in one change\. Nothing is changed unless all can be\..*Bulk mower A.*Bulk mower B/,
  );
  assert.match(summary(await apply(manager, list, page)), /^Archived: 2 records\.$/);
  for (const r of [a, b]) {
    assert.equal((await get(r)).attributes.status, 'archived');
    assert.deepEqual(await messages(r), ['Bulk action on 2 records: archived']);
  }
  assert.match(summary(await act(manager, list, 'activate', [a, b])), /^Made active: 2 records\.$/);
  for (const r of [a, b]) assert.equal((await get(r)).attributes.status, 'active');

  // Someone renames B between the confirmation and its Confirm: refused, B named, A not archived either.
  const stale = await confirmation(manager, list, 'archive', [a, b]);
  const renamed = await request(`${server.url}/api/asset/equipment/${b.id}`, {
    method: 'PATCH',
    token,
    json: { data: { type: b.type, id: b.id, attributes: { name: 'Bulk mower B (serviced)' } } },
  });
  assert.equal(renamed.status, 200);
  const refused = await apply(manager, list, stale);
  assert.equal(refused.status, 409, textOf(refused.body).slice(0, 800));
  const said = textOf(refused.body);
  assert.match(said, /Nothing was changed/);
  assert.match(said, /Bulk mower B \(serviced\) ?: changed by admin on [^.]* since this action was confirmed/);
  assert.doesNotMatch(said, /Bulk mower A/, 'only the record changed is named');
  for (const r of [a, b]) assert.equal((await get(r)).attributes.status, 'active', 'nothing archived');
  // Confirmed again, it is the others' record as it is now that is archived.
  assert.match(summary(await act(manager, list, 'archive', [a, b])), /^Archived: 2 records\.$/);
  assert.equal((await get(b)).attributes.name, 'Bulk mower B (serviced)');
});

test("assets' owner (twice: each revision names it), flags and parent set", async () => {
  const a = await asset('Owned rake A', { flag: ['monitor'] });
  const b = await asset('Owned rake B');
  const fleet = await asset('Rake fleet');
  const list = '/farm/asset/equipment';

  assert.match(
    summary(await act(manager, list, 'owner', [a, b], { owner: typed(WORKER.name, users[WORKER.name]!) })),
    /^Owner set: 2 records\.$/,
  );
  for (const r of [a, b]) assert.deepEqual(ids(await get(r), 'owner'), [users[WORKER.name]]);
  // The same action again: its revision names it again, not a blank message.
  assert.match(
    summary(await act(manager, list, 'owner', [a, b], { owner: typed(MANAGER.name, users[MANAGER.name]!) })),
    /^Owner set: 2 records\.$/,
  );
  for (const r of [a, b]) {
    assert.deepEqual(ids(await get(r), 'owner'), [users[MANAGER.name]]);
    assert.deepEqual(await messages(r, 2), [
      'Bulk action on 2 records: owner set',
      'Bulk action on 2 records: owner set',
    ]);
  }

  assert.match(
    summary(await act(manager, list, 'flag_add', [a, b], { flag: 'priority' })),
    /^Flag Priority added: 2 records\.$/,
  );
  assert.deepEqual((await get(a)).attributes.flag, ['monitor', 'priority']);
  assert.deepEqual((await get(b)).attributes.flag, ['priority']);
  const removed = await act(manager, list, 'flag_remove', [a, b], { flag: 'monitor' });
  assert.match(summary(removed), /^Flag Monitor removed: 1 record\.$/, 'only the record flagged so is changed');
  assert.match(textOf(removed.body), /1 already was so and is unchanged\./);
  assert.deepEqual((await get(a)).attributes.flag, ['priority']);
  assert.deepEqual(await messages(a), ['Bulk action on 2 records: flag Monitor removed']);
  assert.deepEqual(await messages(b), ['Bulk action on 2 records: flag Priority added'], 'b has no new revision');

  assert.match(
    summary(await act(manager, list, 'parent', [a, b], { parent: typed('Rake fleet', fleet.id) })),
    /^Parent set: 2 records\.$/,
  );
  for (const r of [a, b]) {
    assert.deepEqual(ids(await get(r), 'parent'), [fleet.id]);
    assert.deepEqual(await messages(r), ['Bulk action on 2 records: parent set']);
  }
});

test('assets moved by one movement log and added to a group by one group assignment log', async () => {
  const a = await asset('Moved trailer A');
  const b = await asset('Moved trailer B');
  const paddock = await post('asset/land', {
    type: 'asset--land',
    attributes: { name: 'Bulk paddock', land_type: 'paddock', is_location: true },
  });
  const herd = await post('asset/group', { type: 'asset--group', attributes: { name: 'Bulk herd' } });
  const list = '/farm/asset/equipment';

  const confirmed = await confirmation(manager, list, 'move', [a, b]);
  const moved = await apply(manager, list, confirmed, { location: typed('Bulk paddock', paddock.id) });
  assert.match(summary(moved), /^Moved to Bulk paddock \(one movement log\): 2 records\.$/);
  // The same confirmation sent again (Back, then Confirm): the assets moved since, so it is refused.
  const again = await apply(manager, list, confirmed, { location: typed('Bulk paddock', paddock.id) });
  assert.equal(again.status, 409, textOf(again.body).slice(0, 400));
  assert.match(textOf(again.body), /Moved trailer A/);
  const moves = await request(
    `${server.url}/api/log/activity?filter[is_movement]=1&filter[asset.id]=${a.id}&include=asset,location`,
    { token },
  );
  assert.equal(moves.body.data.length, 1, 'one movement log');
  const move = moves.body.data[0] as Resource;
  assert.deepEqual(ids(move, 'asset'), [a.id, b.id].sort(), 'naming both assets');
  assert.deepEqual(ids(move, 'location'), [paddock.id]);
  assert.equal(move.attributes.status, 'done');
  assert.match(moved.body, new RegExp(`<a href="/farm/log/activity/${move.id}">Move 2 assets to Bulk paddock</a>`));
  for (const r of [a, b]) assert.deepEqual(ids(await get(r), 'location'), [paddock.id], 'the computed location');

  assert.match(
    summary(await act(manager, list, 'group', [a, b], { group: typed('Bulk herd', herd.id) })),
    /^Added to Bulk herd \(one group assignment log\): 2 records\.$/,
  );
  const assignments = await request(
    `${server.url}/api/log/activity?filter[is_group_assignment]=1&filter[asset.id]=${b.id}`,
    { token },
  );
  assert.equal(assignments.body.data.length, 1, 'one group assignment log');
  assert.deepEqual(ids(assignments.body.data[0], 'asset'), [a.id, b.id].sort());
  assert.deepEqual(ids(assignments.body.data[0], 'group'), [herd.id]);
  for (const r of [a, b]) assert.deepEqual(ids(await get(r), 'group'), [herd.id], 'the computed group');
});

test('a log recorded for assets (its form filled in), assets cloned and exported', async () => {
  const a = await asset('Cloned drill A', { flag: ['review'], notes: { value: 'Calibrated', format: 'default' } });
  const b = await asset('Cloned drill B', { manufacturer: 'Kuhn' });
  const list = '/farm/asset/equipment';

  const form = await act(manager, list, 'log', [a, b], { log_type: 'observation' });
  assert.equal(form.status, 200);
  const filled = [...form.body.matchAll(/<input type="text" id="[^"]*" name="asset" value="([^"]*)"/g)].map((m) =>
    unescape(m[1]!),
  );
  assert.deepEqual(filled, [typed('Cloned drill A', a.id), typed('Cloned drill B', b.id)]);
  assert.match(form.body, /<form[^>]*action="\/farm\/log\/observation\/new"/, "an observation's create form");

  const cloned = await act(manager, list, 'clone', [a, b]);
  assert.match(summary(cloned), /^Cloned: 2 records\.$/);
  const copies = [...cloned.body.matchAll(/href="\/farm\/asset\/equipment\/([0-9a-f-]{36})"/g)]
    .map((m) => m[1]!)
    .filter((id) => id !== a.id && id !== b.id);
  assert.equal(copies.length, 2, 'the copies are linked');
  for (const [original, id] of [
    [a, copies[0]!],
    [b, copies[1]!],
  ] as const) {
    const was = await get(original);
    const copy = await get({ type: original.type, id });
    assert.notEqual(copy.id, was.id);
    assert.notEqual(copy.attributes.drupal_internal__id, was.attributes.drupal_internal__id);
    for (const field of ['name', 'status', 'flag', 'notes', 'manufacturer'])
      assert.deepEqual(copy.attributes[field], was.attributes[field], field);
    assert.deepEqual(await messages(copy), ['Bulk action on 2 records: cloned']);
  }

  const exported = await act(manager, list, 'export', [a, b], { format: 'csv' });
  assert.equal(exported.status, 200);
  assert.match(exported.type, /text\/csv/);
  const lines = exported.body
    .replace(/^\uFEFF/, '')
    .trim()
    .split('\r\n');
  assert.equal(lines.length, 3, 'a header and the two records');
  assert.match(lines.slice(1).join('\n'), /Cloned drill A[\s\S]*Cloned drill B|Cloned drill B[\s\S]*Cloned drill A/);
  assert.doesNotMatch(exported.body, new RegExp(copies[0]!), 'only the records chosen');
});

test("logs' owner, category and flags set, marked pending, rescheduled (a confirmation sent twice moves them once), cloned with their quantities", async () => {
  const at = Date.parse('2031-05-01T08:00:00Z') / 1000;
  const kg = await post('taxonomy_term/unit', { type: 'taxonomy_term--unit', attributes: { name: 'kg' } });
  const weight = await post('quantity/standard', {
    type: 'quantity--standard',
    attributes: { measure: 'weight', value: { decimal: '12.5' }, label: 'feed' },
    relationships: { units: { data: ref(kg) } },
  });
  const irrigation = await post('taxonomy_term/log_category', {
    type: 'taxonomy_term--log_category',
    attributes: { name: 'Irrigation' },
  });
  const a = await activity('Bulk chore A', at, {}, { quantity: { data: [ref(weight)] } });
  const b = await activity('Bulk chore B', at + 3600, { flag: ['review'] });
  const list = '/farm/log/activity';

  assert.match(
    summary(await act(manager, list, 'owner', [a, b], { owner: typed(WORKER.name, users[WORKER.name]!) })),
    /^Owner set: 2 records\.$/,
  );
  assert.match(
    summary(await act(manager, list, 'category', [a, b], { category: typed('Irrigation', irrigation.id) })),
    /^Category set: 2 records\.$/,
  );
  assert.match(summary(await act(manager, list, 'flag_add', [a, b], { flag: 'priority' })), /2 records/);
  assert.match(summary(await act(manager, list, 'flag_remove', [a, b], { flag: 'review' })), /: 1 record\.$/);
  assert.match(summary(await act(manager, list, 'pending', [a, b])), /^Marked pending: 2 records\.$/);
  assert.match(
    summary(await act(manager, list, 'reschedule', [a, b], { to: '2031-06-15T10:30' })),
    /^Rescheduled to .*2031.*: 2 records\.$/,
  );
  for (const r of [a, b]) {
    const now = await get(r);
    assert.deepEqual(ids(now, 'owner'), [users[WORKER.name]]);
    assert.deepEqual(ids(now, 'category'), [irrigation.id]);
    assert.deepEqual(now.attributes.flag, ['priority']);
    assert.equal(now.attributes.status, 'pending');
    assert.equal(now.attributes.timestamp, '2031-06-15T10:30:00+00:00');
  }
  // A revision per change, each naming its action; A had no flag to remove, so no revision for it.
  const said = (r: Ref, n: number) =>
    messages(r, n).then((m) => m.map((x) => x.replace(/^Bulk action on 2 records: /, '')));
  const [rescheduled, ...rest] = await said(b, 6);
  assert.match(rescheduled!, /^rescheduled to Jun 15, 2031/);
  assert.deepEqual(rest, [
    'marked pending',
    'flag Needs review removed',
    'flag Priority added',
    'category set',
    'owner set',
  ]);
  assert.deepEqual((await said(a, 5)).slice(1), ['marked pending', 'flag Priority added', 'category set', 'owner set']);

  // A confirmation sent twice (Back, then Confirm again) moves the log once: the second finds it changed.
  const byADay = await confirmation(manager, list, 'reschedule', [b]);
  assert.match(summary(await apply(manager, list, byADay, { days: '1' })), /^Rescheduled by 1 day: 1 record\.$/);
  const again = await apply(manager, list, byADay, { days: '1' });
  assert.equal(again.status, 409);
  assert.match(textOf(again.body), new RegExp(`Bulk chore B ?: changed by ${MANAGER.name} on `));
  assert.equal((await get(b)).attributes.timestamp, '2031-06-16T10:30:00+00:00', 'moved by one day, once');

  const cloned = await act(manager, list, 'clone', [a]);
  assert.match(summary(cloned), /^Cloned: 1 record\.$/);
  const [copyId] = [...cloned.body.matchAll(/href="\/farm\/log\/activity\/([0-9a-f-]{36})"/g)]
    .map((m) => m[1]!)
    .filter((id) => id !== a.id);
  assert.ok(copyId, 'the copy is linked');
  const was = await get(a, '?include=quantity');
  const copy = await get({ type: a.type, id: copyId }, '?include=quantity');
  for (const field of ['name', 'status', 'timestamp', 'flag'])
    assert.deepEqual(copy.attributes[field], was.attributes[field], field);
  for (const field of ['owner', 'category']) assert.deepEqual(ids(copy, field), ids(was, field), field);
  // Its own quantity, of the same value: a quantity belongs to one log.
  const [quantity] = ids(copy, 'quantity');
  assert.ok(quantity && quantity !== weight.id, 'a quantity of its own');
  const q = await get({ type: 'quantity--standard', id: quantity });
  assert.deepEqual(q.attributes.value, (await get(weight)).attributes.value);
  assert.deepEqual(ids(q, 'units'), [kg.id]);
  assert.deepEqual(ids(await get(a), 'quantity'), [weight.id], 'the original keeps its own');

  // Copies dated as asked, as farmOS's clone asks a date: the confirmation offers now.
  const asking = await confirmation(manager, list, 'clone', [a, b]);
  const offered = /<input type="datetime-local" id="bulk-date" name="date" value="([^"]*)"/.exec(asking)?.[1];
  assert.match(offered ?? '', /^\d{4}-\d\d-\d\dT\d\d:\d\d/, 'a date offered, now');
  assert.ok(Math.abs(Date.parse(`${offered}Z`) - Date.now()) < 5 * 60_000, `${offered} is now`);
  const dated = await apply(manager, list, asking, { date: '2032-01-02T08:30' });
  assert.match(summary(dated), /^Cloned: 2 records\.$/);
  const datedIds = [...dated.body.matchAll(/href="\/farm\/log\/activity\/([0-9a-f-]{36})"/g)]
    .map((m) => m[1]!)
    .filter((id) => id !== a.id && id !== b.id);
  assert.equal(datedIds.length, 2);
  for (const id of datedIds)
    assert.equal((await get({ type: a.type, id })).attributes.timestamp, '2032-01-02T08:30:00+00:00');
  const refused = await apply(manager, list, await confirmation(manager, list, 'clone', [a]), { date: 'soon' });
  assert.equal(refused.status, 422, 'a date the form cannot read');
  assert.match(textOf(refused.body), /The date is not one this form reads/);
});

test('a worker sets a category and makes a new term by it, as the API lets a farmOS 2.x worker; a viewer is refused every action', async () => {
  const a = await activity('Worker chore A', 1_950_000_000);
  const b = await activity('Worker chore B', 1_950_000_060);
  const list = '/farm/log/activity';
  const workerToken = await passwordToken(server.url, WORKER.name, WORKER.password);
  const viaApi = await request(`${server.url}/api/taxonomy_term/log_category`, {
    method: 'POST',
    token: workerToken,
    json: { data: { type: 'taxonomy_term--log_category', attributes: { name: 'Fencing' } } },
  });
  assert.equal(viaApi.status, 201, 'the API lets a worker add a term (farmOS: create terms in <vocabulary>)');

  const worker = await signedIn(WORKER);
  try {
    // A name no term has: a new term of the category's vocabulary, set on both.
    assert.match(
      summary(await act(worker, list, 'category', [a, b], { category: 'Mending' })),
      /^Category set: 2 records\.$/,
    );
    const terms = await request(`${server.url}/api/taxonomy_term/log_category?filter[name]=Mending`, { token });
    assert.equal(terms.body.data.length, 1, 'one term made');
    for (const r of [a, b]) assert.deepEqual(ids(await get(r), 'category'), [terms.body.data[0].id]);
    const weeding = await post('taxonomy_term/log_category', {
      type: 'taxonomy_term--log_category',
      attributes: { name: 'Weeding' },
    });
    assert.match(
      summary(await act(worker, list, 'category', [a, b], { category: 'Weeding' })),
      /^Category set: 2 records\.$/,
    );
    for (const r of [a, b]) assert.deepEqual(ids(await get(r), 'category'), [weeding.id]);
  } finally {
    await worker.context.close();
  }

  const owners = ids(await get(a), 'owner');
  const viewer = await signedIn(VIEWER);
  try {
    for (const [path, action, extra] of [
      [list, 'owner', { owner: typed(VIEWER.name, users[VIEWER.name]!) }],
      [list, 'clone', {}],
      ['/farm/asset/equipment', 'move', { location: 'Bulk paddock' }],
    ] as const) {
      const res = await send(viewer, `${path}/bulk`, [
        ['csrf_token', viewer.csrf],
        ['action', action],
        ['step', 'apply'],
        ['id', a.id],
        ...Object.entries(extra),
      ]);
      assert.equal(res.status, 403, `${action}: ${textOf(res.body).slice(0, 300)}`);
    }
    assert.deepEqual(ids(await get(a), 'owner'), owners, 'no owner set');
  } finally {
    await viewer.context.close();
  }
});

test("the import's preview names every row the store refuses (an ID taken), not only the first", async () => {
  const taken = [await activity('Taken one', 1_960_000_000), await activity('Taken two', 1_960_000_060)];
  const csv = [
    'name,timestamp,status,id',
    `Again one,2031-04-01T08:00:00+00:00,done,${taken[0]!.id}`,
    `Again two,2031-04-02T08:00:00+00:00,done,${taken[1]!.id}`,
    'Fine,2031-04-03T08:00:00+00:00,done,',
    'Bad date,not a date,done,',
  ].join('\r\n');
  const res = await manager.context.request.post(`${server.url}/farm/log/activity/import`, {
    multipart: {
      csrf_token: manager.csrf,
      step: 'preview',
      file: { name: 'again.csv', mimeType: 'text/csv', buffer: Buffer.from(csv) },
    },
  });
  assert.equal(res.status(), 422);
  const body = await res.text();
  const table = /<table class="problems">([\s\S]*?)<\/table>/.exec(body)?.[1] ?? '';
  const lines = [...table.matchAll(/<tr><td>(\d+)<\/td>/g)].map((m) => Number(m[1]));
  assert.deepEqual(lines, [2, 3, 5], textOf(table));
  assert.match(textOf(table), new RegExp(`${taken[1]!.id} already exists`));
});
