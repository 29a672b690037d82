// Filtering, sorting, paging, sparse fieldsets and includes end to end, against real records
// (issue 4 items 4–8; farmos-behaviour.md §4.4–4.7). Expected results are computed from a local
// copy of the data set, so each case states its meaning, not a list of ids. The exact query
// strings farmOS.js and farmOS.py emit (clients.md §1.6, §2.1) are sent as the clients send them.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, ADMIN, type TestServer } from '../support/server.ts';
import { passwordToken } from '../support/http.ts';
import { Api, ref } from '../support/fixtures.ts';
import { createUser } from '../../runtime/accounts/users.ts';

const T0 = 1700000000; // 2023-11-14T22:13:20+00:00
const HOUR = 3600;

interface LocalLog {
  key: string;
  name: string;
  timestamp: number;
  status: 'done' | 'pending';
  assets: Array<'tractor' | 'baler'>;
  quantities: Array<'q1' | 'q2'>;
  notes: string | null;
  flags: string[];
  movement: boolean;
  lot: string | null;
  owner: 'admin' | 'worker';
}

/** The harvest logs of the data set. h1 and h5 share a timestamp (tie breaking). */
const LOGS: LocalLog[] = [
  {
    key: 'h1',
    name: 'Harvest Apples',
    timestamp: T0,
    status: 'done',
    assets: ['tractor'],
    quantities: ['q1'],
    notes: 'Red apples picked',
    flags: ['priority'],
    movement: false,
    lot: 'LOT-1',
    owner: 'admin',
  },
  {
    key: 'h2',
    name: 'harvest pears',
    timestamp: T0 + HOUR,
    status: 'pending',
    assets: ['baler'],
    quantities: ['q2'],
    notes: 'Pears, ripe',
    flags: [],
    movement: false,
    lot: null,
    owner: 'worker',
  },
  {
    key: 'h3',
    name: 'Corn harvest',
    timestamp: T0 + 2 * HOUR,
    status: 'done',
    assets: ['tractor', 'baler'],
    quantities: [],
    notes: null,
    flags: ['review', 'monitor'],
    movement: true,
    lot: 'LOT-3',
    owner: 'admin',
  },
  {
    key: 'h4',
    name: 'Zucchini',
    timestamp: T0 + 3 * HOUR,
    status: 'pending',
    assets: [],
    quantities: [],
    notes: 'Sold at 50%_off',
    flags: [],
    movement: false,
    lot: 'lot-4',
    owner: 'admin',
  },
  {
    key: 'h5',
    name: 'Beans',
    timestamp: T0,
    status: 'done',
    assets: [],
    quantities: [],
    notes: 'Green beans',
    flags: ['review'],
    movement: false,
    lot: null,
    owner: 'admin',
  },
];

const ASSET_NAMES = { tractor: 'Tractor Alpha', baler: 'Baler beta' } as const;
const UNIT_OF = { q1: 'kg', q2: 'Bushels' } as const;
const PAGED = 125; // observation logs for paging

let server: TestServer;
let api: Api;
const idOf = new Map<string, string>(); // local key → UUID
const keyOf = new Map<string, string>(); // UUID → local key
let worker: { uuid: string; name: string };
const observations: Array<{ id: string; name: string; timestamp: number }> = [];

before(async () => {
  server = await startTestServer();
  api = new Api(server.url, await passwordToken(server.url, ADMIN.name, ADMIN.password));
  const account = await createUser(server.ctx.db.knex, {
    name: 'worker_q',
    password: 'worker-password',
    roles: ['farm_worker'],
  });
  worker = { uuid: account.uuid, name: account.name };
  const admin = (await api.get(`/api/user/user?filter[name]=${ADMIN.name}`)).body.data[0];

  const units = {
    kg: await api.create('taxonomy_term--unit', { name: 'kg' }),
    Bushels: await api.create('taxonomy_term--unit', { name: 'Bushels' }),
  };
  const assets = {
    tractor: await api.create('asset--equipment', { name: ASSET_NAMES.tractor }),
    baler: await api.create('asset--equipment', { name: ASSET_NAMES.baler }),
  };
  const field = await api.create('asset--land', { name: 'North Field', land_type: 'field' });
  const quantities = {
    q1: await api.create(
      'quantity--standard',
      { measure: 'weight', value: { numerator: 5, denominator: 1 }, label: 'first' },
      { units: { data: ref(units.kg) } },
    ),
    q2: await api.create(
      'quantity--standard',
      { measure: 'volume', value: { numerator: 10, denominator: 1 }, label: 'second' },
      { units: { data: ref(units.Bushels) } },
    ),
  };
  for (const log of LOGS) {
    const created = await api.create(
      'log--harvest',
      {
        name: log.name,
        timestamp: log.timestamp,
        status: log.status,
        notes: log.notes === null ? null : { value: log.notes, format: 'default' },
        flag: log.flags,
        is_movement: log.movement,
        lot_number: log.lot,
      },
      {
        asset: { data: log.assets.map((a) => ref(assets[a])) },
        quantity: { data: log.quantities.map((q) => ref(quantities[q])) },
        owner: { data: [log.owner === 'worker' ? { type: 'user--user', id: worker.uuid } : ref(admin)] },
        ...(log.movement ? { location: { data: [ref(field)] } } : {}),
      },
    );
    idOf.set(log.key, created.id);
    keyOf.set(created.id, log.key);
  }
  for (const [k, a] of Object.entries(assets)) idOf.set(k, a.id);
  for (const [k, q] of Object.entries(quantities)) idOf.set(k, q.id);
  for (const [k, u] of Object.entries(units)) idOf.set(k, u.id);

  // Observation logs for paging: timestamps in runs of 10 (ties), names unique.
  for (let i = 0; i < PAGED; i++) {
    const name = `Obs ${String(i).padStart(3, '0')}`;
    const timestamp = T0 + Math.floor(i / 10) * HOUR;
    const created = await api.create('log--observation', { name, timestamp, status: i % 3 === 0 ? 'done' : 'pending' });
    observations.push({ id: created.id, name, timestamp });
  }
});
after(() => server.close());

