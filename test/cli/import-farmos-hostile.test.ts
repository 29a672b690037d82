// `tilth import farmos` pointed at a source that attacks it (issue 37; test/support/hostile-source.ts):
// each attack ends the run (or the record) with a message naming the URL or record, stores
// nothing it should not, and sends nothing to another host.
import { test, before, after, beforeEach, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, rmSync, type Dirent } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, sep } from 'node:path';
import knexFactory, { type Knex } from 'knex';
import { createUser } from '../../runtime/accounts/users.ts';
import { createTestDatabase } from '../support/server.ts';
import { tilthAsync, type CommandResult } from '../support/tilth-command.ts';
import {
  startHostileSource,
  hostileFarm,
  HOSTILE,
  HOSTILE_CLIENT,
  type HostileSource,
} from '../support/hostile-source.ts';

let source: HostileSource;
let targetDb: Awaited<ReturnType<typeof createTestDatabase>>;

before(async () => {
  source = await startHostileSource();
});
after(async () => {
  await source?.close();
});
// Each attack on a farm of its own: what one run stored (and its marks) is not the next one's.
afterEach(async () => {
  await openKnex?.destroy();
  openKnex = null;
  await targetDb?.drop();
});
beforeEach(async () => {
  targetDb = await createTestDatabase({ migrated: true });
  source.behave = {};
  source.farm = hostileFarm();
  source.files = { '/system/files/2021-06/map.txt': source.files['/system/files/2021-06/map.txt']! };
  source.requests.length = 0;
  source.endlessBytes = 0;
  source.internal.requests.length = 0;
});

/** The import from the hostile source, killed if it runs past `limitMs` (the attack worked: the test fails). */
async function importFrom(
  args: string[],
  env: Record<string, string> = {},
  limitMs = 60_000,
): Promise<CommandResult & { ms: number }> {
  const started = Date.now();
  const run = tilthAsync(
    [
      'import',
      'farmos',
      '--client-id',
      HOSTILE_CLIENT.id,
      '--client-secret',
      HOSTILE_CLIENT.secret,
      '--retries',
      '1',
      ...(args.includes('--url') ? [] : ['--url', source.url]),
      ...args,
    ],
    { ...targetDb.env, ...env },
  );
  const timer = setTimeout(run.kill, limitMs);
  const result = await run.done;
  clearTimeout(timer);
  return { ...result, ms: Date.now() - started };
}

let openKnex: Knex | null = null;
/** A connection to the farm being imported into (closed after each test). */
async function targetKnex(): Promise<Knex> {
  openKnex ??= knexFactory(
    targetDb.env.DATABASE_URL
      ? { client: 'pg', connection: targetDb.env.DATABASE_URL }
      : {
          client: 'better-sqlite3',
          connection: { filename: join(targetDb.env.TILTH_DATA_DIR!, 'tilth.sqlite') },
          useNullAsDefault: true,
        },
  );
  return openKnex;
}

/** The files the import stored anywhere in the data folder's file store (imported bytes keep their URI's path), less the waiting room. */
function importedFiles(): string[] {
  const dir = join(targetDb.env.TILTH_DATA_DIR!, 'files');
  if (!existsSync(dir)) return [];
  return (readdirSync(dir, { recursive: true, withFileTypes: true }) as Dirent[])
    .filter((d) => d.isFile())
    .map((d) => relative(dir, join(d.parentPath ?? d.path, d.name)))
    .filter((path) => !path.startsWith(`tmp${sep}`));
}

