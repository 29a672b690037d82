// Several Tilth processes over one PostgreSQL database and one files folder, behind a round-robin
// proxy (issue 26): what must agree across them lives in the database, and start-up work runs once.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startCluster, adminToken, type Cluster } from '../support/cluster.ts';
import { killUnderLoad } from '../support/kill-under-load.ts';
import knexFactory from 'knex';
import { request, passwordToken } from '../support/http.ts';
import { createTestDatabase, startTestServer, ADMIN } from '../support/server.ts';
import { Api } from '../support/fixtures.ts';

const passwordTokenOf = (url: string) => passwordToken(url, ADMIN.name, ADMIN.password);
import { createUser } from '../../runtime/accounts/users.ts';
import { configIdentifier } from '../../runtime/model/config-entities.ts';

const sqliteOnly = { skip: process.env.DATABASE_URL ? 'the SQLite check' : false };
const postgresOnly = {
  skip: process.env.DATABASE_URL
    ? false
    : 'several processes share a PostgreSQL database only (one SQLite file is one process)',
};

let cluster: Cluster;
let token: string;
before(async () => {
  if (!process.env.DATABASE_URL) return;
  // Started within a few milliseconds of each other on an empty database: the cold start.
  // The limits at their defaults (300 token requests a minute per address, 20 failed passwords per
  // account); the proxy passes X-Forwarded-For on, so a test can speak from an address of its own.
  cluster = await startCluster({
    together: true,
    env: { TILTH_RATE_LIMIT_PER_ADDRESS: '300', TILTH_RATE_LIMIT_PER_USERNAME: '20', TILTH_TRUST_PROXY: '1' },
  });
  token = await adminToken(cluster);
});
after(() => cluster?.close());

test(
  'fifty uploads of one file name through three processes at once: fifty distinct files, each download equal to its upload',
  postgresOnly,
  async () => {
    const bodies = Array.from({ length: 50 }, (_, i) => `sample,ph\n${i},${(6 + i / 100).toFixed(2)}\n`);
    const answers = await Promise.all(
      bodies.map((body) =>
        request(`${cluster.url}/api/log/observation/file`, {
          method: 'POST',
          token,
          body,
          headers: { 'Content-Type': 'application/octet-stream', 'Content-Disposition': 'file; filename="soil.csv"' },
        }),
      ),
    );
    assert.deepEqual(
      answers.map((a) => a.status),
      bodies.map(() => 201),
      answers.find((a) => a.status !== 201)?.text,
    );
    const names = answers.map((a) => a.body.data.attributes.uri.url as string);
    assert.equal(new Set(names).size, 50, 'fifty distinct stored files');
    const downloaded = await Promise.all(
      names.map((url) =>
        fetch(`${cluster.url}${url}`, { headers: { Authorization: `Bearer ${token}` } }).then((r) => r.text()),
      ),
    );
    assert.deepEqual(downloaded, bodies, 'each download equals its upload');
  },
);

test(
  'three processes started at once on an empty database all become healthy, with one administrator and one of each default client',
  postgresOnly,
  async (t) => {
    for (const server of cluster.servers) assert.equal((await fetch(`${server.url}/health`)).status, 200);
    const knex = knexFactory({ client: 'pg', connection: cluster.database.env.DATABASE_URL });
    t.after(() => knex.destroy());
    assert.deepEqual(
      (await knex('users').where('bundle', 'user').select('name')).map((r) => r.name),
      ['admin'],
    );
    assert.deepEqual(
      (await knex('oauth_clients').orderBy('client_id').select('client_id')).map((r) => r.client_id),
      ['farm', 'fieldkit'],
    );
    assert.deepEqual(
      await knex('knex_migrations').groupBy('name').havingRaw('count(*) > 1').select('name'),
      [],
      'each migration applied once',
    );
  },
);