/** GET harvest logs with a raw query string; returns the local keys in the order served. */
async function harvest(query: string): Promise<string[]> {
  const res = await api.get(`/api/log/harvest?${query}`);
  assert.equal(res.status, 200, `?${query}: ${res.text.slice(0, 500)}`);
  return res.body.data.map((r: { id: string }) => keyOf.get(r.id) ?? r.id);
}

/** Assert a filter selects exactly the logs `pick` selects (order ignored). */
async function selects(query: string, pick: (l: LocalLog) => boolean): Promise<void> {
  const got = (await harvest(query)).sort();
  const want = LOGS.filter(pick)
    .map((l) => l.key)
    .sort();
  assert.deepEqual(got, want, `?${decodeURIComponent(query)}`);
}

const cond = (key: string, path: string, operator: string, value?: string | string[]) => {
  const base = `filter[${key}][condition]`;
  let q = `${base}[path]=${encodeURIComponent(path)}&${base}[operator]=${encodeURIComponent(operator)}`;
  if (Array.isArray(value)) q += value.map((v) => `&${base}[value][]=${encodeURIComponent(v)}`).join('');
  else if (value !== undefined) q += `&${base}[value]=${encodeURIComponent(value)}`;
  return q;
};

test('shorthand filters: filter[field]=value and filter[key][value] with a path', async () => {
  await selects('filter[status]=done', (l) => l.status === 'done');
  await selects('filter[name]=Zucchini', (l) => l.name === 'Zucchini');
  await selects('filter[s][path]=status&filter[s][value]=pending', (l) => l.status === 'pending');
  await selects('filter[lot_number]=LOT-1', (l) => l.lot === 'LOT-1');
});

test('every operator, on strings, timestamps and multi-valued fields', async () => {
  await selects(cond('a', 'status', '=', 'done'), (l) => l.status === 'done');
  await selects(cond('a', 'status', '<>', 'done'), (l) => l.status !== 'done');
  await selects(cond('a', 'timestamp', '>', String(T0 + HOUR)), (l) => l.timestamp > T0 + HOUR);
  await selects(cond('a', 'timestamp', '>=', String(T0 + HOUR)), (l) => l.timestamp >= T0 + HOUR);
  await selects(cond('a', 'timestamp', '<', String(T0 + HOUR)), (l) => l.timestamp < T0 + HOUR);
  await selects(cond('a', 'timestamp', '<=', String(T0 + HOUR)), (l) => l.timestamp <= T0 + HOUR);
  await selects(cond('a', 'name', 'STARTS_WITH', 'harvest'), (l) => l.name.toLowerCase().startsWith('harvest'));
  await selects(cond('a', 'name', 'CONTAINS', 'HARV'), (l) => l.name.toLowerCase().includes('harv'));
  await selects(cond('a', 'name', 'ENDS_WITH', 'HARVEST'), (l) => l.name.toLowerCase().endsWith('harvest'));
  await selects(cond('a', 'name', 'IN', ['Zucchini', 'Beans', 'Nothing']), (l) =>
    ['Zucchini', 'Beans'].includes(l.name),
  );
  await selects(cond('a', 'status', 'NOT IN', ['pending']), (l) => l.status !== 'pending');
  await selects(
    cond('a', 'timestamp', 'BETWEEN', [String(T0 + 1), String(T0 + 2 * HOUR)]),
    (l) => l.timestamp >= T0 + 1 && l.timestamp <= T0 + 2 * HOUR,
  );
  await selects(
    cond('a', 'timestamp', 'NOT BETWEEN', [String(T0 + 1), String(T0 + 2 * HOUR)]),
    (l) => !(l.timestamp >= T0 + 1 && l.timestamp <= T0 + 2 * HOUR),
  );
  await selects(cond('a', 'lot_number', 'IS NULL'), (l) => l.lot === null);
  await selects(cond('a', 'lot_number', 'IS NOT NULL'), (l) => l.lot !== null);
  // Multi-valued attribute: a positive operator matches when some value does; a negative when none does.
  await selects(cond('a', 'flag', '=', 'review'), (l) => l.flags.includes('review'));
  await selects(cond('a', 'flag', '<>', 'review'), (l) => !l.flags.includes('review'));
  await selects(cond('a', 'flag', 'IN', ['priority', 'monitor']), (l) =>
    l.flags.some((f) => ['priority', 'monitor'].includes(f)),
  );
  await selects(cond('a', 'flag', 'IS NULL'), (l) => l.flags.length === 0);
  await selects(cond('a', 'flag', 'IS NOT NULL'), (l) => l.flags.length > 0);
});

test('CONTAINS, STARTS_WITH and ENDS_WITH are case-insensitive and take % and _ literally', async () => {
  await selects(cond('a', 'name', 'CONTAINS', 'APPLES'), (l) => l.name === 'Harvest Apples');
  await selects(cond('a', 'name', 'STARTS_WITH', 'CORN'), (l) => l.name === 'Corn harvest');
  await selects(cond('a', 'notes.value', 'CONTAINS', '50%_off'), (l) => l.key === 'h4');
  await selects(cond('a', 'notes.value', 'CONTAINS', '5_%'), () => false);
  await selects(cond('a', 'lot_number', 'STARTS_WITH', 'lot-'), (l) => l.lot !== null);
});

