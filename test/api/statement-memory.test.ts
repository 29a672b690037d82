// What the server keeps of SQLite's prepared statements (issue 41 Part F, MEM). Statements whose
// SQL text grew with the ids they named (an asset's placements rebuilt over its logs: `IN (?, ?,
// …)`, a multi-row INSERT) made a new text for each count; kept without a bound on their text, a
// stream of writes to the same animals (each history a log longer every time) filled the server's
// memory with them. Now the cache is bounded, and the placements' statements are fixed texts (ids
// and rows bound as one parameter), so a growing history makes no new statement at all. An
// operator sees what is kept in /metrics.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServerAsAdmin, type TestServer } from '../support/server.ts';
import { request } from '../support/http.ts';
import { Api, ref } from '../support/fixtures.ts';
import { KEPT_SQL_CHARS } from '../../runtime/storage/database.ts';

const sqliteOnly = {
  skip: process.env.DATABASE_URL
    ? 'SQLite keeps its statements per connection; on PostgreSQL only the first 300 texts are named (storage/sql.ts)'
    : false,
};

/** The statements kept and their SQL text, as /metrics shows them to an operator. */
async function kept(server: TestServer): Promise<{ statements: number; chars: number }> {
  const res = await request(`${server.url}/metrics`, { headers: { Accept: 'text/plain' } });
  assert.equal(res.status, 200, res.text);
  const statements = /^tilth_sqlite_statements_kept (\d+)$/m.exec(res.text);
  const chars = /^tilth_sqlite_statements_kept_sql_chars (\d+)$/m.exec(res.text);
  assert.ok(statements && chars, 'the metrics show the statements kept');
  return { statements: Number(statements[1]), chars: Number(chars[1]) };
}

/** Four animals and three fields: a herd to move. */
async function herdAndFields(api: Api) {
  const herd = [];
  for (let i = 0; i < 4; i++)
    herd.push(
      await api.create(
        'asset--animal',
        { name: `Cow ${i}` },
        { animal_type: { data: ref(await api.create('taxonomy_term--animal_type', { name: `Breed ${i}` })) } },
      ),
    );
  const fields = [];
  for (let i = 0; i < 3; i++)
    fields.push(await api.create('asset--land', { name: `Field ${i}`, land_type: 'field', is_location: true }));
  return { herd, fields };
}

test('the prepared statements kept stay within their bound while an animal’s history grows', sqliteOnly, async () => {
  const { server, token } = await startTestServerAsAdmin({ env: { TILTH_METRICS: 'public' } });
  try {
    const api = new Api(server.url, token);
    const { herd, fields } = await herdAndFields(api);
    // 160 movements of four animals: unbounded, with the placements' texts as they were (built by
    // Knex per history length), about 370 statements and 3.6 million characters of SQL.
    const moves = 160;
    for (let i = 0; i < moves; i++) {
      await api.create(
        'log--activity',
        {
          name: `Move ${i}`,
          status: 'done',
          timestamp: new Date(Date.UTC(2024, 0, 1) + i * 3_600_000).toISOString(),
          is_movement: true,
        },
        { asset: { data: herd.map(ref) }, location: { data: [ref(fields[i % fields.length])] } },
      );
    }
    const now = await kept(server);
    // The writer's connection and the reader's, each at most KEPT_SQL_CHARS of text.
    assert.ok(
      now.chars <= 2 * KEPT_SQL_CHARS,
      `the statements kept hold ${now.chars} characters of SQL (bound ${2 * KEPT_SQL_CHARS})`,
    );
    // Still a working server: the last movement placed the herd.
    const cow = (await api.get(`/api/asset/animal/${herd[0].id}`)).body.data;
    assert.equal(cow.relationships.location.data[0].id, fields[(moves - 1) % fields.length].id);
  } finally {
    await server.close();
  }
});

test(
  'an animal’s growing history makes no new statement texts: each move is prepared from the same ones',
  sqliteOnly,
  async () => {
    const { server, token } = await startTestServerAsAdmin({ env: { TILTH_METRICS: 'public' } });
    try {
      const api = new Api(server.url, token);
      const { herd, fields } = await herdAndFields(api);
      const move = async (i: number) =>
        api.create(
          'log--activity',
          {
            name: `Move ${i}`,
            status: 'done',
            timestamp: new Date(Date.UTC(2024, 0, 1) + i * 3_600_000).toISOString(),
            is_movement: true,
          },
          { asset: { data: herd.map(ref) }, location: { data: [ref(fields[i % fields.length])] } },
        );
      // The first moves prepare what every move needs (one asset's and several assets' forms alike).
      for (let i = 0; i < 6; i++) await move(i);
      const before = await kept(server);
      // Each of these lengthens every cow's history by one movement: the placements are rebuilt over
      // 7, 8, … 36 logs. Their ids and rows are bound as one parameter each, so no text is new.
      for (let i = 6; i < 36; i++) await move(i);
      const after = await kept(server);
      assert.deepEqual(after, before, 'the same statements, the same SQL text, after thirty more movements');
      // And the placements are right: the herd is where the last movement put it, and its history is whole.
      const cow = (await api.get(`/api/asset/animal/${herd[0].id}`)).body.data;
      assert.equal(cow.relationships.location.data[0].id, fields[35 % fields.length].id);
      const inLast = await api.get(`/api/asset/animal?filter[location.id]=${fields[35 % fields.length].id}`);
      assert.deepEqual(inLast.body.data.map((a: { id: string }) => a.id).sort(), herd.map((a) => a.id).sort());
    } finally {
      await server.close();
    }
  },
);
