// `tilth import farmos` run again and again while the old farm is in use (issue 37): signing in at
// the source as its first administrator, giving the accounts passwords here, a file attached at
// the source after it was copied. And a source serving records with the UUIDs of records of this
// farm's own: they are named as conflicts, never overwritten.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { tilthAsync, type CommandResult } from '../support/tilth-command.ts';
import {
  createTestDatabase,
  startTestServer,
  startTestServerAsAdmin,
  ADMIN,
  type TestServer,
} from '../support/server.ts';
import { request } from '../support/http.ts';
import { buildSampleFarm, type SampleFarm } from '../support/sample-farm.ts';
import { createUser } from '../../runtime/accounts/users.ts';

let source: TestServer;
let sourceToken: string;
let sourceDir: string;
let farm: SampleFarm;
let passwordFile: string;

before(async () => {
  sourceDir = mkdtempSync(join(tmpdir(), 'tilth-source-'));
  ({ server: source, token: sourceToken } = await startTestServerAsAdmin({
    database: {
      env: { TILTH_DATA_DIR: sourceDir, DATABASE_URL: '' },
      drop: async () => rmSync(sourceDir, { recursive: true, force: true }),
    },
  }));
  farm = await buildSampleFarm(
    source.url,
    sourceToken,
    async (name) =>
      (
        await createUser(source.ctx.db.knex, {
          name,
          password: `${name}-password-1`,
          roles: ['farm_worker'],
          mail: `${name}@example.org`,
        })
      ).uuid,
  );
  passwordFile = join(sourceDir, 'password.txt');
  writeFileSync(passwordFile, `${ADMIN.password}\n`);
});
after(async () => {
  await source?.close();
  rmSync(sourceDir, { recursive: true, force: true });
});

/** The README's command: signed in at the source as its administrator (which moves that account's sign-in times there). */
const importArgs = (...extra: string[]) => [
  'import',
  'farmos',
  '--url',
  source.url,
  '--username',
  ADMIN.name,
  '--password-file',
  passwordFile,
  ...extra,
];

const eventsOf = (run: CommandResult) =>
  run.stdout
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l));

test('a fresh farm: every run after the first succeeds, an account given a password here is no difference, a file attached at the source later is copied', async () => {
  const targetDb = await createTestDatabase({ migrated: true });
  try {
    const first = await tilthAsync(importArgs(), targetDb.env).done;
    assert.equal(first.status, 0, first.stdout + first.stderr);
    // The summary adds up: the table's total is the sentence's; the readings are counted apart, by data stream, in the table and as they go.
    const total = first.stdout.match(/^total +(\d+) +(\d+) +(\d+) +\d+ +(\d+)$/m);
    const sentence = first.stdout.match(
      /^Imported from \S+: (\d+) records created, (\d+) updated, 0 pruned, (\d+) failed; the readings of 1 data stream copied, in [\d.]+ s\.$/m,
    );
    assert.ok(total && sentence, first.stdout);
    assert.deepEqual([total[2], total[3], total[4]], [sentence[1], sentence[2], sentence[3]], first.stdout);
    assert.equal(
      Number(total[2]),
      27,
      'every record of the sample farm: 3 users, 4 terms, 1 file, 1 data stream, 9 assets, 2 quantities, 7 logs',
    );
    assert.match(first.stdout, /^readings \(streams\) +1 +1 +0 +0 +0$/m);
    assert.match(first.stderr, /^readings \(streams\): 1 of about 1 records, .* \(done\)$/m);

    // Nothing changed at the source but the administrator's sign-in times: nothing fails, no account is rewritten.
    const second = await tilthAsync(importArgs('--json'), targetDb.env).done;
    assert.equal(second.status, 0, second.stdout + second.stderr);
    const events = eventsOf(second);
    assert.deepEqual(
      events.filter((e) => e.event === 'failed'),
      [],
    );
    const users = events
      .find((e) => e.event === 'summary')
      .counts.find((c: { type: string }) => c.type === 'user--user');
    assert.deepEqual([users.created, users.updated], [0, 0], second.stdout);

    // The README's next step: each account gets a password here. The farm is no different for it.
    const password = await tilthAsync(
      ['user', 'password', '--name', 'ann', '--password', 'ann-new-password-1'],
      targetDb.env,
    ).done;
    assert.equal(password.status, 0, password.stdout + password.stderr);
    const verified = await tilthAsync(importArgs('--verify-only'), targetDb.env).done;
    assert.equal(verified.status, 0, verified.stdout + verified.stderr);
    assert.doesNotMatch(verified.stdout, /^Differs/m);

    // A file uploaded at the source after a run, then attached there (its status turns true, its `changed` stays).
    const upload = await request(`${source.url}/api/log/observation/file`, {
      method: 'POST',
      token: sourceToken,
      headers: {
        'Content-Type': 'application/octet-stream',
        'Content-Disposition': 'file; filename="photo.txt"',
        Accept: 'application/vnd.api+json',
      },
      body: 'a photo\n',
    });
    assert.equal(upload.status, 201, upload.text);
    assert.equal(upload.body.data.attributes.status, false);
    const third = await tilthAsync(importArgs('--json'), targetDb.env).done;
    assert.equal(third.status, 0, third.stdout + third.stderr);
    // Some time goes by (more than the margin a run reads back from): it was uploaded long ago.
    await source.ctx.db
      .knex('files')
      .where('uuid', upload.body.data.id)
      .update({ created: 1_700_000_000, changed: 1_700_000_000 });
    const attached = await request(`${source.url}/api/log/observation/${farm.fileLog}/relationships/file`, {
      method: 'POST',
      token: sourceToken,
      json: { data: [{ type: 'file--file', id: upload.body.data.id }] },
    });
    assert.ok(attached.status < 300, attached.text);
    const file = (await request(`${source.url}/api/file/file/${upload.body.data.id}`, { token: sourceToken })).body
      .data;
    assert.equal(file.attributes.status, true);
    assert.equal(file.attributes.changed, '2023-11-14T22:13:20+00:00');
    const fourth = await tilthAsync(importArgs(), targetDb.env).done;
    assert.equal(fourth.status, 0, fourth.stdout + fourth.stderr);
    assert.match(fourth.stdout, /^Verified: /m);

    // A served field of an account edited here is still a difference, named as any other.
    const target = await startTestServer({ database: targetDb });
    try {
      await target.ctx.db.knex('users').where('name', 'ann').update({ mail: 'ann@here.example.org' });
    } finally {
      await target.close();
    }
    const differs = await tilthAsync(importArgs('--verify-only'), targetDb.env).done;
    assert.equal(differs.status, 1, differs.stdout + differs.stderr);
    assert.match(
      differs.stdout,
      new RegExp(`^Differs: user--user ${farm.users[0]} mail: source ann@example.org, here ann@here.example.org$`, 'm'),
    );
    assert.match(differs.stdout, /^Verification: 1 differences\.$/m);
  } finally {
    await targetDb.drop();
  }
});