test('groups: AND and OR, nested through memberOf', async () => {
  // status = done AND (name STARTS_WITH corn OR lot_number = LOT-1)
  const q = [
    'filter[outer][group][conjunction]=AND',
    'filter[inner][group][conjunction]=OR&filter[inner][group][memberOf]=outer',
    `${cond('s', 'status', '=', 'done')}&filter[s][condition][memberOf]=outer`,
    `${cond('c', 'name', 'STARTS_WITH', 'corn')}&filter[c][condition][memberOf]=inner`,
    `${cond('l', 'lot_number', '=', 'LOT-1')}&filter[l][condition][memberOf]=inner`,
  ].join('&');
  await selects(q, (l) => l.status === 'done' && (l.name.toLowerCase().startsWith('corn') || l.lot === 'LOT-1'));
  // OR at the top, with an AND group inside: pending OR (done AND flagged review)
  const q2 = [
    'filter[top][group][conjunction]=OR',
    'filter[both][group][conjunction]=AND&filter[both][group][memberOf]=top',
    `${cond('p', 'status', '=', 'pending')}&filter[p][condition][memberOf]=top`,
    `${cond('d', 'status', '=', 'done')}&filter[d][condition][memberOf]=both`,
    `${cond('r', 'flag', '=', 'review')}&filter[r][condition][memberOf]=both`,
  ].join('&');
  await selects(q2, (l) => l.status === 'pending' || (l.status === 'done' && l.flags.includes('review')));
  // A root-level condition is ANDed with a group.
  await selects(
    `filter[g][group][conjunction]=OR&${cond('x', 'name', '=', 'Zucchini')}&filter[x][condition][memberOf]=g&${cond('y', 'name', '=', 'Beans')}&filter[y][condition][memberOf]=g&filter[status]=done`,
    (l) => l.name === 'Beans',
  );
});

test('paths through relationships: asset.id, asset.name, quantity.units.name, owner.name, owner.id', async () => {
  await selects(`filter[asset.id]=${idOf.get('tractor')}`, (l) => l.assets.includes('tractor'));
  await selects(cond('a', 'asset.id', '=', idOf.get('baler')!), (l) => l.assets.includes('baler'));
  await selects(`filter[asset.name]=${encodeURIComponent(ASSET_NAMES.baler)}`, (l) => l.assets.includes('baler'));
  await selects(cond('a', 'asset.name', 'CONTAINS', 'ALPHA'), (l) => l.assets.includes('tractor'));
  await selects('filter[quantity.units.name]=kg', (l) => l.quantities.some((q) => UNIT_OF[q] === 'kg'));
  await selects(cond('a', 'quantity.units.name', 'IN', ['kg', 'Bushels']), (l) => l.quantities.length > 0);
  await selects(`filter[owner.name]=${worker.name}`, (l) => l.owner === 'worker');
  await selects(`filter[owner.id]=${worker.uuid}`, (l) => l.owner === 'worker');
  await selects(`filter[owner.name]=${ADMIN.name}`, (l) => l.owner === 'admin');
  await selects(cond('a', 'asset', 'IS NULL'), (l) => l.assets.length === 0);
  await selects(cond('a', 'asset', 'IS NOT NULL'), (l) => l.assets.length > 0);
  await selects(cond('a', 'asset.id', '<>', idOf.get('tractor')!), (l) => !l.assets.includes('tractor'));
  await selects(cond('a', 'location.name', '=', 'North Field'), (l) => l.movement);
});

test('properties of compound fields (notes.value) and the UUID as id', async () => {
  await selects('filter[notes.value]=Green%20beans', (l) => l.notes === 'Green beans');
  await selects(cond('a', 'notes.value', 'CONTAINS', 'pears'), (l) => (l.notes ?? '').toLowerCase().includes('pears'));
  await selects(cond('a', 'notes.value', 'IS NULL'), (l) => l.notes === null);
  await selects(`filter[id]=${idOf.get('h3')}`, (l) => l.key === 'h3');
  await selects(`filter[id]=${idOf.get('h3')!.toUpperCase()}`, (l) => l.key === 'h3');
  await selects(cond('a', 'id', 'IN', [idOf.get('h1')!, idOf.get('h4')!]), (l) => ['h1', 'h4'].includes(l.key));
});

test('booleans as 1/0 and true/false', async () => {
  for (const v of ['1', 'true']) await selects(`filter[is_movement]=${v}`, (l) => l.movement);
  for (const v of ['0', 'false']) await selects(`filter[is_movement]=${v}`, (l) => !l.movement);
  await selects(cond('a', 'is_movement', '<>', '1'), (l) => !l.movement);
});

test('timestamps as Unix seconds and as ISO 8601 strings', async () => {
  await selects(`filter[timestamp]=${T0}`, (l) => l.timestamp === T0);
  await selects(cond('a', 'timestamp', '>=', '2023-11-14T23:13:20+00:00'), (l) => l.timestamp >= T0 + HOUR);
  await selects(cond('a', 'timestamp', '>=', '2023-11-14T23:13:20Z'), (l) => l.timestamp >= T0 + HOUR);
  await selects(cond('a', 'timestamp', '<', '2023-11-15T00:13:20+01:00'), (l) => l.timestamp < T0 + HOUR);
  await selects(
    cond('a', 'timestamp', 'BETWEEN', ['2023-11-14T22:13:20Z', String(T0 + HOUR)]),
    (l) => l.timestamp <= T0 + HOUR,
  );
});

