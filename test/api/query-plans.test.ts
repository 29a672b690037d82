// Issue 4 item 12: the cost of a page. A page of 50 logs with include=asset,quantity.units costs
// the same number of SQL queries as a page of 5 (no query per record), and no query on the hot
// paths scans a whole table of the data model: SQLite's EXPLAIN QUERY PLAN is read for every
// query a request runs, the main collection query (filter + sort) first among them.
//
// SQLite only (skipped when DATABASE_URL is set): the plans are read with SQLite's EXPLAIN QUERY
// PLAN, whose choice of index does not depend on table statistics. PostgreSQL's planner does
// (a near-empty test table is scanned sequentially whatever its indexes), so the same assertion
// would not mean the same thing there. The query count is a property of the runtime's code, not
// of the database, so checking it once on SQLite is enough.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, ADMIN, type TestServer } from '../support/server.ts';
import { passwordToken } from '../support/http.ts';
import { Api, ref, model } from '../support/fixtures.ts';

const skip = process.env.DATABASE_URL
  ? 'SQLite only: query plans are read with SQLite EXPLAIN QUERY PLAN (DATABASE_URL is set)'
  : false;

let server: TestServer;
let api: Api;
let kg: any;
let firstAsset: any;

interface Logged {
  sql: string;
  bindings: unknown[];
}

/** Every SQL statement the server runs while `run` runs. */
async function queriesOf(run: () => Promise<void>): Promise<Logged[]> {
  const knex = server.ctx.db.knex;
  const log: Logged[] = [];
  const listener = (q: { sql: string; bindings?: unknown[] }) => log.push({ sql: q.sql, bindings: q.bindings ?? [] });
  knex.on('query', listener);
  try {
    await run();
  } finally {
    knex.removeListener('query', listener);
  }
  return log;
}

/** Tables of the data model: entity tables and the side tables of multi-valued fields. */
const MODEL_TABLES = new Set<string>([
  ...Object.values(model.entityTypes).map((et) => et.table),
  ...model.bundles.flatMap((b) => b.fields.flatMap((f) => (f.storage.kind === 'table' ? [f.storage.table] : []))),
  // Assets' placements and group memberships as time intervals (farm/placements.ts).
  'asset_location',
  'asset_group',
]);

/** alias → table, from the `table` as `alias` pairs and bare table names of a statement. */
function aliases(sql: string): Map<string, string> {
  const map = new Map<string, string>();
  for (const m of sql.matchAll(/[`"](\w+)[`"]\s+as\s+[`"]?(\w+)[`"]?/gi)) map.set(m[2]!, m[1]!);
  for (const m of sql.matchAll(/\b(?:from|join)\s+[`"](\w+)[`"](?!\s+as)/gi)) map.set(m[1]!, m[1]!);
  return map;
}

interface Plan {
  sql: string;
  details: string[];
  /** Full scans of model tables without an index. */
  scans: string[];
}

async function plan(q: Logged): Promise<Plan> {
  const rows = (await server.ctx.db.knex.raw(`EXPLAIN QUERY PLAN ${q.sql}`, q.bindings as any[])) as Array<{
    detail: string;
  }>;
  const details = rows.map((r) => r.detail);
  const names = aliases(q.sql);
  const scans = details.filter((d) => {
    const m = /^SCAN (\w+)(.*)$/.exec(d);
    if (!m) return false;
    const table = names.get(m[1]!) ?? m[1]!;
    return MODEL_TABLES.has(table) && !/USING (COVERING )?INDEX|USING INTEGER PRIMARY KEY/.test(m[2]!);
  });
  return { sql: q.sql, details, scans };
}

before(async () => {
  if (skip) return;
  server = await startTestServer();
  api = new Api(server.url, await passwordToken(server.url, ADMIN.name, ADMIN.password));
  kg = await api.create('taxonomy_term--unit', { name: 'kg' });
});
after(async () => {
  if (!skip) await server.close();
});