test('an endless JSON page is read up to TILTH_IMPORT_MAX_DOCUMENT_MB, then named with the cap; the rest comes across', async () => {
  source.behave.endlessPage = '/api/asset/land';
  const run = await importFrom(['--no-verify'], { TILTH_IMPORT_MAX_DOCUMENT_MB: '1' });
  assert.equal(run.status, 1, run.stdout + run.stderr);
  assert.match(
    run.stdout,
    new RegExp(
      `^Failed: asset--land \\(its first page\\): ${source.url}/api/asset/land\\?\\S* answered more than 1 MB \\(TILTH_IMPORT_MAX_DOCUMENT_MB\\)`,
      'm',
    ),
  );
  assert.match(
    run.stdout,
    /^Imported from .*: 2 records created, 0 updated, 0 pruned, 2 failed/m,
    'the summary is printed',
  );
  assert.match(run.stdout, /^user--user\s+1\s+1\s/m, 'the other bundles came across');
  assert.match(run.stdout, /^file--file\s+1\s+1\s/m);
  assert.ok(source.endlessBytes < 32 * 1024 * 1024, `it stopped reading: ${source.endlessBytes} bytes were sent`);
});

test('a revision history whose links.next is itself ends with an error naming the record, after a few requests', async () => {
  source.behave.selfNextHistory = true;
  const run = await importFrom(['--revisions', '--no-verify'], {}, 20_000);
  assert.equal(run.status, 1, run.stdout + run.stderr);
  assert.match(
    run.stdout,
    new RegExp(`^Failed: asset--land .*revision history of asset--land ${HOSTILE.field}.*came back again`, 'm'),
  );
  const asked = source.requests.filter((r) => r.includes(`/${HOSTILE.field}/revision-history`)).length;
  assert.ok(asked <= 3, `${asked} requests for its history`);
});

test('a revision history that never ends is cut at 10,000 revisions, naming the record', async () => {
  source.behave.endlessHistory = true;
  const run = await importFrom(['--revisions', '--no-verify'], {}, 20_000);
  assert.equal(run.status, 1, run.stdout + run.stderr);
  assert.match(
    run.stdout,
    new RegExp(
      `^Failed: asset--land .*revision history of asset--land ${HOSTILE.field}.*more than 10000 revisions`,
      'm',
    ),
  );
  const asked = source.requests.filter((r) => r.includes(`/${HOSTILE.field}/revision-history`)).length;
  assert.ok(asked <= 201, `${asked} requests for its history`);
});

test("a file's URL redirected to another host: not followed, the file named, nothing stored", async () => {
  source.behave.redirectFilesTo = `${source.internal.url}/latest/meta-data`;
  const run = await importFrom(['--no-verify']);
  assert.equal(run.status, 1, run.stdout + run.stderr);
  assert.match(
    run.stdout,
    new RegExp(
      `^Failed: file--file ${HOSTILE.map}: .*redirects to ${source.internal.url}/latest/meta-data, which is not on ${source.url}`,
      'm',
    ),
  );
  assert.deepEqual(source.internal.requests, [], 'no request reached the other host');
  assert.deepEqual(importedFiles(), [], 'no bytes stored');
});

test("a file's URL redirected on the source's own address: followed, the bytes stored", async () => {
  source.files['/moved/map.txt'] = source.files['/system/files/2021-06/map.txt']!;
  source.behave.redirectFilesTo = `${source.url}/moved/map.txt`;
  const run = await importFrom(['--no-verify']);
  assert.equal(run.status, 0, run.stdout + run.stderr);
  assert.ok(source.requests.includes('GET /moved/map.txt'));
  assert.equal(importedFiles().filter((f) => f.endsWith('map.txt')).length, 1);
});

test('a file record with no filesize is refused, naming it, before its bytes are fetched', async () => {
  delete source.farm['file--file']![0]!.attributes.filesize;
  const run = await importFrom(['--no-verify']);
  assert.equal(run.status, 1, run.stdout + run.stderr);
  assert.match(
    run.stdout,
    new RegExp(`^Failed: file--file ${HOSTILE.map}: the source does not state its filesize`, 'm'),
  );
  assert.ok(!source.requests.some((r) => r.startsWith('GET /system/files/')), 'its bytes were not fetched');
  assert.deepEqual(importedFiles(), []);
});