test(
  'three processes started at once on an upgraded farm with pending work: all healthy, one administrator and client of each kind, each rebuild done once',
  postgresOnly,
  async (t) => {
    let tractor = '';
    let field = '';
    const upgraded = await startCluster({
      together: true,
      // The start-up lines are info: the count of them is the proof of "once".
      env: { TILTH_LOG_LEVEL: 'info' },
      // A farm of the release before the change feed, whose upgrade also asks for every asset's
      // locations to be recomputed (as 0005 and 0006 did): a tractor moved to a field.
      async prepare(database) {
        const farm = await startTestServer({ database });
        try {
          const api = new Api(farm.url, await passwordToken(farm.url, ADMIN.name, ADMIN.password));
          const land = await api.create('asset--land', {
            name: 'North',
            land_type: 'field',
            is_location: true,
            is_fixed: true,
            intrinsic_geometry: 'POINT (1 2)',
          });
          const machine = await api.create('asset--equipment', { name: 'Old tractor' });
          await api.create(
            'log--activity',
            { name: 'Park', status: 'done', timestamp: '2024-05-01T08:00:00Z', is_movement: true },
            {
              asset: { data: [{ type: machine.type, id: machine.id }] },
              location: { data: [{ type: land.type, id: land.id }] },
            },
          );
          [tractor, field] = [machine.id, land.id];
          const knex = farm.ctx.db.knex;
          await knex.schema.dropTable('change_feed');
          await knex.schema.dropTable('field_module');
          // 0014 reshaped the feed's table after 0010 made it: neither had run then.
          await knex('knex_migrations').whereIn('name', ['core/0010_sync', 'core/0014_feed_bundles']).delete();
          await knex('tilth_migration_checksums')
            .whereIn('name', ['core/0010_sync', 'core/0014_feed_bundles'])
            .delete();
          await knex('asset_location').delete();
          await knex('tilth_pending_work').insert({ name: 'asset_location' });
        } finally {
          await farm.close();
        }
      },
    });
    t.after(() => upgraded.close());
    for (const server of upgraded.servers) assert.equal((await fetch(`${server.url}/health`)).status, 200);
    const knex = knexFactory({ client: 'pg', connection: upgraded.database.env.DATABASE_URL });
    t.after(() => knex.destroy());
    assert.deepEqual(
      (await knex('users').where('bundle', 'user').select('name')).map((r) => r.name),
      ['admin'],
    );
    assert.deepEqual(
      (await knex('oauth_clients').orderBy('client_id').select('client_id')).map((r) => r.client_id),
      ['farm', 'fieldkit'],
    );
    assert.deepEqual(
      (await knex('knex_migrations').where('name', 'core/0010_sync')).length,
      1,
      'the upgrade applied once',
    );
    // Once: one process announces each piece of work, with the whole farm's count; the others found it done.
    const lines = upgraded.servers.flatMap((s) => s.output().split('\n'));
    assert.deepEqual(
      lines
        .filter((l) => l.includes('Computed the locations of'))
        .map((l) => /Computed the locations of (\d+) asset/.exec(l)![1]),
      ['2'],
    );
    // Every record saved before the upgrade is in the feed once: the two assets from the rebuild
    // (their computed location is part of them), the rest (the log, the administrator) from the fill.
    assert.deepEqual(
      (await knex('change_feed').orderBy(['entity_type', 'bundle']).select('entity_type', 'bundle')).map(
        (r) => `${r.entity_type}--${r.bundle}`,
      ),
      ['asset--equipment', 'asset--land', 'log--activity', 'user--user'],
    );
    assert.deepEqual(
      lines.filter((l) => l.includes('record(s) in the change feed')).map((l) => /Listed (\d+) record/.exec(l)![1]),
      ['2'],
    );
    assert.deepEqual(await knex('tilth_pending_work').select('name'), [], 'no work left pending');
    // What a user sees: the tractor is in the field again.
    const api = new Api(upgraded.url, await adminToken(upgraded));
    const located = await api.get(`/api/asset/equipment/${tractor}`);
    assert.deepEqual(
      located.body.data.relationships.location.data.map((r: { id: string }) => r.id),
      [field],
    );
  },
);

test(
  'a second server over one SQLite database is refused, saying that it is unsupported and what to use instead',
  sqliteOnly,
  async (t) => {
    const database = await createTestDatabase();
    t.after(() => database.drop());
    const first = await startTestServer({ database });
    t.after(() => first.close());
    await assert.rejects(
      startTestServer({ database }),
      /Another Tilth process is already serving the SQLite database in .*not supported.*PostgreSQL/s,
    );
    // The first keeps serving, and once it stops the directory can be served again.
    assert.equal((await fetch(`${first.url}/health`)).status, 200);
    await first.close();
    const again = await startTestServer({ database });
    await again.close();
  },
);

/** How many answers had each status, e.g. { 400: 20, 429: 40 }. */
function tally(statuses: number[]): Record<number, number> {
  const out: Record<number, number> = {};
  for (const s of statuses) out[s] = (out[s] ?? 0) + 1;
  return out;
}

const tokenRequest = (form: Record<string, string>, from: string) =>
  fetch(`${cluster.url}/oauth/token`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded', 'X-Forwarded-For': from },
    body: new URLSearchParams(form),
  });

test(
  'the address limit holds across processes: 400 token requests spread over three processes, exactly 300 answered',
  postgresOnly,
  async () => {
    const statuses = await Promise.all(
      // An unknown client: refused before any password is hashed, but counted against the address all the same.
      Array.from({ length: 400 }, (_, i) =>
        tokenRequest(
          { grant_type: 'password', client_id: 'no-such-client', username: `nobody-${i}`, password: 'x' },
          '203.0.113.7',
        ).then((r) => r.status),
      ),
    );
    assert.equal(statuses.filter((s) => s !== 429).length, 300, JSON.stringify(tally(statuses)));
  },
);

