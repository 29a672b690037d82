// `tilth import farmos` killed and resumed while the source is written (issue 24): the importer
// is SIGKILLed at random pages SCALE.importKills times while a client creates logs at the source,
// then run to the end; the farm then verifies equal to the source, every record once. With
// TILTH_STRESS=full it also times an uninterrupted import of the farm and a second, unchanged run
// (the import rate and the second run's share of the first: README "Moving from farmOS").
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createTestDatabase, startTestServer, startTestServerAsAdmin, type TestServer } from '../support/server.ts';
import { request } from '../support/http.ts';
import { buildSampleFarm } from '../support/sample-farm.ts';
import { tilthAsync } from '../support/tilth-command.ts';
import { createUser } from '../../runtime/accounts/users.ts';
import { FULL, SCALE, report } from './scale.ts';

let source: TestServer;
let token: string;
let dir: string;

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'tilth-source-'));
  ({ server: source, token } = await startTestServerAsAdmin({
    database: {
      env: { TILTH_DATA_DIR: dir, DATABASE_URL: '' },
      drop: async () => rmSync(dir, { recursive: true, force: true }),
    },
  }));
  await buildSampleFarm(
    source.url,
    token,
    async (name) =>
      (await createUser(source.ctx.db.knex, { name, password: `${name}-password-1`, roles: ['farm_worker'] })).uuid,
    SCALE.importLogs,
  );
});
after(async () => {
  await source?.close();
  rmSync(dir, { recursive: true, force: true });
});

const args = (...extra: string[]) => ['import', 'farmos', '--url', source.url, `--token=${token}`, ...extra];
const events = (stdout: string) =>
  stdout
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l));

test(`SIGKILLed ${SCALE.importKills} time(s) while the source is written, the import run again ends equal to the source, every record once`, async () => {
  const database = await createTestDatabase();
  const target = await startTestServer({ database });
  let writing = true;
  let written = 0;
  const writer = (async () => {
    while (writing) {
      const res = await request(`${source.url}/api/log/activity`, {
        method: 'POST',
        token,
        json: {
          data: { type: 'log--activity', attributes: { name: `Written during the import ${written}`, status: 'done' } },
        },
      });
      assert.equal(res.status, 201);
      written++;
      await new Promise((r) => setTimeout(r, FULL ? 20 : 100));
    }
  })();
  try {
    for (let kill = 0; kill < SCALE.importKills; kill++) {
      // A random page of the run: the progress lines come a page at a time.
      const at = 1 + Math.floor(Math.random() * (FULL ? 60 : 12));
      let seen = 0;
      const running = tilthAsync(args('--json', '--no-verify'), database.env, (text) => {
        seen += (text.match(/"event":"progress"/g) ?? []).length;
        if (seen >= at) running.kill();
      });
      const ended = await running.done;
      assert.ok(ended.signal === 'SIGKILL' || ended.status === 0, ended.stderr);
    }
    writing = false;
    await writer;
    const last = await tilthAsync(args('--json'), database.env).done;
    assert.equal(last.status, 0, last.stdout + last.stderr);
    assert.equal(events(last.stdout).find((e) => e.event === 'verified').differences, 0, last.stdout);
    assert.ok(written > 0);
    const knex = target.ctx.db.knex;
    for (const table of ['asset', 'log', 'taxonomy_term', 'quantity', 'files', 'users']) {
      const uuids = (await knex(table).select('uuid')).map((r: { uuid: string }) => r.uuid);
      assert.equal(new Set(uuids).size, uuids.length, `${table}: no record twice`);
    }
    // Bytes a killed run placed for a file whose record never committed are gone, or taken by the
    // record when it came (at its URI's path): every file on disk has its record.
    const filesDir = join(target.config.dataDir, 'files', 'farm');
    const onDisk = existsSync(filesDir)
      ? readdirSync(filesDir, { recursive: true, withFileTypes: true }).filter((d) => d.isFile()).length
      : 0;
    assert.equal(
      onDisk,
      Number((await knex('files').count({ n: '*' }).first())!.n),
      'one file on disk per file record',
    );
    const here = Number((await knex('log').count({ n: '*' }).first())!.n);
    const there = Number((await source.ctx.db.knex('log').count({ n: '*' }).first())!.n);
    assert.equal(here, there, 'every log, those written during the import too');
  } finally {
    writing = false;
    await writer.catch(() => undefined);
    await target.close();
    await database.drop();
  }
});

test(
  'the import rate, and a second run of an unchanged farm',
  { skip: !FULL && 'figures: npm run stress' },
  async () => {
    const database = await createTestDatabase();
    const target = await startTestServer({ database });
    try {
      const records =
        Number((await source.ctx.db.knex('log').count({ n: '*' }).first())!.n) +
        Number((await source.ctx.db.knex('asset').count({ n: '*' }).first())!.n);
      let started = Date.now();
      const first = await tilthAsync(args('--json', '--no-verify'), database.env).done;
      const firstMs = Date.now() - started;
      assert.equal(first.status, 0, first.stderr);
      started = Date.now();
      const second = await tilthAsync(args('--json', '--no-verify'), database.env).done;
      const secondMs = Date.now() - started;
      const done = events(second.stdout).find((e) => e.event === 'done');
      assert.deepEqual([done.created, done.updated], [0, 0]);
      const importMs = events(first.stdout).find((e) => e.event === 'done').ms;
      report('import-farmos', {
        records,
        firstRunSeconds: firstMs / 1000,
        importSeconds: importMs / 1000,
        recordsPerSecond: Math.round((records * 1000) / importMs),
        secondRunSeconds: secondMs / 1000,
        secondShare: Math.round((secondMs / firstMs) * 100) / 100,
      });
    } finally {
      await target.close();
      await database.drop();
    }
  },
);