test('farmOS.js query strings, exactly as it sends them (clients.md §1.6)', async () => {
  const f = (label: string, rest: string) => `filter[${label}][condition]${rest}`;
  // {status: 'done'}: one key, raw brackets, = pre-encoded as %3D.
  await selects(
    `${f('status-0-filter', '[path]=status')}&${f('status-0-filter', '[operator]=%3D')}&${f('status-0-filter', '[value]=done')}`,
    (l) => l.status === 'done',
  );
  // Several keys go through URLSearchParams: brackets as %5B%5D.
  const params = new URLSearchParams();
  params.append('filter[status-0-filter][condition][path]', 'status');
  params.append('filter[status-0-filter][condition][operator]', '=');
  params.append('filter[status-0-filter][condition][value]', 'pending');
  params.append('filter[name-0-filter][condition][path]', 'name');
  params.append('filter[name-0-filter][condition][operator]', '=');
  params.append('filter[name-0-filter][condition][value]', 'Zucchini');
  assert.match(params.toString(), /^filter%5Bstatus-0-filter%5D%5Bcondition%5D%5Bpath%5D=status&/);
  await selects(params.toString(), (l) => l.status === 'pending' && l.name === 'Zucchini');
  // {status: {$ne: 'done'}}: <> raw.
  await selects(
    `${f('status-0-filter', '[path]=status')}&${f('status-0-filter', '[operator]=<>')}&${f('status-0-filter', '[value]=done')}`,
    (l) => l.status !== 'done',
  );
  // {timestamp: {$gt: …}}: > raw, which the URL parser sends as %3E.
  await selects(
    `${f('timestamp-0-filter', '[path]=timestamp')}&${f('timestamp-0-filter', '[operator]=>')}&${f('timestamp-0-filter', `[value]=${T0 + HOUR}`)}`,
    (l) => l.timestamp > T0 + HOUR,
  );
  // {timestamp: {$gte: a, $lt: b}}: two conditions; `>=` arrives as %3E= with a literal =.
  await selects(
    `${f('timestamp-0-filter', '[path]=timestamp')}&${f('timestamp-0-filter', '[operator]=%3E=')}&${f('timestamp-0-filter', `[value]=${T0 + HOUR}`)}&` +
      `${f('timestamp-1-filter', '[path]=timestamp')}&${f('timestamp-1-filter', '[operator]=<')}&${f('timestamp-1-filter', `[value]=${T0 + 3 * HOUR}`)}`,
    (l) => l.timestamp >= T0 + HOUR && l.timestamp < T0 + 3 * HOUR,
  );
  await selects(
    `${f('t-0-filter', '[path]=timestamp')}&${f('t-0-filter', '[operator]=<=')}&${f('t-0-filter', `[value]=${T0}`)}`,
    (l) => l.timestamp <= T0,
  );
  // {status: {$in: [...]}} and $nin: [value][0], [value][1].
  await selects(
    `${f('status-0-filter', '[path]=status')}&${f('status-0-filter', '[operator]=IN')}&${f('status-0-filter', '[value][0]=done')}&${f('status-0-filter', '[value][1]=pending')}`,
    () => true,
  );
  await selects(
    `${f('status-0-filter', '[path]=status')}&${f('status-0-filter', '[operator]=NOT IN')}&${f('status-0-filter', '[value][0]=done')}`,
    (l) => l.status !== 'done',
  );
  // {lot_number: null}: IS NULL with a raw space, no index in the label, no value.
  await selects(
    `${f('lot_number-filter', '[path]=lot_number')}&${f('lot_number-filter', '[operator]=IS NULL')}`,
    (l) => l.lot === null,
  );
  // {is_movement: true} → value 1.
  await selects(
    `${f('is_movement-0-filter', '[path]=is_movement')}&${f('is_movement-0-filter', '[operator]=%3D')}&${f('is_movement-0-filter', '[value]=1')}`,
    (l) => l.movement,
  );
  // {'asset.id': uuid}
  await selects(
    `${f('asset.id-0-filter', '[path]=asset.id')}&${f('asset.id-0-filter', '[operator]=%3D')}&${f('asset.id-0-filter', `[value]=${idOf.get('baler')}`)}`,
    (l) => l.assets.includes('baler'),
  );
  // {'asset.name': x, 'asset.id': {$in: [a, b]}}
  await selects(
    `${f('asset.name-0-filter', '[path]=asset.name')}&${f('asset.name-0-filter', '[operator]=%3D')}&${f('asset.name-0-filter', '[value]=Tractor Alpha')}&` +
      `${f('asset.id-0-filter', '[path]=asset.id')}&${f('asset.id-0-filter', '[operator]=IN')}&${f('asset.id-0-filter', `[value][0]=${idOf.get('tractor')}`)}&${f('asset.id-0-filter', `[value][1]=${idOf.get('baler')}`)}`,
    (l) => l.assets.includes('tractor'),
  );
  // [{status: 'pending'}, {name: 'Corn harvest'}]: an OR group with memberOf.
  await selects(
    `filter[group-0][group][conjunction]=OR&${f('status-0-filter', '[path]=status')}&${f('status-0-filter', '[operator]=%3D')}&${f('status-0-filter', '[value]=pending')}&${f('status-0-filter', '[memberOf]=group-0')}&` +
      `${f('name-0-filter', '[path]=name')}&${f('name-0-filter', '[operator]=%3D')}&${f('name-0-filter', '[value]=Corn harvest')}&${f('name-0-filter', '[memberOf]=group-0')}`,
    (l) => l.status === 'pending' || l.name === 'Corn harvest',
  );
  // {status: {$or: ['done', 'pending']}}: two conditions under the SAME key; PHP keeps the last.
  await selects(
    `filter[group-1][group][conjunction]=OR&${f('status-0-filter', '[path]=status')}&${f('status-0-filter', '[operator]=%3D')}&${f('status-0-filter', '[value]=done')}&${f('status-0-filter', '[memberOf]=group-1')}&` +
      `${f('status-0-filter', '[path]=status')}&${f('status-0-filter', '[operator]=%3D')}&${f('status-0-filter', '[value]=pending')}&${f('status-0-filter', '[memberOf]=group-1')}`,
    (l) => l.status === 'pending',
  );
  // fetch({filter, limit, sort}) appends &page[limit]=N&sort=-timestamp,name.
  const order = await harvest(
    `${f('status-0-filter', '[path]=status')}&${f('status-0-filter', '[operator]=%3D')}&${f('status-0-filter', '[value]=done')}&page[limit]=2&sort=-timestamp,name`,
  );
  const want = LOGS.filter((l) => l.status === 'done')
    .sort((a, b) => b.timestamp - a.timestamp || a.name.localeCompare(b.name))
    .slice(0, 2)
    .map((l) => l.key);
  assert.deepEqual(order, want);
});

