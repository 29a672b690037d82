// Concurrent writers against a server in its own process (trust issue, part B 1): clients mixing
// POST, PATCH and DELETE on logs, assets and quantities lose nothing, duplicate nothing and never
// see a 5xx; the records left are exactly the acknowledged creates minus the acknowledged
// deletes, each with its last acknowledged name. Two clients PATCHing different fields of one
// record keep both of their last values.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createTestDatabase } from '../support/server.ts';
import { startChildServerAsAdmin, type ChildServer } from '../support/child-server.ts';
import { request } from '../support/http.ts';
import { SCALE, report } from './scale.ts';

const KINDS = [
  {
    type: 'log--activity',
    path: 'log/activity',
    attributes: (name: string) => ({ name, status: 'done', timestamp: '2024-05-01T08:00:00Z' }),
  },
  { type: 'asset--equipment', path: 'asset/equipment', attributes: (name: string) => ({ name }) },
  {
    type: 'quantity--standard',
    path: 'quantity/standard',
    attributes: (name: string) => ({ label: name, measure: 'weight', value: { decimal: '1.5' } }),
  },
] as const;
type Kind = (typeof KINDS)[number];
const nameOf = (kind: Kind, attributes: Record<string, any>): string =>
  kind.type.startsWith('quantity') ? attributes.label : attributes.name;

let database: Awaited<ReturnType<typeof createTestDatabase>>;
let server: ChildServer;
let token: string;

before(async () => ({ database, server, token } = await startChildServerAsAdmin()));
after(async () => {
  await server?.stop();
  await database?.drop();
});

/** Every record of a collection, following links.next. */
async function all(path: string): Promise<any[]> {
  const out: any[] = [];
  let next: string | undefined = `${server.url}/api/${path}`;
  while (next) {
    const page: any = await request(next, { token });
    assert.equal(page.status, 200, page.text);
    out.push(...page.body.data);
    next = page.body.links.next?.href;
  }
  return out;
}

test(`${SCALE.writers.clients} clients writing for ${SCALE.writers.seconds} s: nothing lost, nothing duplicated, no 5xx`, async () => {
  // What the server acknowledged, per kind: uuid → last acknowledged name (deleted ones removed).
  const live = new Map<Kind, Map<string, string>>(KINDS.map((k) => [k, new Map()]));
  const counts = { create: 0, patch: 0, delete: 0, serverErrors: 0, unexpected: [] as string[] };
  const deadline = Date.now() + SCALE.writers.seconds * 1000;
  let seed = 1;
  const random = () => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;

  async function client(c: number): Promise<void> {
    const mine: Array<{ kind: Kind; id: string }> = [];
    for (let n = 0; Date.now() < deadline; n++) {
      const r = random();
      if (mine.length < 3 || r < 0.5) {
        const kind = KINDS[n % KINDS.length]!;
        const name = `c${c}-n${n}`;
        const res = await request(`${server.url}/api/${kind.path}`, {
          method: 'POST',
          token,
          json: { data: { type: kind.type, attributes: kind.attributes(name) } },
        });
        if (res.status >= 500) counts.serverErrors++;
        else if (res.status !== 201) counts.unexpected.push(`POST ${res.status} ${res.text.slice(0, 200)}`);
        else {
          counts.create++;
          live.get(kind)!.set(res.body.data.id, name);
          mine.push({ kind, id: res.body.data.id });
        }
      } else if (r < 0.8) {
        const { kind, id } = mine[Math.floor(random() * mine.length)]!;
        const name = `c${c}-n${n}-renamed`;
        const res = await request(`${server.url}/api/${kind.path}/${id}`, {
          method: 'PATCH',
          token,
          json: { data: { type: kind.type, id, attributes: kind.attributes(name) } },
        });
        if (res.status >= 500) counts.serverErrors++;
        else if (res.status !== 200) counts.unexpected.push(`PATCH ${res.status} ${res.text.slice(0, 200)}`);
        else {
          counts.patch++;
          live.get(kind)!.set(id, name);
        }
      } else {
        const [{ kind, id }] = mine.splice(Math.floor(random() * mine.length), 1);
        const res = await request(`${server.url}/api/${kind.path}/${id}`, { method: 'DELETE', token });
        if (res.status >= 500) counts.serverErrors++;
        else if (res.status !== 204) counts.unexpected.push(`DELETE ${res.status} ${res.text.slice(0, 200)}`);
        else {
          counts.delete++;
          live.get(kind)!.delete(id);
        }
      }
    }
  }

  const started = Date.now();
  await Promise.all(Array.from({ length: SCALE.writers.clients }, (_, c) => client(c)));
  const seconds = (Date.now() - started) / 1000;
  assert.equal(counts.serverErrors, 0, 'no 5xx');
  assert.deepEqual(counts.unexpected, [], 'every write was acknowledged');

  let lost = 0;
  let duplicated = 0;
  let stale = 0;
  for (const kind of KINDS) {
    const served = await all(kind.path);
    const expected = live.get(kind)!;
    const seen = new Set<string>();
    for (const record of served) {
      if (seen.has(record.id)) duplicated++;
      seen.add(record.id);
      if (!expected.has(record.id)) duplicated++;
      else if (nameOf(kind, record.attributes) !== expected.get(record.id)) stale++;
    }
    for (const id of expected.keys()) if (!seen.has(id)) lost++;
    assert.equal(served.length, expected.size, `${kind.type}: served records = acknowledged creates − deletes`);
  }
  report('concurrent writers', {
    clients: SCALE.writers.clients,
    seconds: Math.round(seconds),
    ...counts,
    unexpected: counts.unexpected.length,
    writesPerSecond: Math.round((counts.create + counts.patch + counts.delete) / seconds),
    lost,
    duplicated,
    stale,
  });
  assert.equal(lost, 0, 'no acknowledged create is lost');
  assert.equal(duplicated, 0, 'no record appears twice or unasked');
  assert.equal(stale, 0, 'every record has its last acknowledged name');
});

test(`two clients PATCHing different fields of one record ${SCALE.fieldRace} times each keep both last values`, async () => {
  const created = await request(`${server.url}/api/log/observation`, {
    method: 'POST',
    token,
    json: { data: { type: 'log--observation', attributes: { name: 'Race', status: 'done' } } },
  });
  assert.equal(created.status, 201, created.text);
  const id = created.body.data.id;
  const patch = (attributes: Record<string, unknown>) =>
    request(`${server.url}/api/log/observation/${id}`, {
      method: 'PATCH',
      token,
      json: { data: { type: 'log--observation', id, attributes } },
    });
  const racer = async (attributes: (i: number) => Record<string, unknown>) => {
    for (let i = 0; i < SCALE.fieldRace; i++) {
      const res = await patch(attributes(i));
      assert.equal(res.status, 200, res.text);
    }
  };
  await Promise.all([racer((i) => ({ name: `name ${i}` })), racer((i) => ({ notes: { value: `notes ${i}` } }))]);
  const final = await request(`${server.url}/api/log/observation/${id}`, { token });
  assert.equal(final.body.data.attributes.name, `name ${SCALE.fieldRace - 1}`);
  assert.equal(final.body.data.attributes.notes.value, `notes ${SCALE.fieldRace - 1}`);
  report('field race', { patchesPerClient: SCALE.fieldRace, bothLastValuesKept: true });
});