test(
  'the account limit holds across processes: 60 wrong passwords at once, at most 20 checked',
  postgresOnly,
  async () => {
    const answers = await Promise.all(
      Array.from({ length: 60 }, (_, i) =>
        tokenRequest(
          { grant_type: 'password', client_id: 'farm', username: 'admin', password: `wrong-${i}` },
          `198.51.100.${i}`,
        ).then(async (r) => ({ status: r.status, error: ((await r.json()) as { error?: string }).error })),
      ),
    );
    const checked = answers.filter((a) => a.error === 'invalid_grant').length;
    assert.ok(
      checked <= 20 && checked > 0,
      `${checked} real checks: ${JSON.stringify(tally(answers.map((a) => a.status)))}`,
    );
    // The rest wait (429), or, when a process is busy hashing, are told to retry (503) uncounted.
    assert.deepEqual(
      answers.filter((a) => a.error !== 'invalid_grant' && a.status !== 429 && a.status !== 503),
      [],
    );
  },
);

test(
  "the owner's own address keeps its allowance on every process while a guesser spends the account's",
  postgresOnly,
  async (t) => {
    const knex = knexFactory({ client: 'pg', connection: cluster.database.env.DATABASE_URL });
    t.after(() => knex.destroy());
    await createUser(knex, { name: 'olga', password: 'olga-password', roles: ['farm_worker'] });
    const signIn = (server: number, password: string, from: string) =>
      fetch(`${cluster.servers[server]!.url}/oauth/token`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/x-www-form-urlencoded', 'X-Forwarded-For': from },
        body: new URLSearchParams({ grant_type: 'password', client_id: 'farm', username: 'olga', password }),
      }).then((r) => r.status);
    assert.equal(
      await signIn(0, 'olga-password', '192.0.2.50'),
      200,
      'the owner signs in from home through one process',
    );
    // A guesser elsewhere spends the account's shared allowance (20), through all three.
    const guesses = await Promise.all(
      Array.from({ length: 24 }, (_, i) => signIn(i % 3, `guess-${i}`, '203.0.113.99')),
    );
    assert.ok(guesses.includes(429), JSON.stringify(tally(guesses)));
    // From home the owner still signs in, whichever process answers.
    assert.deepEqual(
      [await signIn(1, 'olga-password', '192.0.2.50'), await signIn(2, 'olga-password', '192.0.2.50')],
      [200, 200],
    );
  },
);

test(
  'a revoked token, a blocked user and a changed role are refused by every process at once',
  postgresOnly,
  async (t) => {
    // On PostgreSQL no process keeps principals: every request reads the token, the account and its
    // roles afresh (storage/change-cache.ts), so a change through one process holds in all at once.
    const knex = knexFactory({ client: 'pg', connection: cluster.database.env.DATABASE_URL });
    t.after(() => knex.destroy());
    const everywhere = async (
      accessToken: string,
      path = '/api/log/activity',
      init: RequestInit & { json?: unknown } = {},
    ) =>
      Promise.all(
        cluster.servers.map((s) => request(`${s.url}${path}`, { token: accessToken, ...init }).then((r) => r.status)),
      );
    const signIn = async (name: string) =>
      (await (
        await tokenRequest(
          { grant_type: 'password', client_id: 'farm', username: name, password: `${name}-password` },
          '192.0.2.1',
        )
      ).json()) as { access_token: string };

    // Revocation, through the first process.
    await createUser(knex, { name: 'rhea', password: 'rhea-password', roles: ['farm_manager'] });
    const revoked = (await signIn('rhea')).access_token;
    assert.deepEqual(await everywhere(revoked), [200, 200, 200]);
    const revoke = await fetch(`${cluster.servers[0]!.url}/oauth/revoke`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token: revoked, client_id: 'farm' }),
    });
    assert.equal(revoke.status, 200);
    assert.deepEqual(await everywhere(revoked), [401, 401, 401]);

    // A blocked user, through the second.
    const blockee = await createUser(knex, { name: 'bram', password: 'bram-password', roles: ['farm_manager'] });
    const blocked = (await signIn('bram')).access_token;
    assert.deepEqual(await everywhere(blocked), [200, 200, 200]);
    const block = await request(`${cluster.servers[1]!.url}/api/user/user/${blockee.uuid}`, {
      method: 'PATCH',
      token,
      json: { data: { type: 'user--user', id: blockee.uuid, attributes: { status: false } } },
    });
    assert.equal(block.status, 200, block.text);
    assert.deepEqual(await everywhere(blocked), [401, 401, 401]);

    // A manager made a viewer, through the third: creating a log is refused everywhere.
    const demoted = await createUser(knex, { name: 'dana', password: 'dana-password', roles: ['farm_manager'] });
    const dana = (await signIn('dana')).access_token;
    const create = { method: 'POST', json: { data: { type: 'log--activity', attributes: { name: 'Mowing' } } } };
    assert.deepEqual(await everywhere(dana, '/api/log/activity', create), [201, 201, 201]);
    const demote = await request(`${cluster.servers[2]!.url}/api/user/user/${demoted.uuid}`, {
      method: 'PATCH',
      token,
      json: {
        data: {
          type: 'user--user',
          id: demoted.uuid,
          relationships: { roles: { data: [configIdentifier('user_role', 'farm_viewer')] } },
        },
      },
    });
    assert.equal(demote.status, 200, demote.text);
    assert.deepEqual(await everywhere(dana, '/api/log/activity', create), [403, 403, 403]);
    assert.deepEqual(await everywhere(dana), [200, 200, 200], 'still a viewer');
  },
);

