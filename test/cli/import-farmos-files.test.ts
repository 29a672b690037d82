// `tilth import farmos` and what a source says of its files and readings (issue 37): a file keeps
// the path of its URI, so links to it still work; a hostile source's file name, URI or type never
// reaches past the farm's file store or breaks a download; and a source that stalls while its
// readings are read holds none of the farm's writes meanwhile.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import knexFactory from 'knex';
import { startTestServer, ADMIN, createTestDatabase } from '../support/server.ts';
import { request, passwordToken } from '../support/http.ts';
import {
  startFarmosFixture,
  FIXTURE,
  FIXTURE_CLIENT,
  FIXTURE_STREAM,
  MAP_BYTES,
  type FixtureOptions,
} from '../support/farmos-fixture.ts';
import { tilthAsync } from '../support/tilth-command.ts';

const sha256 = (bytes: Buffer | string) => createHash('sha256').update(bytes).digest('hex');

/** A farmOS source with its map file's attributes edited, imported into a new farm served meanwhile; `prepare` runs on the farm's data folder first. */
async function importInto(
  edit: Record<string, unknown>,
  prepare: (dataDir: string) => void = () => {},
  options: FixtureOptions = {},
) {
  const fixture = await startFarmosFixture(options);
  fixture.edit(FIXTURE.mapFile, edit);
  const db = await createTestDatabase({ migrated: true });
  prepare(db.env.TILTH_DATA_DIR!);
  const target = await startTestServer({ database: db });
  const token = await passwordToken(target.url, ADMIN.name, ADMIN.password);
  const run = tilthAsync(
    [
      'import',
      'farmos',
      '--url',
      fixture.url,
      '--client-id',
      FIXTURE_CLIENT.id,
      '--client-secret',
      FIXTURE_CLIENT.secret,
      '--retries',
      '1',
      '--no-verify',
    ],
    db.env,
  );
  return {
    fixture,
    target,
    token,
    db,
    run,
    file: async () => (await request(`${target.url}/api/file/file/${FIXTURE.mapFile}`, { token })).body.data,
    download: (href: string) => fetch(new URL(href, target.url), { headers: { Authorization: `Bearer ${token}` } }),
    close: async () => {
      await target.close();
      await fixture.close();
    },
  };
}

test("a file keeps the path of its source's URI; when that path is taken here it goes under farm/file/ and the run says so", async () => {
  const uri = { value: 'private://farm/log/2026-11/soil test.csv', url: '/system/files/2021-06/map.txt' };
  const free = await importInto({ uri });
  try {
    const done = await free.run.done;
    const file = await free.file();
    assert.equal(file.attributes.uri.value, 'private://farm/log/2026-11/soil test.csv', done.stdout);
    assert.match(file.attributes.uri.url, /\/system\/files\/farm\/log\/2026-11\/soil%20test\.csv$/);
    const res = await free.download(file.attributes.uri.url);
    assert.equal(res.status, 200);
    assert.equal(sha256(Buffer.from(await res.arrayBuffer())), sha256(MAP_BYTES));
  } finally {
    await free.close();
  }

  // Another file is at that path here already: it is left alone, and the imported one goes under farm/file/.
  const theirs = 'a local file that happens to share the path\n';
  const taken = await importInto({ uri }, (dataDir) => {
    const at = join(dataDir, 'files', 'farm', 'log', '2026-11', 'soil test.csv');
    mkdirSync(dirname(at), { recursive: true });
    writeFileSync(at, theirs);
  });
  try {
    const done = await taken.run.done;
    const file = await taken.file();
    assert.match(file.attributes.uri.value, /^private:\/\/farm\/file\/\d{4}-\d\d\/map\.txt$/);
    assert.match(
      done.stdout + done.stderr,
      new RegExp(
        `Stored file--file ${FIXTURE.mapFile} at private://farm/file/\\d{4}-\\d\\d/map\\.txt: private://farm/log/2026-11/soil test\\.csv is taken here`,
      ),
    );
    assert.equal(
      readFileSync(join(taken.db.env.TILTH_DATA_DIR!, 'files', 'farm', 'log', '2026-11', 'soil test.csv'), 'utf8'),
      theirs,
      'the file already there is untouched',
    );
    assert.equal(
      sha256(Buffer.from(await (await taken.download(file.attributes.uri.url)).arrayBuffer())),
      sha256(MAP_BYTES),
    );
  } finally {
    await taken.close();
  }

  // The same bytes at the path, with no record: what a run killed before its commit left. The path is kept.
  const left = await importInto({ uri }, (dataDir) => {
    const at = join(dataDir, 'files', 'farm', 'log', '2026-11', 'soil test.csv');
    mkdirSync(dirname(at), { recursive: true });
    writeFileSync(at, MAP_BYTES);
  });
  try {
    const done = await left.run.done;
    assert.equal((await left.file()).attributes.uri.value, 'private://farm/log/2026-11/soil test.csv', done.stdout);
  } finally {
    await left.close();
  }
});