test('farmOS.py query strings, exactly as requests encodes them (clients.md §2.1)', async () => {
  // requests encodes keys and values with urllib's quote_plus: brackets, =, <, > escaped, space as +.
  const quotePlus = (s: string) => encodeURIComponent(s).replace(/%20/g, '+');
  // farm.filter('status', 'done') → the short form.
  await selects(`${quotePlus('filter[status]')}=done`, (l) => l.status === 'done');
  // farm.filter('timestamp', 5, '>') → label timestamp_>, one-element list value ([value][]).
  const py = (path: string, op: string, values: string[], list: boolean) => {
    const label = `filter[${path}_${op.toLowerCase()}][condition]`;
    let q = `${quotePlus(`${label}[path]`)}=${quotePlus(path)}&${quotePlus(`${label}[operator]`)}=${quotePlus(op)}`;
    for (const v of values) q += `&${quotePlus(`${label}[value]${list ? '[]' : ''}`)}=${quotePlus(v)}`;
    return q;
  };
  assert.equal(
    py('timestamp', '>', ['5'], true),
    'filter%5Btimestamp_%3E%5D%5Bcondition%5D%5Bpath%5D=timestamp&filter%5Btimestamp_%3E%5D%5Bcondition%5D%5Boperator%5D=%3E&filter%5Btimestamp_%3E%5D%5Bcondition%5D%5Bvalue%5D%5B%5D=5',
  );
  await selects(py('timestamp', '>', [String(T0 + HOUR)], true), (l) => l.timestamp > T0 + HOUR);
  await selects(py('timestamp', '<', [String(T0 + HOUR)], true), (l) => l.timestamp < T0 + HOUR);
  await selects(py('status', '<>', ['done'], true), (l) => l.status !== 'done');
  await selects(py('timestamp', '>=', [String(T0 + HOUR)], false), (l) => l.timestamp >= T0 + HOUR);
  await selects(py('timestamp', '<=', [String(T0 + HOUR)], false), (l) => l.timestamp <= T0 + HOUR);
  await selects(py('name', 'IN', ['Beans', 'Zucchini'], true), (l) => ['Beans', 'Zucchini'].includes(l.name));
  await selects(py('name', 'NOT IN', ['Beans'], true), (l) => l.name !== 'Beans');
  await selects(py('timestamp', 'BETWEEN', [String(T0), String(T0 + HOUR)], true), (l) => l.timestamp <= T0 + HOUR);
  await selects(py('name', 'CONTAINS', ['pear'], false), (l) => l.name.includes('pear'));
});

test('sorting: -timestamp,name; the long form; a relationship path; ties broken by id', async () => {
  const byTsDescName = [...LOGS]
    .sort((a, b) => b.timestamp - a.timestamp || a.name.localeCompare(b.name))
    .map((l) => l.key);
  assert.deepEqual(await harvest('sort=-timestamp,name'), byTsDescName);
  assert.deepEqual(await harvest('sort[a][path]=timestamp&sort[a][direction]=DESC&sort[b][path]=name'), byTsDescName);
  assert.deepEqual(
    await harvest('sort[a][path]=timestamp&sort[a][direction]=desc&sort[b][path]=name&sort[b][direction]=ASC'),
    byTsDescName,
  );
  // Only done logs: their names sort the same under any collation (no case differences).
  const byName = LOGS.filter((l) => l.status === 'done')
    .sort((a, b) => (a.name < b.name ? -1 : 1))
    .map((l) => l.key);
  assert.deepEqual(await harvest('filter[status]=done&sort=name'), byName);
  assert.deepEqual(await harvest('filter[status]=done&sort=-name'), [...byName].reverse());
  // Ties on timestamp (h1 and h5) are broken by id: creation order, the same on every request.
  const byTs = await harvest('sort=timestamp');
  assert.deepEqual(byTs.slice(0, 2), ['h1', 'h5']);
  assert.deepEqual(await harvest('sort=timestamp'), byTs);
  // A relationship path: logs with assets, by the (smallest) asset name.
  const withAssets = await harvest(`${cond('x', 'asset', 'IS NOT NULL')}&sort=asset.name,name`);
  const minName = (l: LocalLog) => l.assets.map((a) => ASSET_NAMES[a]).sort()[0]!;
  assert.deepEqual(
    withAssets,
    LOGS.filter((l) => l.assets.length)
      .sort((a, b) => minName(a).localeCompare(minName(b)) || a.name.localeCompare(b.name))
      .map((l) => l.key),
  );
  assert.deepEqual(
    await harvest(`${cond('x', 'quantity', 'IS NOT NULL')}&sort=-quantity.units.name`),
    ['h1', 'h2'],
    'kg after Bushels, descending',
  );
});