test('a file longer than its stated filesize: read no further than that, refused, nothing stored', async () => {
  source.farm['file--file']![0]!.attributes.filesize = 10;
  const run = await importFrom(['--no-verify']);
  assert.equal(run.status, 1, run.stdout + run.stderr);
  assert.match(
    run.stdout,
    new RegExp(`^Failed: file--file ${HOSTILE.map}: its bytes are longer than the filesize 10 the source states`, 'm'),
  );
  assert.deepEqual(
    importedFiles().filter((f) => f.endsWith('.txt')),
    [],
  );
});

test('a 307 from /oauth/token to another host: the secret is not sent there, and the error names where it pointed', async () => {
  source.behave.redirectTokenTo = `${source.internal.url}/oauth/token`;
  const run = await importFrom(['--no-verify']);
  assert.equal(run.status, 1, run.stdout + run.stderr);
  assert.match(run.stderr, new RegExp(`${source.url}/oauth/token redirects to ${source.internal.url}/oauth/token`));
  assert.deepEqual(source.internal.requests, [], 'nothing reached the other host');
  assert.ok(!source.requests.some((r) => r.startsWith('GET /api')), 'no token was used');
});

test('a source that stops sending mid-answer: after --timeout, a failure naming the URL, and the summary', async () => {
  source.behave.stallBody = '/api/asset/land';
  const run = await importFrom(['--no-verify', '--timeout', '1'], {}, 30_000);
  assert.equal(run.status, 1, run.stdout + run.stderr);
  assert.doesNotMatch(run.stderr, /TypeError/);
  assert.match(
    run.stdout,
    new RegExp(
      `^Failed: asset--land \\(its first page\\): ${source.url}/api/asset/land\\?\\S*: no complete answer within 1 s \\(--timeout\\)`,
      'm',
    ),
  );
  assert.match(
    run.stdout,
    /^Imported from .*: 2 records created, 0 updated, 0 pruned, 2 failed/m,
    'the summary is printed',
  );
});

test('escape sequences and line breaks in what the source says do not reach the terminal', async () => {
  const fake = `\x1b[2K\r\nVerified: this farm has what ${source.url} has.\x9b31m\x07`;
  source.behave.failWith = { path: '/api/log/activity', detail: `Boom${fake}` };
  source.farm['user--user']![0]!.attributes.name = 'grower\x1b[2K\rVerified: ok\x9b31m';
  source.farm['plan--crop'] = [
    {
      type: 'plan--crop',
      id: '00000000-0000-4000-8000-000000000600',
      attributes: { drupal_internal__id: 1, name: 'x' },
      relationships: {},
    },
  ];
  // A type the farm has not, named in the "Skipped" lines, with an escape of its own.
  source.farm[`plan--crop\x1b]0;pwned\x07`] = [];
  const run = await importFrom(['--no-verify']);
  assert.equal(run.status, 1, run.stdout + run.stderr);
  for (const [name, out] of [
    ['stdout', run.stdout],
    ['stderr', run.stderr],
  ]) {
    assert.doesNotMatch(
      out!,
      /[\x00-\x08\x0b-\x1f\x7f-\x9f]/,
      `${name} has no control characters: ${JSON.stringify(out)}`,
    );
    assert.doesNotMatch(out!, /^Verified/m, `${name} has no line faking the verification`);
  }
  assert.match(
    run.stdout,
    /^Failed: log--activity \(its first page\): .*answered 500: Boom\s*Verified: this farm/m,
    'the detail is printed, on its own line',
  );
  assert.match(
    run.stdout,
    /^These accounts came without a password .*: grower\s*Verified: ok/m,
    'the name is printed, on its line',
  );
});

test('--url given as the /api address the server prints: signs in and imports', async () => {
  for (const url of [`${source.url}/api`, `${source.url}/api/`]) {
    const run = await importFrom(['--url', url, '--no-verify']);
    assert.equal(run.status, 0, run.stdout + run.stderr);
    assert.match(run.stdout, new RegExp(`^Imported from ${source.url}: `, 'm'));
  }
});

test('--url of a page that is not the farm: the error says what to give', async () => {
  const run = await importFrom(['--url', `${source.url}/farm/dashboard`, '--no-verify']);
  assert.equal(run.status, 1, run.stdout + run.stderr);
  assert.match(
    run.stderr,
    new RegExp(
      `${source.url}/farm/dashboard/oauth/token answered 401, which is not an OAuth answer: give --url the farm's own address`,
    ),
  );
});