test('a fresh farm whose first run was SIGKILLed: the runs after it succeed', async () => {
  const targetDb = await createTestDatabase({ migrated: true });
  try {
    // Killed once the users are stored (user 1 among them), in the middle of the terms.
    const killed = tilthAsync(importArgs('--json', '--no-verify'), targetDb.env, (text) => {
      if (text.includes('"phase":"taxonomy terms"')) killed.kill();
    });
    assert.equal((await killed.done).signal, 'SIGKILL');
    for (const run of [1, 2]) {
      const result = await tilthAsync(importArgs(), targetDb.env).done;
      assert.equal(result.status, 0, `run ${run}: ${result.stdout}${result.stderr}`);
      assert.match(result.stdout, /^Verified: /m);
    }
  } finally {
    await targetDb.drop();
  }
});

test("records of this farm that share a UUID with the source's are conflicts, named, and never overwritten", async () => {
  const targetDb = await createTestDatabase({ migrated: true });
  const { server: target, token } = await startTestServerAsAdmin({ database: targetDb });
  try {
    // A local viewer with the UUID of the source's ann, and a local log with the UUID of one of the source's logs.
    await createUser(target.ctx.db.knex, {
      name: 'viewer',
      password: 'viewer-password-1',
      roles: ['farm_viewer'],
      mail: 'viewer@here.example.org',
      uuid: farm.users[0],
    });
    const log = await request(`${target.url}/api/log/activity`, {
      method: 'POST',
      token,
      json: { data: { type: 'log--activity', id: farm.moved, attributes: { name: 'Our own log', status: 'pending' } } },
    });
    assert.equal(log.status, 201, log.text);

    for (const run of [1, 2]) {
      const result = await tilthAsync(importArgs('--json', '--no-verify'), targetDb.env).done;
      assert.equal(result.status, 1, `run ${run}: ${result.stdout}${result.stderr}`);
      const failed = eventsOf(result).filter((e) => e.event === 'failed');
      assert.deepEqual(
        failed.map((f) => [f.type, f.uuid]).sort(),
        [
          ['log--activity', farm.moved],
          ['user--user', farm.users[0]],
        ],
        result.stdout,
      );
      for (const f of failed)
        assert.match(
          f.reason,
          /^this farm has a (user|log) of its own with this UUID \(not one imported from http:\/\/127\.0\.0\.1:\d+\): it is left as it is\.$/,
        );
    }
    const viewer = (await request(`${target.url}/api/user/user/${farm.users[0]}`, { token })).body.data;
    assert.deepEqual(
      [
        viewer.attributes.name,
        viewer.attributes.mail,
        viewer.relationships.roles.data.map((r: any) => r.meta.drupal_internal__target_id),
      ],
      ['viewer', 'viewer@here.example.org', ['farm_viewer']],
    );
    const ours = (await request(`${target.url}/api/log/activity/${farm.moved}`, { token })).body.data;
    assert.deepEqual([ours.attributes.name, ours.attributes.status], ['Our own log', 'pending']);
  } finally {
    await target.close();
    await targetDb.drop();
  }
});