test('paging: default and maximum 50, clamping, next/prev/first links, parameters kept', async () => {
  const first = await api.get('/api/log/observation');
  assert.equal(first.status, 200);
  assert.equal(first.body.data.length, 50, 'default page size 50');
  const next = first.body.links.next?.href as string;
  assert.ok(next, 'links.next when more records exist');
  const nextUrl = new URL(next);
  assert.equal(`${nextUrl.protocol}//${nextUrl.host}`, server.url, 'links.next is absolute, on the server URL');
  assert.equal(nextUrl.searchParams.get('page[offset]'), '50');
  assert.equal(nextUrl.searchParams.get('page[limit]'), '50');
  assert.equal(first.body.links.self.href, `${server.url}/api/log/observation`);
  assert.equal(first.body.links.prev, undefined, 'no prev on the first page');
  assert.equal(first.body.links.first, undefined, 'no first on the first page');
  assert.equal(first.body.meta?.count, undefined, 'no count (farmOS has none)');

  const clamped = await api.get('/api/log/observation?page[limit]=500');
  assert.equal(clamped.body.data.length, 50, 'page[limit] above 50 is clamped');
  const small = await api.get('/api/log/observation?page[limit]=7&page[offset]=14&sort=name');
  assert.deepEqual(
    small.body.data.map((r: any) => r.attributes.name),
    observations
      .map((o) => o.name)
      .sort()
      .slice(14, 21),
  );
  assert.equal(new URL(small.body.links.prev.href).searchParams.get('page[offset]'), '7');
  assert.equal(new URL(small.body.links.first.href).searchParams.get('page[offset]'), '0');
  const nearStart = await api.get('/api/log/observation?page[limit]=10&page[offset]=4');
  assert.equal(
    new URL(nearStart.body.links.prev.href).searchParams.get('page[offset]'),
    '0',
    'prev never goes below offset 0',
  );

  // Every other parameter is kept in the links.
  const q = 'filter[status]=pending&sort=-name&fields[log--observation]=name,status&page[limit]=20';
  const res = await api.get(`/api/log/observation?${q}`);
  for (const link of ['next'] as const) {
    const u = new URL(res.body.links[link].href);
    assert.equal(u.searchParams.get('filter[status]'), 'pending', `${link} keeps the filter`);
    assert.equal(u.searchParams.get('sort'), '-name', `${link} keeps the sort`);
    assert.equal(u.searchParams.get('fields[log--observation]'), 'name,status', `${link} keeps the fieldset`);
    assert.equal(u.searchParams.get('page[limit]'), '20');
  }
  const second = await api.get(res.body.links.next.href);
  assert.ok(second.body.links.prev, 'prev past offset 0');
  for (const link of ['prev', 'first'] as const) {
    const u = new URL(second.body.links[link].href);
    assert.equal(u.searchParams.get('filter[status]'), 'pending', `${link} keeps the filter`);
    assert.equal(u.searchParams.get('sort'), '-name', `${link} keeps the sort`);
    assert.equal(u.searchParams.get('page[offset]'), '0');
  }
  assert.deepEqual(Object.keys(second.body.data[0].attributes).sort(), ['name', 'status']);

  // The last page has no next member at all (farmOS.py stops only on a missing key).
  const last = await api.get('/api/log/observation?page[offset]=100&page[limit]=50');
  assert.equal(last.body.data.length, PAGED - 100);
  assert.ok(!('next' in last.body.links), 'no links.next on the last page');
  const exact = await api.get(`/api/log/observation?page[offset]=${PAGED - 25}&page[limit]=25`);
  assert.equal(exact.body.data.length, 25);
  assert.ok(!('next' in exact.body.links), 'no links.next when the page ends exactly at the last record');
  const beyond = await api.get('/api/log/observation?page[offset]=1000');
  assert.deepEqual(beyond.body.data, []);
});