test("--url of a server whose /api is not a farm's: the error says what to give", async () => {
  const run = await importFrom(['--url', source.internal.url, '--no-verify']);
  assert.equal(run.status, 1, run.stdout + run.stderr);
  assert.match(
    run.stderr,
    new RegExp(
      `${source.internal.url}/api lists no resource types, so it is not a farm's API: give --url the farm's own address`,
    ),
  );
});

test("a source's records that name a record of this farm by its UUID (an account, an asset) do not get it: the reference is left out", async () => {
  const knex = await targetKnex();
  // This farm's own account and field, whose UUIDs the source also serves (its grower and its field).
  const local = await createUser(knex, {
    name: 'our-grower',
    password: 'our-grower-password-1',
    roles: ['farm_manager'],
    uuid: HOSTILE.grower,
  });
  const [field] = await knex('asset')
    .insert({
      uuid: HOSTILE.field,
      bundle: 'land',
      name: 'Our own field',
      status: 'active',
      land_type: 'field',
      is_location: true,
      is_fixed: true,
    })
    .returning('id');
  const log = source.farm['log--activity']![0]!;
  log.relationships.owner = {
    data: [{ type: 'user--user', id: HOSTILE.grower, meta: { drupal_internal__target_id: 2 } }],
  };
  const run = await importFrom(['--no-verify']);
  assert.match(
    run.stdout,
    new RegExp(`^Failed: user--user ${HOSTILE.grower}: this farm has a user of its own`, 'm'),
    run.stdout,
  );
  assert.match(
    run.stdout,
    new RegExp(`^Failed: asset--land ${HOSTILE.field}: this farm has a asset of its own`, 'm'),
    run.stdout,
  );
  const stored = await knex('log').where('uuid', HOSTILE.walk).first('id', 'uid');
  assert.ok(stored, `the log came across\n${run.stdout}`);
  assert.notEqual(stored.uid === null ? null : Number(stored.uid), local.id, 'not authored by our account');
  assert.deepEqual(
    await knex('log__owner').where('entity_id', stored.id).select('target_id'),
    [],
    'not owned by our account',
  );
  assert.deepEqual(
    await knex('log__asset').where('entity_id', stored.id).select('target_id'),
    [],
    `not about our field (${JSON.stringify(field)})`,
  );
});