/** Create `n` activity logs, each with its own asset and its own quantity in kg. */
async function addLogs(n: number, offset: number): Promise<void> {
  for (let i = offset; i < offset + n; i++) {
    const asset = await api.create('asset--equipment', { name: `Machine ${i}` });
    firstAsset ??= asset;
    const quantity = await api.create(
      'quantity--standard',
      { measure: 'weight', value: { numerator: i, denominator: 1 } },
      { units: { data: ref(kg) } },
    );
    await api.create(
      'log--activity',
      {
        name: `Log ${String(i).padStart(3, '0')}`,
        timestamp: 1700000000 + i * 60,
        status: i % 2 ? 'done' : 'pending',
        flag: i % 3 ? [] : ['review'],
      },
      { asset: { data: [ref(asset)] }, quantity: { data: [ref(quantity)] } },
    );
  }
}

const PAGE = '/api/log/activity?include=asset,quantity.units&page[limit]=50&sort=-timestamp';

async function countPage(url: string, records: number): Promise<{ count: number; body: any }> {
  let body: any;
  const log = await queriesOf(async () => {
    const res = await api.get(url);
    assert.equal(res.status, 200, res.text.slice(0, 300));
    body = res.body;
  });
  assert.equal(body.data.length, records);
  return { count: withoutTokenLookup(log).length, body };
}

/**
 * The queries that build an answer: the bearer check's token lookup is left out, as on SQLite it
 * runs only when the database changed since the token was last read (oauth/bearer.ts).
 */
function withoutTokenLookup(log: Logged[]): Logged[] {
  return log.filter((q) => !/\bFROM oauth_access_tokens\b/.test(q.sql));
}

test(
  'a page with include=asset,quantity.units costs the same number of queries for 5 and for 50 records',
  { skip },
  async () => {
    await addLogs(5, 0);
    const five = await countPage(PAGE, 5);
    assert.equal(five.body.included.length, 5 + 5 + 1, 'assets, quantities and the unit');
    await addLogs(45, 5);
    const fifty = await countPage(PAGE, 50);
    assert.equal(fifty.body.included.length, 50 + 50 + 1);
    assert.equal(fifty.count, five.count, `queries for 50 records (${fifty.count}) = queries for 5 (${five.count})`);
    // The next page, reached through links.next, costs the same again; being the last, it also
    // looks once for logs without a timestamp, which sort after the rest (collection/page.ts).
    await addLogs(10, 50);
    const first = await countPage(PAGE, 50);
    const second = await countPage(first.body.links.next.href, 10);
    assert.equal(
      second.count,
      first.count + 1,
      'page 2 costs what page 1 costs, and one look for the NULLs after the last value',
    );
    assert.equal(first.count, five.count);
    // An individual resource with the same includes is not dearer than the page.
    const one = await queriesOf(async () => {
      assert.equal(
        (await api.get(`/api/log/activity/${first.body.data[0].id}?include=asset,quantity.units`)).status,
        200,
      );
    });
    assert.ok(withoutTokenLookup(one).length <= five.count, `individual: ${one.length} queries`);
    // One log by UUID: the log found by its UUID with its users and its version for the ETag (the
    // change feed's row, looked up by its key in the same statement), then its side tables (and the
    // token, when it has to be read). The ETag is still sent.
    let etag: string | undefined;
    const plain = withoutTokenLookup(
      await queriesOf(async () => {
        const res = await api.get(`/api/log/activity/${first.body.data[0].id}`);
        assert.equal(res.status, 200);
        etag = res.headers.get('etag') ?? undefined;
      }),
    );
    assert.equal(plain.length, 2, `one log: ${plain.map((q) => q.sql.slice(0, 80)).join('\n')}`);
    assert.match(plain[0]!.sql, /FROM change_feed WHERE entity_type = \? AND entity_id = e\.id/);
    assert.match(etag ?? '', /^"\d+"$/, 'the one log carries its ETag');
  },
);