test('following links.next through 125 records visits each once, in order, for several sorts', async () => {
  const sorts: Array<[string, (a: (typeof observations)[0], b: (typeof observations)[0]) => number]> = [
    ['sort=name', (a, b) => (a.name < b.name ? -1 : 1)],
    ['sort=-name', (a, b) => (a.name < b.name ? 1 : -1)],
    ['sort=timestamp,name', (a, b) => a.timestamp - b.timestamp || (a.name < b.name ? -1 : 1)],
    ['sort=-timestamp,-name', (a, b) => b.timestamp - a.timestamp || (a.name < b.name ? 1 : -1)],
  ];
  for (const [q, cmp] of sorts) {
    for (const limit of [50, 17]) {
      const seen = await api.all(`/api/log/observation?${q}&page[limit]=${limit}`);
      assert.deepEqual(
        seen.map((r) => r.id),
        [...observations].sort(cmp).map((o) => o.id),
        `${q}, pages of ${limit}`,
      );
    }
  }
  // Sorting on a field with ties only (timestamp): every record exactly once, ties in a stable order.
  const tied = await api.all('/api/log/observation?sort=-timestamp&page[limit]=7');
  assert.equal(tied.length, PAGED);
  assert.equal(new Set(tied.map((r) => r.id)).size, PAGED, 'no record twice');
  const onePage = (await api.get('/api/log/observation?sort=-timestamp&page[limit]=50')).body.data.map(
    (r: any) => r.id,
  );
  assert.deepEqual(
    tied.slice(0, 50).map((r) => r.id),
    onePage,
    'the same order in small and large pages',
  );
  for (let i = 1; i < tied.length; i++)
    assert.ok(Date.parse(tied[i - 1].attributes.timestamp) >= Date.parse(tied[i].attributes.timestamp));
  // Without a sort: every record once.
  const unsorted = await api.all('/api/log/observation?page[limit]=30');
  assert.deepEqual(unsorted.map((r) => r.id).sort(), observations.map((o) => o.id).sort());
  // With a filter: exactly the matching records.
  const done = await api.all('/api/log/observation?filter[status]=done&sort=name&page[limit]=10');
  assert.deepEqual(
    done.map((r) => r.attributes.name),
    observations
      .filter((_, i) => i % 3 === 0)
      .map((o) => o.name)
      .sort(),
  );
  // A range on the sorted column itself, as a sync for a season writes it: the cursor and the
  // filter both bound the timestamp, and every record in the range comes once, in order.
  const times = observations.map((o) => o.timestamp).sort((a, b) => a - b);
  const [low, high] = [times[10]!, times[times.length - 10]!];
  const ranged = `filter[t][condition][path]=timestamp&filter[t][condition][operator]=BETWEEN&filter[t][condition][value][]=${low}&filter[t][condition][value][]=${high}`;
  for (const [sortParam, sign] of [
    ['-timestamp', -1],
    ['timestamp', 1],
  ] as const) {
    const inRange = await api.all(`/api/log/observation?${ranged}&sort=${sortParam}&page[limit]=9`);
    const expected = observations.filter((o) => o.timestamp >= low && o.timestamp <= high);
    assert.equal(inRange.length, expected.length, `sort=${sortParam}`);
    assert.deepEqual(new Set(inRange.map((r) => r.id)), new Set(expected.map((o) => o.id)));
    for (let i = 1; i < inRange.length; i++)
      assert.ok(
        sign * (Date.parse(inRange[i].attributes.timestamp) - Date.parse(inRange[i - 1].attributes.timestamp)) >= 0,
      );
  }
});

test('following links.next over a sort on a field some records leave empty: every record once, the empty ones together', async () => {
  // Equipment with and without a manufacturer: where this database puts NULLs (SQLite before
  // values in ascending order, PostgreSQL after them), pages must cross from values to NULLs.
  const made: Array<{ id: string; manufacturer: string | null }> = [];
  for (const [i, manufacturer] of [
    'Deere',
    null,
    'Kubota',
    'Deere',
    null,
    'Claas',
    null,
    'Kubota',
    'Fendt',
    null,
    'Deere',
  ].entries()) {
    const asset = await api.create('asset--equipment', {
      name: `Machine for paging ${i}`,
      ...(manufacturer ? { manufacturer } : {}),
    });
    made.push({ id: asset.id, manufacturer });
  }
  const mine = (list: any[]) => list.filter((r) => made.some((m) => m.id === r.id));
  const filter = 'filter[name][operator]=STARTS_WITH&filter[name][value]=Machine for paging';
  for (const sort of ['manufacturer', '-manufacturer', 'manufacturer,-name', '-manufacturer,name']) {
    const whole = mine((await api.get(`/api/asset/equipment?${filter}&sort=${sort}&page[limit]=50`)).body.data).map(
      (r: any) => r.id,
    );
    assert.equal(whole.length, made.length, sort);
    for (const limit of [1, 2, 3, 4]) {
      const paged = mine(await api.all(`/api/asset/equipment?${filter}&sort=${sort}&page[limit]=${limit}`));
      assert.deepEqual(
        paged.map((r) => r.id),
        whole,
        `sort=${sort}, pages of ${limit}: the order of one page, each record once`,
      );
    }
    const values = whole.map((id: string) => made.find((m) => m.id === id)!.manufacturer);
    const firstNull = values.indexOf(null);
    const nulls = values.filter((v) => v === null).length;
    assert.ok(
      values.slice(firstNull, firstNull + nulls).every((v) => v === null),
      `sort=${sort}: the empty ones are together (${values.join(', ')})`,
    );
    const named = values.filter((v): v is string => v !== null);
    const ascending = !sort.startsWith('-');
    for (let i = 1; i < named.length; i++)
      assert.ok(
        ascending ? named[i - 1]! <= named[i]! : named[i - 1]! >= named[i]!,
        `sort=${sort}: ${named.join(', ')}`,
      );
  }
});