test("a hostile source's file name, URI and type: nothing is written outside the file store, and the file downloads", async () => {
  const outside = mkdtempSync(join(tmpdir(), 'tilth-outside-'));
  const climb = '../'.repeat(30);
  const source = await importInto({
    filename: `${climb}${outside.slice(1)}/evil.sh`,
    uri: { value: `private://${climb}${outside.slice(1)}/evil-uri.sh`, url: '/system/files/2021-06/map.txt' },
    filemime: 'text/plain\r\nSet-Cookie: session=stolen',
  });
  try {
    const done = await source.run.done;
    assert.deepEqual(readdirSync(outside), [], `nothing outside the data folder\n${done.stdout}${done.stderr}`);
    const file = await source.file();
    assert.equal(file.attributes.filename, 'evil.sh', 'the name reduced to its base name, as an upload is');
    assert.match(file.attributes.uri.value, /^private:\/\/farm\/file\/\d{4}-\d\d\/evil\.sh$/);
    assert.match(
      done.stdout + done.stderr,
      new RegExp(
        `Stored file--file ${FIXTURE.mapFile} at private://farm/file/.*is not a path this farm keeps files at`,
      ),
    );
    assert.equal(file.attributes.filemime, 'application/octet-stream', "a type that is not one is the name's");
    const res = await source.download(file.attributes.uri.url);
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('set-cookie'), null);
    assert.equal(sha256(Buffer.from(await res.arrayBuffer())), sha256(MAP_BYTES));

    // A type stored unchecked by an earlier import is served as the name's, not as a 500.
    const knex = knexFactory(
      source.db.env.DATABASE_URL
        ? { client: 'pg', connection: source.db.env.DATABASE_URL }
        : {
            client: 'better-sqlite3',
            connection: { filename: join(source.db.env.TILTH_DATA_DIR!, 'tilth.sqlite') },
            useNullAsDefault: true,
          },
    );
    try {
      await knex('files').where('uuid', FIXTURE.mapFile).update({ filemime: 'text/plain\r\nX-Evil: 1' });
    } finally {
      await knex.destroy();
    }
    const again = await source.download(file.attributes.uri.url);
    assert.equal(again.status, 200);
    assert.equal(again.headers.get('content-type'), 'application/octet-stream');
    assert.equal(again.headers.get('x-evil'), null);
  } finally {
    await source.close();
    rmSync(outside, { recursive: true, force: true });
  }
});

test('a source that stalls while its readings are read holds none of the farm: writes are answered and listed in the change feed meanwhile', async () => {
  const values: Array<[number, number]> = Array.from({ length: 30 }, (_, i) => [1_700_000_000 + i * 60, 10 + i / 4]);
  const readings: NonNullable<FixtureOptions['readings']> = { values };
  const source = await importInto({}, () => {}, { readings });
  let release = () => {};
  try {
    await source.run.done;
    // A catch-up run: the source's readings changed, so they are replaced, and the source stalls as they are read.
    values.push([1_700_100_000, 99]);
    // Its readings are read twice: summed up (they differ from the last run's), then copied. The copy stalls.
    const stalled = new Promise<void>((resolve) => (release = resolve));
    let arrived = () => {};
    const reading = new Promise<void>((resolve) => (arrived = resolve));
    let requests = 0;
    readings.hold = () => {
      if (++requests < 2) return undefined;
      arrived();
      return stalled;
    };
    const again = tilthAsync(
      [
        'import',
        'farmos',
        '--url',
        source.fixture.url,
        '--client-id',
        FIXTURE_CLIENT.id,
        '--client-secret',
        FIXTURE_CLIENT.secret,
        '--retries',
        '1',
        '--no-verify',
      ],
      source.db.env,
    );
    await reading;
    const started = Date.now();
    const log = await request(`${source.target.url}/api/log/activity`, {
      method: 'POST',
      token: source.token,
      json: { data: { type: 'log--activity', attributes: { name: 'Written while the import waits', status: 'done' } } },
      signal: AbortSignal.timeout(20_000),
    });
    const took = Date.now() - started;
    const feed = await request(`${source.target.url}/api/changes?since=0&page[limit]=500`, {
      token: source.token,
      signal: AbortSignal.timeout(20_000),
    });
    release();
    assert.equal(log.status, 201, log.text.slice(0, 300));
    assert.ok(took < 4000, `the write waited ${took} ms on the import`);
    assert.ok(JSON.stringify(feed.body).includes(log.body.data.id), 'the change feed lists the write at once');
    const done = await again.done;
    assert.doesNotMatch(done.stdout + done.stderr, /Failed the readings/);
    const stored = await request(`${source.target.url}/api/data_stream/${FIXTURE_STREAM}/data?limit=100`, {
      token: source.token,
    });
    assert.equal(stored.body.length, values.length, 'every reading came across once the source answered');
  } finally {
    release();
    await source.close();
  }
});

test('the file store refuses any path outside its root, whoever calls it', async () => {
  const { FileStore } = await import('../../runtime/files/storage.ts');
  const dataDir = mkdtempSync(join(tmpdir(), 'tilth-store-'));
  const outside = mkdtempSync(join(tmpdir(), 'tilth-outside-'));
  try {
    const store = new FileStore(dataDir, { maxBytes: 1000, stallMs: 1000 });
    const received = () => {
      const tmp = store.temporaryPath();
      writeFileSync(tmp, 'bytes');
      return tmp;
    };
    const climb = `${'../'.repeat(20)}${outside.slice(1)}`;
    assert.match(store.place(received(), 'log', `${climb}/a.txt`), /^farm\/log\/\d{4}-\d\d\/a\.txt$/);
    assert.throws(() => store.place(received(), `../../${climb}`, 'a.txt'));
    assert.equal(store.placeAt(received(), `${climb}/b.txt`), null);
    assert.equal(store.placeAt(received(), 'tmp/c.txt'), null, 'not among the waiting uploads');
    assert.equal(store.absolute(`${climb}/a.txt`), null);
    assert.deepEqual(readdirSync(outside), []);
    assert.equal(existsSync(join(dataDir, 'files', 'farm', 'log')), true);
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
    rmSync(outside, { recursive: true, force: true });
  }
});