test('no query of the hot paths scans a whole table of the data model', { skip }, async () => {
  const yard = await api.create('asset--land', { name: 'Yard', land_type: 'other' });
  await api.create(
    'log--activity',
    { timestamp: 1700000000, status: 'done', is_movement: true },
    { asset: { data: [ref(firstAsset)] }, location: { data: [ref(yard)] } },
  );
  const crew = await api.create('asset--group', { name: 'Crew' });
  await api.create(
    'log--activity',
    { timestamp: 1700000000, status: 'done', is_group_assignment: true },
    { asset: { data: [ref(firstAsset)] }, group: { data: [ref(crew)] } },
  );
  const paths = [
    '/api/log/activity',
    '/api/log/activity?filter[status]=done&sort=-timestamp',
    '/api/log/activity?sort=-timestamp&page[limit]=10',
    '/api/log/activity?sort=name',
    '/api/log/activity?filter[t][condition][path]=timestamp&filter[t][condition][operator]=%3E%3D&filter[t][condition][value]=1700001000&sort=timestamp',
    '/api/log/activity?filter[t][condition][path]=timestamp&filter[t][condition][operator]=BETWEEN&filter[t][condition][value][]=1700000000&filter[t][condition][value][]=1700001000',
    `/api/log/activity?filter[asset.id]=${firstAsset.id}&sort=-timestamp`,
    '/api/log/activity?filter[quantity.units.name]=kg&page[limit]=5',
    '/api/log/activity?filter[flag]=review&sort=-timestamp',
    '/api/log/activity?filter[status]=done&include=asset,quantity.units&sort=-timestamp',
    '/api/asset/equipment?filter[status]=active&sort=name',
    '/api/asset/equipment?filter[name]=Machine%207',
    // Location you can query: by the location's id or name, sorted by it, and at a past time.
    `/api/asset/equipment?filter[location.id]=${yard.id}`,
    '/api/asset/equipment?filter[location.name]=Yard&filter[status]=active',
    '/api/asset/equipment?filter[location.id][operator]=IS%20NULL&sort=name',
    '/api/asset/equipment?sort=location.name&page[limit]=5',
    `/api/asset/equipment?filter[location.id]=${yard.id}&as_of=1700000000`,
    // The members of a group, and the assets in none.
    `/api/asset/equipment?filter[group.id]=${crew.id}&sort=name`,
    '/api/asset/equipment?filter[group.id][operator]=IS%20NULL&page[limit]=5',
    '/api/asset/equipment?filter[group.name]=Crew&sort=group.name',
  ];
  const failures: string[] = [];
  let mainQueries = 0;
  for (const path of paths) {
    const log = await queriesOf(async () => {
      const res = await api.get(path);
      assert.equal(res.status, 200, `${path}: ${res.text.slice(0, 300)}`);
      // Follow links.next once: the keyset query is a hot path too.
      if (res.body.links.next) assert.equal((await api.get(res.body.links.next.href)).status, 200);
    });
    for (const q of log) {
      if (!/^\s*select/i.test(q.sql)) continue;
      const p = await plan(q);
      if (/from [`"](log|asset)[`"] as [`"]e[`"]/i.test(q.sql) && /limit/i.test(q.sql)) {
        mainQueries++;
        // The main collection query: filtered by bundle through an index, never a full scan.
        assert.ok(
          p.details.some((d) => /^SEARCH e USING (COVERING )?INDEX/.test(d)),
          `${path}: main query uses an index: ${p.details.join(' | ')}\n${q.sql}`,
        );
      }
      if (p.scans.length) failures.push(`${path}\n    ${q.sql}\n    plan: ${p.details.join(' | ')}`);
    }
  }
  assert.ok(mainQueries >= paths.length, 'the main collection query of every path was seen');
  // Control: the check does see a full scan when there is one.
  const control = await plan({ sql: 'select `e`.`id` from `log` as `e` where `e`.`data` = ?', bindings: ['x'] });
  assert.deepEqual(control.scans, ['SCAN e'], `control plan: ${control.details.join(' | ')}`);
  assert.deepEqual(failures, [], `full scans:\n${failures.join('\n')}`);
});

test('a deep page with a range filter on the sorted column seeks to its cursor', { skip }, async () => {
  // A season's logs, newest first: the filter and the cursor both bound the timestamp. SQLite
  // ranges an index scan by one upper bound; it must be the cursor's, or every deeper page reads
  // all the rows before it.
  const path =
    '/api/log/activity?filter[t][condition][path]=timestamp&filter[t][condition][operator]=BETWEEN&filter[t][condition][value][]=1600000000&filter[t][condition][value][]=1800000000&sort=-timestamp&page[limit]=5';
  // Enough logs in the range that page 2 is not the last (which also looks for NULLs after it).
  await addLogs(11, 300);
  const first = await api.get(path);
  assert.equal(first.status, 200);
  const log = await queriesOf(async () => {
    assert.equal((await api.get(first.body.links.next.href)).status, 200);
  });
  const main = log.find((q) => /from [`"]log[`"] as [`"]e[`"]/i.test(q.sql) && /limit/i.test(q.sql))!;
  const p = await plan(main);
  const seek = p.details.find((d) => /^SEARCH e USING (COVERING )?INDEX \w+ \(bundle=\? AND timestamp<\?\)/.test(d));
  assert.ok(seek, `the cursor query ranges by the cursor's bound alone: ${p.details.join(' | ')}\n${main.sql}`);
  // The index gives the rows in the page's order: nothing is sorted afresh, as on the first page.
  assert.ok(
    !p.details.some((d) => /TEMP B-TREE/.test(d)),
    `the cursor query sorts nothing: ${p.details.join(' | ')}\n${main.sql}`,
  );
  assert.equal(
    log.filter((q) => /from [`"]log[`"] as [`"]e[`"]/i.test(q.sql) && /limit/i.test(q.sql)).length,
    1,
    'one statement finds the page (the NULLs after it are not needed mid-range)',
  );
});

test("an asset's groups are read from stored membership, never from its logs", { skip }, async () => {
  // Computed fields never walk an asset's logs: a page of animals would otherwise cost more with
  // every group-assignment log a herd ever had.
  const herd = await api.create('asset--group', { name: 'Herd' });
  const flock = await api.create('asset--group', { name: 'Flock' });
  const mower = await api.create('asset--equipment', { name: 'Grouped mower' });
  for (const [i, group] of [herd, flock, herd].entries()) {
    await api.create(
      'log--activity',
      { timestamp: 1700000000 + i * 60, status: 'done', is_group_assignment: true },
      { asset: { data: [ref(mower)] }, group: { data: [ref(group)] } },
    );
  }
  const logTables = new Set([
    model.entityTypes.log!.table,
    ...model.bundles
      .filter((b) => b.entityType === 'log')
      .flatMap((b) => b.fields.flatMap((f) => (f.storage.kind === 'table' ? [f.storage.table] : []))),
  ]);
  for (const path of [
    `/api/asset/equipment/${mower.id}?fields[asset--equipment]=name,group`,
    '/api/asset/equipment?fields[asset--equipment]=name,group&filter[name]=Grouped%20mower',
  ]) {
    let body: any;
    const log = await queriesOf(async () => {
      const res = await api.get(path);
      assert.equal(res.status, 200, res.text.slice(0, 300));
      body = res.body;
    });
    const data = Array.isArray(body.data) ? body.data[0] : body.data;
    assert.deepEqual(
      data.relationships.group.data.map((r: { id: string }) => r.id),
      [herd.id],
      'the latest assignment holds',
    );
    const readsLogs = log.filter((q) => [...aliases(q.sql).values()].some((t) => logTables.has(t)));
    assert.deepEqual(
      readsLogs.map((q) => q.sql),
      [],
      `${path} reads no log table`,
    );
  }
});

// A write on SQLite touches a page of each of the table's indexes (25 for log). A statement that
// SQLite must be able to undo alone (an INSERT … RETURNING counts as one) or a savepoint of a
// group commit copies those pages to a journal first, which with SQLite's default temp store is a
// temporary file: that more than doubled the cost of a log's insert.
test("a write keeps its journals in memory, and a new record's id comes without RETURNING", { skip }, async () => {
  const [{ temp_store: tempStore }] = await server.ctx.db.knex.raw('PRAGMA temp_store');
  assert.equal(tempStore, 2, 'temp_store = MEMORY on the writing connection');
  const log = await queriesOf(async () => {
    await api.create(
      'log--activity',
      { name: 'Journal check', status: 'done' },
      { asset: { data: [ref(firstAsset)] } },
    );
  });
  const insert = log.find((q) => /^insert into [`"]log[`"] /i.test(q.sql));
  assert.ok(insert, log.map((q) => q.sql).join('\n'));
  assert.doesNotMatch(insert.sql, /\breturning\b/i);
});