test('offsets a client builds itself, and page[limit] given twice (the last wins)', async () => {
  const all = [...observations].sort((a, b) => (a.name < b.name ? -1 : 1));
  for (const [offset, limit] of [
    [0, 10],
    [73, 7],
    [120, 50],
    [49, 2],
  ] as const) {
    const res = await api.get(`/api/log/observation?sort=name&page[offset]=${offset}&page[limit]=${limit}`);
    assert.deepEqual(
      res.body.data.map((r: any) => r.id),
      all.slice(offset, offset + limit).map((o) => o.id),
      `offset ${offset}, limit ${limit}`,
    );
  }
  const twice = await api.get('/api/log/observation?sort=name&page[limit]=50&page[limit]=10');
  assert.equal(twice.body.data.length, 10);
  // farmOS.js appends &page[limit]=<remainder> to links.next when it wants fewer than 50 more.
  const page1 = await api.get('/api/log/observation?sort=name&page[limit]=50');
  const tail = await api.get(`${page1.body.links.next.href}&page[limit]=5`);
  assert.deepEqual(
    tail.body.data.map((r: any) => r.id),
    all.slice(50, 55).map((o) => o.id),
  );
  // links.next of a page of 10 starts at the 11th record.
  const p1 = await api.get('/api/log/observation?sort=name&page[limit]=10');
  const p2 = await api.get(p1.body.links.next.href);
  assert.equal(p2.body.data[0].attributes.name, all[10]!.name);
});

test('sparse fieldsets', async () => {
  const res = await api.get(`/api/log/harvest?fields[log--harvest]=name,status&filter[id]=${idOf.get('h1')}`);
  const r = res.body.data[0];
  assert.deepEqual(Object.keys(r.attributes).sort(), ['name', 'status']);
  assert.deepEqual(r.relationships ?? {}, {});
  assert.equal(r.id, idOf.get('h1'));
  assert.equal(r.type, 'log--harvest');
  assert.ok(r.links.self.href);
  const withRel = await api.get(`/api/log/harvest/${idOf.get('h1')}?fields[log--harvest]=name,asset`);
  assert.deepEqual(Object.keys(withRel.body.data.attributes), ['name']);
  assert.deepEqual(Object.keys(withRel.body.data.relationships), ['asset']);
  // A fieldset for an included type applies to the included resources.
  const inc = await api.get(`/api/log/harvest/${idOf.get('h1')}?include=asset&fields[asset--equipment]=name`);
  assert.deepEqual(Object.keys(inc.body.included[0].attributes), ['name']);
  // A fieldset that leaves out the relationship an include follows still includes its targets, as
  // Drupal resolves includes on the whole entity: the collection, the individual route, and deeper paths.
  const hidden = await api.get(
    `/api/log/harvest?filter[id]=${idOf.get('h1')}&fields[log--harvest]=name&include=asset,quantity.units&fields[quantity--standard]=label`,
  );
  assert.deepEqual(Object.keys(hidden.body.data[0].relationships ?? {}), []);
  assert.deepEqual(hidden.body.included.map((r: any) => r.type).sort(), [
    'asset--equipment',
    'quantity--standard',
    'taxonomy_term--unit',
  ]);
  assert.deepEqual(hidden.body.included.find((r: any) => r.type === 'quantity--standard').relationships ?? {}, {});
  const hiddenOne = await api.get(`/api/log/harvest/${idOf.get('h3')}?fields[log--harvest]=name&include=asset`);
  assert.deepEqual(
    hiddenOne.body.included.map((r: any) => r.id).sort(),
    [idOf.get('tractor'), idOf.get('baler')].sort(),
  );
  // Unknown names are ignored.
  const unknown = await api.get(`/api/log/harvest/${idOf.get('h1')}?fields[log--harvest]=name,nonsense`);
  assert.equal(unknown.status, 200);
  assert.deepEqual(Object.keys(unknown.body.data.attributes), ['name']);
});

test('include at depth 2: each included resource once; includes on individual routes', async () => {
  const res = await api.get('/api/log/harvest?include=asset,quantity.units&sort=name');
  assert.equal(res.status, 200);
  const included = res.body.included as Array<{ type: string; id: string }>;
  const keys = included.map((r) => `${r.type}:${r.id}`);
  assert.equal(new Set(keys).size, keys.length, 'each included resource appears once');
  assert.deepEqual(
    keys.sort(),
    [
      `asset--equipment:${idOf.get('tractor')}`,
      `asset--equipment:${idOf.get('baler')}`,
      `quantity--standard:${idOf.get('q1')}`,
      `quantity--standard:${idOf.get('q2')}`,
      `taxonomy_term--unit:${idOf.get('kg')}`,
      `taxonomy_term--unit:${idOf.get('Bushels')}`,
    ].sort(),
  );
  // Only the intermediate level: include=quantity.units includes the quantities as well.
  const deep = await api.get(`/api/log/harvest?include=quantity.units&filter[id]=${idOf.get('h1')}`);
  assert.deepEqual(deep.body.included.map((r: any) => r.type).sort(), ['quantity--standard', 'taxonomy_term--unit']);
  // Individual route.
  const one = await api.get(`/api/log/harvest/${idOf.get('h3')}?include=asset`);
  assert.equal(one.status, 200);
  assert.deepEqual(one.body.included.map((r: any) => r.id).sort(), [idOf.get('tractor'), idOf.get('baler')].sort());
  // Nothing to include: no included member, or an empty one.
  const none = await api.get(`/api/log/harvest/${idOf.get('h4')}?include=asset`);
  assert.ok(none.body.included === undefined || none.body.included.length === 0);
  // Related and relationship routes take include too.
  const related = await api.get(`/api/log/harvest/${idOf.get('h1')}/quantity?include=units`);
  assert.equal(related.status, 200);
  assert.deepEqual(
    related.body.included.map((r: any) => r.id),
    [idOf.get('kg')],
  );
  const relationship = await api.get(`/api/log/harvest/${idOf.get('h1')}/relationships/quantity?include=quantity`);
  assert.equal(relationship.status, 200);
  assert.deepEqual(
    relationship.body.included?.map((r: any) => r.id),
    [idOf.get('q1')],
  );
});