test('a source that does every hostile thing at once: the run ends, names each, stores nothing it should not, sends nothing elsewhere, and takes over nobody', async () => {
  const outside = mkdtempSync(join(tmpdir(), 'tilth-outside-'));
  const climb = `${'../'.repeat(30)}${outside.slice(1)}`;
  const intruder = '00000000-0000-4000-8000-000000000666';
  const evil = '00000000-0000-4000-8000-000000000401';
  const sizeless = '00000000-0000-4000-8000-000000000402';
  // An account of this farm whose UUID the source also serves, as an administrator with its own e-mail.
  const viewer = await createUser(await targetKnex(), {
    name: 'local-viewer',
    password: 'viewer-password-1',
    mail: 'viewer@example.org',
    roles: ['farm_viewer'],
    uuid: intruder,
  });
  source.farm['user--user']!.push(
    {
      type: 'user--user',
      id: intruder,
      attributes: {
        drupal_internal__uid: 3,
        name: 'local-viewer',
        mail: 'attacker@example.net',
        status: true,
        timezone: 'UTC',
      },
      relationships: {
        roles: {
          data: [
            {
              type: 'user_role--user_role',
              id: '00000000-0000-4000-8000-000000000700',
              meta: { drupal_internal__target_id: 'administrator' },
            },
          ],
        },
      },
    },
    {
      type: 'user--user',
      id: '00000000-0000-4000-8000-000000000667',
      attributes: {
        drupal_internal__uid: 4,
        name: 'mole\x1b[2K\rVerified: ok\x9b31m',
        mail: 'mole@example.net',
        status: true,
        timezone: 'UTC',
      },
      relationships: { roles: { data: [] } },
    },
  );
  source.files['/elsewhere/evil.txt'] = '#!/bin/sh\necho owned\n';
  source.farm['file--file']!.push(
    {
      type: 'file--file',
      id: evil,
      attributes: {
        drupal_internal__fid: 2,
        filename: `${climb}/evil.sh`,
        uri: { value: `private://${climb}/evil-uri.sh`, url: '/elsewhere/evil.txt' },
        filemime: 'text/html\r\nSet-Cookie: a=b',
        filesize: Buffer.byteLength(source.files['/elsewhere/evil.txt']!),
        status: true,
      },
      relationships: {},
    },
    {
      type: 'file--file',
      id: sizeless,
      attributes: {
        drupal_internal__fid: 3,
        filename: 'sizeless.txt',
        uri: { value: 'private://2021-06/sizeless.txt', url: '/elsewhere/evil.txt' },
        filemime: 'text/plain',
        status: true,
      },
      relationships: {},
    },
  );
  source.behave.endlessPage = '/api/asset/land';
  source.behave.selfNextHistory = true;
  source.behave.redirectFilesTo = `${source.internal.url}/latest/meta-data`;
  source.behave.failWith = {
    path: '/api/log/activity',
    detail: 'Boom\x1b[2K\r\nVerified: this farm has what you wanted.',
  };
  try {
    const run = await importFrom(['--revisions', '--timeout', '5'], { TILTH_IMPORT_MAX_DOCUMENT_MB: '1' }, 90_000);
    const out = run.stdout + run.stderr;
    assert.equal(run.status, 1, out);
    assert.ok(source.endlessBytes < 32 * 1024 * 1024, `the endless page was cut: ${source.endlessBytes} bytes`);
    assert.match(run.stdout, /^Failed: asset--land \(its first page\): .*answered more than 1 MB/m);
    assert.match(
      run.stdout,
      new RegExp(`^Failed: file--file ${HOSTILE.map}: .*redirects to ${source.internal.url}`, 'm'),
    );
    assert.match(
      run.stdout,
      new RegExp(`^Failed: file--file ${sizeless}: the source does not state its filesize`, 'm'),
    );
    assert.match(
      run.stdout,
      new RegExp(`^Failed: user--user ${intruder}: this farm has a user of its own with this UUID`, 'm'),
    );
    assert.deepEqual(source.internal.requests, [], 'nothing reached the internal address');
    assert.deepEqual(readdirSync(outside), [], 'nothing written outside the data folder');
    assert.deepEqual(
      importedFiles().map((f) => f.split(sep).pop()),
      ['evil.sh'],
      'only the file that came whole, under its reduced name',
    );
    assert.doesNotMatch(out, /[\x00-\x08\x0b-\x1f\x7f-\x9f]/, 'no control characters reach the terminal');
    assert.doesNotMatch(out, /^Verified/m, 'no line fakes the verification');
    const knex = await targetKnex();
    const account = await knex('users').where('uuid', intruder).first('name', 'mail');
    assert.deepEqual(
      { ...account },
      { name: 'local-viewer', mail: 'viewer@example.org' },
      'the local account is as it was',
    );
    assert.deepEqual(
      (await knex('user_role').where('user_id', viewer.id).select('role')).map((r: { role: string }) => r.role),
      ['farm_viewer'],
      'and keeps its roles',
    );
    assert.equal((await knex('files').where('uuid', evil).first('filemime'))?.filemime, 'application/octet-stream');

    // And a token endpoint that redirects: the credentials go nowhere else.
    source.behave.redirectTokenTo = `${source.internal.url}/oauth/token`;
    const again = await importFrom(['--no-verify']);
    assert.equal(again.status, 1);
    assert.match(again.stderr, /redirects to/);
    assert.deepEqual(source.internal.requests, []);
  } finally {
    rmSync(outside, { recursive: true, force: true });
  }
});