test(
  'a process whose base URL, modules or farm name differ from the running ones refuses to start, naming the setting',
  postgresOnly,
  async () => {
    await Promise.all(
      [
        ['TILTH_FARM_NAME', 'Another Farm'],
        ['TILTH_BASE_URL', 'http://127.0.0.1:9'],
        ['TILTH_MODULES', 'ledger'],
      ].map(([setting, value]) =>
        assert.rejects(
          cluster.start({ [setting!]: value! }),
          (error: Error) => error.message.includes(setting!) && error.message.includes('differ'),
          `${setting} differing`,
        ),
      ),
    );
    // The same settings start, and serve beside the others.
    const fourth = await cluster.start();
    assert.equal((await fetch(`${fourth.url}/health`)).status, 200);
    await fourth.stop();
  },
);

test('a process older than the database it serves (another migrated it) answers 503, never 500, until it is restarted', async (t) => {
  const server = await startTestServer();
  t.after(() => server.close());
  const adminToken = await passwordTokenOf(server.url);
  const log = await request(`${server.url}/api/log/activity`, {
    method: 'POST',
    token: adminToken,
    json: { data: { type: 'log--activity', attributes: { name: 'Before the upgrade' } } },
  });
  assert.equal(log.status, 201, log.text);
  // What a newer release's migration might do, applied by a process of that release: record
  // itself, and change a column this process's code reads.
  const knex = server.ctx.db.knex;
  await knex('knex_migrations').insert({ name: 'core/9999_from_the_future', batch: 99, migration_time: new Date() });
  await knex.schema.alterTable('log', (table) => table.renameColumn('name', 'title'));
  const health = await fetch(`${server.url}/health`);
  assert.equal(health.status, 503);
  assert.equal(((await health.json()) as { migrations: string }).migrations, 'ahead');
  const after = await request(`${server.url}/api/log/activity`, { token: adminToken });
  assert.equal(after.status, 503, after.text);
  assert.match(after.body.errors[0].detail, /newer/);
  assert.ok(after.headers.get('retry-after'));
});

test('on PostgreSQL, rate-limit counters whose window ended are deleted', postgresOnly, async (t) => {
  const server = await startTestServer({ env: { TILTH_RATE_LIMIT_WINDOW: '1', TILTH_TRUST_PROXY: '1' } });
  t.after(() => server.close());
  const knex = server.ctx.db.knex;
  const from = (address: string) =>
    fetch(`${server.url}/oauth/token`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded', 'X-Forwarded-For': address },
      body: 'grant_type=password&client_id=no-such-client',
    });
  for (let i = 0; i < 5; i++) await from(`192.0.2.${i}`);
  assert.ok(Number((await knex('tilth_rate_limits').count({ n: '*' }))[0]!.n) >= 5);
  await new Promise((resolve) => setTimeout(resolve, 2100));
  await from('192.0.2.200');
  for (let tries = 0; tries < 50 && Number((await knex('tilth_rate_limits').count({ n: '*' }))[0]!.n) > 1; tries++)
    await new Promise((resolve) => setTimeout(resolve, 100));
  assert.deepEqual(
    (await knex('tilth_rate_limits').select('key')).map((r) => r.key),
    ['address:192.0.2.200'],
    'only the live window is left',
  );
});

test(
  '16 writers through the proxy while a process is killed and restarted: nothing acknowledged lost or doubled, no 5xx',
  postgresOnly,
  async () => {
    // Last: it replaces one of the processes. The long version is in test/stress/processes.test.ts.
    const figures = await killUnderLoad(cluster, { clients: 16, seconds: 0, killEvery: 0 });
    assert.ok(figures.creates! > 0);
  },
);
