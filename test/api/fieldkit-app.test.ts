// Field Kit as farmOS users run it (issue 25 items 6 and 7): from its hosted app at
// https://farmos.app, every call a CORS request with preflights, signing in with the `fieldkit`
// client's password grant; `tilth client update` changes that client in place (a self-hosted
// Field Kit's origin); field modules added with `tilth fieldkit add-module` are listed at
// /api/field_module/field_module and their scripts served at /fieldkit/js/<name>/index.js, as
// farmOS's farm_fieldkit does, then removed again.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startTestServer, type TestServer } from '../support/server.ts';
import { request } from '../support/http.ts';
import { createUser } from '../../runtime/accounts/users.ts';
import { updateClient } from '../../runtime/oauth/clients.ts';
import { putFieldModule } from '../../runtime/storage/field-modules.ts';

const BIN = fileURLToPath(new URL('../../bin/tilth.js', import.meta.url));
const APP = 'https://farmos.app';

let server: TestServer;
let dir: string;
before(async () => {
  server = await startTestServer();
  await createUser(server.ctx.db.knex, { name: 'fern', password: 'fern-password', roles: ['farm_worker'] });
  dir = mkdtempSync(join(tmpdir(), 'tilth-fieldkit-'));
});
after(async () => {
  await server.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Run `tilth …` against the test server's database, as a self-hoster would beside it. */
function tilth(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const env = {
    ...process.env,
    TILTH_DATA_DIR: server.config.dataDir,
    DATABASE_URL: server.config.databaseUrl ?? '',
    TILTH_LOG_LEVEL: 'silent',
  };
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, ...args], { env }, (error, stdout, stderr) =>
      resolve({ code: error ? ((error as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

/** A browser's preflight from `origin` for `method` with `headers`. */
const preflight = (origin: string, path: string, method: string, headers: string) =>
  fetch(`${server.url}${path}`, {
    method: 'OPTIONS',
    headers: { Origin: origin, 'Access-Control-Request-Method': method, 'Access-Control-Request-Headers': headers },
  });

/** Field Kit's password grant, sent from `origin`. */
const signIn = (origin: string) =>
  fetch(`${server.url}/oauth/token`, {
    method: 'POST',
    headers: { Origin: origin, 'Content-Type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'password',
      client_id: 'fieldkit',
      username: 'fern',
      password: 'fern-password',
    }),
  });

test('Field Kit at https://farmos.app passes CORS preflight and signs in with the password grant; sync requests are CORS-readable', async () => {
  const pre = await preflight(APP, '/oauth/token', 'POST', 'content-type');
  assert.ok(pre.status === 200 || pre.status === 204, `preflight: ${pre.status}`);
  assert.equal(pre.headers.get('access-control-allow-origin'), APP);
  const res = await signIn(APP);
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('access-control-allow-origin'), APP);
  const tokens = (await res.json()) as { access_token: string; scope: string };
  assert.deepEqual(
    tokens.scope.split(' ').sort(),
    ['farm_manager', 'farm_worker'],
    "farmOS's fieldkit consumer's scopes",
  );

  // A sync client's conditional PATCH is allowed, and it can read the ETag.
  const patch = await preflight(
    APP,
    '/api/log/activity/00000000-0000-4000-8000-000000000000',
    'PATCH',
    'authorization,content-type,if-match',
  );
  assert.match(patch.headers.get('access-control-allow-headers') ?? '', /If-Match/);
  const api = await fetch(`${server.url}/api/changes?since=0`, {
    headers: { Origin: APP, Authorization: `Bearer ${tokens.access_token}` },
  });
  assert.equal(api.status, 200);
  assert.equal(api.headers.get('access-control-allow-origin'), APP);
  assert.match(api.headers.get('access-control-expose-headers') ?? '', /ETag/);
});

test('tilth client update changes the fieldkit client in place: a self-hosted Field Kit origin, its scopes', async () => {
  const own = 'https://fieldkit.example.org';
  assert.equal(
    (await preflight(own, '/oauth/token', 'POST', 'content-type')).headers.get('access-control-allow-origin'),
    null,
    'not allowed yet',
  );
  const updated = await tilth(
    'client',
    'update',
    '--id',
    'fieldkit',
    '--origin',
    APP,
    '--origin',
    own,
    '--scope',
    'farm_worker',
  );
  assert.equal(updated.code, 0, updated.stderr);
  assert.match(updated.stdout, /origins=https:\/\/farmos\.app https:\/\/fieldkit\.example\.org/);
  const res = await signIn(own);
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('access-control-allow-origin'), own);
  assert.equal(((await res.json()) as { scope: string }).scope, 'farm_worker');

  // What the command refuses, asked of the function it runs (a process each would cost seconds).
  const knex = server.ctx.db.knex;
  await assert.rejects(
    updateClient(knex, 'fieldkit', { allowedOrigins: ['https://fieldkit.example.org/app'] }),
    /not an origin/,
  );
  await assert.rejects(updateClient(knex, 'nobody', { defaultScopes: ['farm_worker'] }), /There is no client "nobody"/);
  await assert.rejects(updateClient(knex, 'fieldkit', { defaultScopes: ['farmer'] }), /Unknown scope "farmer"/);
});

test('a field module added by the command is listed and its script served (JavaScript, cached by hash, CORS-readable); removed, it is gone', async () => {
  const file = join(dir, 'index.js');
  const script =
    "import { h } from 'vue';\nwindow.farmOS.mountFieldModule({ name: 'tasks', label: 'Tasks', routes: [] });\n";
  writeFileSync(file, script);
  const added = await tilth(
    'fieldkit',
    'add-module',
    '--name',
    'tasks',
    '--label',
    'Tasks',
    '--description',
    'Assigned logs',
    '--file',
    file,
  );
  assert.equal(added.code, 0, added.stderr);

  const token = ((await (await signIn(APP)).json()) as { access_token: string }).access_token;
  const list = await request(`${server.url}/api/field_module/field_module`, { token });
  assert.equal(list.status, 200);
  assert.equal(list.body.data.length, 1);
  const [module] = list.body.data;
  assert.equal(module.type, 'field_module--field_module');
  assert.deepEqual(
    {
      name: module.attributes.drupal_internal__id,
      label: module.attributes.label,
      description: module.attributes.description,
      status: module.attributes.status,
    },
    { name: 'tasks', label: 'Tasks', description: 'Assigned logs', status: true },
  );
  assert.equal(
    (await request(`${server.url}/api/field_module/field_module/${module.id}`, { token })).body.data.id,
    module.id,
  );

  // As Field Kit loads it: <script type="module" crossorigin="anonymous">, no token.
  const served = await fetch(`${server.url}/fieldkit/js/tasks/index.js`, { headers: { Origin: APP } });
  assert.equal(served.status, 200);
  assert.equal(await served.text(), script, 'the file as added, byte for byte');
  assert.equal(served.headers.get('content-type'), 'application/javascript; charset=utf-8');
  assert.equal(served.headers.get('access-control-allow-origin'), APP);
  assert.equal(served.headers.get('cache-control'), 'public, no-cache');
  const etag = served.headers.get('etag')!;
  assert.ok(etag);
  assert.equal(
    (await fetch(`${server.url}/fieldkit/js/tasks/index.js`, { headers: { 'If-None-Match': etag } })).status,
    304,
  );
  assert.equal((await fetch(`${server.url}/fieldkit/js/nothing/index.js`)).status, 404);

  const knex = server.ctx.db.knex;
  await assert.rejects(
    putFieldModule(knex, { name: 'Bad Name', label: 'X', script: Buffer.from(script) }),
    /not a field module name/,
  );
  await assert.rejects(
    putFieldModule(knex, { name: 'binary', label: 'X', script: Buffer.from([0xff, 0xfe, 0x00]) }),
    /not UTF-8/,
  );

  const removed = await tilth('fieldkit', 'remove-module', '--name', 'tasks');
  assert.equal(removed.code, 0, removed.stderr);
  assert.deepEqual((await request(`${server.url}/api/field_module/field_module`, { token })).body.data, []);
  assert.equal((await fetch(`${server.url}/fieldkit/js/tasks/index.js`)).status, 404);
});

test('add-module --file of something that is not a file: a device that never ends, a folder: one line each, nothing read without bound, nothing added', async () => {
  for (const [path, said] of [
    ['/dev/zero', /--file \/dev\/zero is not a regular file/],
    ['/etc', /--file \/etc is not a regular file/],
  ] as const) {
    const run = await tilth('fieldkit', 'add-module', '--name', 'odd', '--label', 'Odd', '--file', path);
    assert.notEqual(run.code, 0);
    assert.match(run.stderr, said);
    assert.doesNotMatch(run.stderr, /\n\s+at /, 'no stack trace');
  }
  const listed = await tilth('fieldkit', 'list-modules');
  assert.doesNotMatch(listed.stdout, /^odd\t/m);
});
