// `=`, `<>`, `IN` and `NOT IN` on string fields ignore case, as in farmOS (issue 41 B.1): Drupal's
// entity query compares a property that is not case-sensitive (every `string` field's default)
// with LIKE/ILIKE (Condition::translateCondition). A "find or create the term" script that asks
// for `filter[name]=tomato` finds "Tomato" instead of making a duplicate. Through relationships too.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, ADMIN, type TestServer } from '../support/server.ts';
import { passwordToken } from '../support/http.ts';
import { Api, ref } from '../support/fixtures.ts';

let server: TestServer;
let api: Api;
let tomato: any;

before(async () => {
  server = await startTestServer();
  api = new Api(server.url, await passwordToken(server.url, ADMIN.name, ADMIN.password));
  tomato = await api.create('taxonomy_term--plant_type', { name: 'Tomato' });
  const bean = await api.create('taxonomy_term--plant_type', { name: 'Runner BEAN' });
  await api.create('asset--plant', { name: 'Cherry tomatoes' }, { plant_type: { data: [ref(tomato)] } });
  await api.create('asset--plant', { name: 'Beans by the fence' }, { plant_type: { data: [ref(bean)] } });
});
after(() => server.close());

const names = async (path: string) => {
  const res = await api.get(path);
  assert.equal(res.status, 200, res.text.slice(0, 300));
  return res.body.data.map((r: any) => r.attributes.name).sort();
};

test('= and <> on a name ignore case', async () => {
  assert.deepEqual(await names('/api/taxonomy_term/plant_type?filter[name]=tomato'), ['Tomato']);
  assert.deepEqual(await names('/api/taxonomy_term/plant_type?filter[name]=TOMATO'), ['Tomato']);
  assert.deepEqual(
    await names(
      '/api/taxonomy_term/plant_type?filter[n][condition][path]=name&filter[n][condition][operator]=%3C%3E&filter[n][condition][value]=tomato',
    ),
    ['Runner BEAN'],
  );
});

test('IN and NOT IN on a name ignore case', async () => {
  const list =
    'filter[n][condition][path]=name&filter[n][condition][value][]=TOMATO&filter[n][condition][value][]=runner%20bean';
  assert.deepEqual(await names(`/api/taxonomy_term/plant_type?${list}&filter[n][condition][operator]=IN`), [
    'Runner BEAN',
    'Tomato',
  ]);
  assert.deepEqual(
    await names(
      `/api/taxonomy_term/plant_type?${list.replace('runner%20bean', 'x')}&filter[n][condition][operator]=NOT%20IN`,
    ),
    ['Runner BEAN'],
  );
});

test('through a relationship: plant_type.name of a plant ignores case', async () => {
  assert.deepEqual(await names('/api/asset/plant?filter[plant_type.name]=tomato'), ['Cherry tomatoes']);
  assert.deepEqual(await names('/api/asset/plant?filter[plant_type.name]=runner%20bean'), ['Beans by the fence']);
});

test('other operators and fields are unchanged: STARTS_WITH as before, a list value is a key compared exactly', async () => {
  assert.deepEqual(
    await names(
      '/api/taxonomy_term/plant_type?filter[n][condition][path]=name&filter[n][condition][operator]=STARTS_WITH&filter[n][condition][value]=tom',
    ),
    ['Tomato'],
  );
  assert.deepEqual(await names('/api/asset/plant?filter[status]=ACTIVE'), [], 'list values are keys, compared exactly');
});

test(
  'the lookup of a name without case is indexed (SQLite: its plan searches the index)',
  { skip: process.env.DATABASE_URL ? 'SQLite plan' : false },
  async () => {
    const knex = server.ctx.db.knex;
    const seen: Array<{ sql: string; bindings: unknown[] }> = [];
    const listener = (q: { sql: string; bindings?: unknown[] }) =>
      seen.push({ sql: q.sql, bindings: q.bindings ?? [] });
    knex.on('query', listener);
    try {
      await api.get('/api/taxonomy_term/plant_type?filter[name]=tomato');
    } finally {
      knex.removeListener('query', listener);
    }
    const main = seen.find((q) => /from [`"]taxonomy_term[`"] as [`"]e[`"]/i.test(q.sql) && /nocase/i.test(q.sql));
    assert.ok(main, seen.map((q) => q.sql).join('\n'));
    const plan = (
      (await knex.raw(`EXPLAIN QUERY PLAN ${main.sql}`, main.bindings as any[])) as Array<{ detail: string }>
    )
      .map((r) => r.detail)
      .join(' | ');
    assert.match(plan, /USING (COVERING )?INDEX taxonomy_term_bundle_name_ci_id_idx/, plan);
  },
);
