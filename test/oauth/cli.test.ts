// The command line: `tilth client create|list|delete` registers clients whose secret is shown
// once and works at once on a running server; `tilth user block` and `tilth user password`
// revoke the user's tokens.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { startTestServer, type TestServer } from '../support/server.ts';
import { addUser, api, basic, passwordGrant, token } from './helpers.ts';

const BIN = fileURLToPath(new URL('../../bin/tilth.js', import.meta.url));

let server: TestServer;
before(async () => {
  server = await startTestServer();
});
after(() => server.close());

/** Run `tilth …` against the test server's database. */
function tilth(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const env = {
    ...process.env,
    TILTH_DATA_DIR: server.config.dataDir,
    DATABASE_URL: server.config.databaseUrl ?? '',
    TILTH_LOG_LEVEL: 'silent',
  };
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, ...args], { env }, (error, stdout, stderr) => {
      resolve({ code: error ? ((error as { code?: number }).code ?? 1) : 0, stdout, stderr });
    });
  });
}

test('client create prints the secret once; the client works at once; list shows it without secret; delete removes it', async () => {
  const robot = await addUser(server, ['farm_viewer'], 'weather-robot');
  const created = await tilth(
    'client',
    'create',
    '--id',
    'weather',
    '--label',
    'Weather station',
    '--confidential',
    '--grant',
    'client_credentials',
    '--grant',
    'authorization_code,refresh_token',
    '--redirect-uri',
    'https://weather.example.com/cb',
    '--scope',
    'farm_viewer',
    '--origin',
    'https://weather.example.com',
    '--user',
    robot.name,
  );
  assert.equal(created.code, 0, created.stderr);
  const secret = /Client secret \(shown once[^)]*\): (\S+)/.exec(created.stdout)?.[1];
  assert.ok(secret, created.stdout);

  const res = await token(server, { grant_type: 'client_credentials' }, { Authorization: basic('weather', secret) });
  assert.equal(res.status, 200, res.text);
  assert.equal(res.body.scope, 'farm_viewer');
  const cors = await fetch(`${server.url}/api`, { headers: { Origin: 'https://weather.example.com' } });
  assert.equal(cors.headers.get('access-control-allow-origin'), 'https://weather.example.com');

  const listed = await tilth('client', 'list');
  assert.equal(listed.code, 0, listed.stderr);
  const line = listed.stdout.split('\n').find((l) => l.startsWith('weather\t'));
  assert.ok(line, listed.stdout);
  assert.match(line, /confidential/);
  assert.match(line, /grants=client_credentials,authorization_code,refresh_token/);
  assert.match(line, /origins=https:\/\/weather\.example\.com/);
  assert.match(line, /user=weather-robot/);
  assert.ok(!listed.stdout.includes(secret), 'the secret is never shown again');
  assert.match(
    listed.stdout,
    /^farm\tFarm default\tpublic\tgrants=password,refresh_token,authorization_code\tscopes=user_access/m,
  );

  const deleted = await tilth('client', 'delete', '--id', 'weather');
  assert.equal(deleted.code, 0, deleted.stderr);
  assert.equal((await api(`${server.url}/api`, res.body.access_token)).status, 401, 'its tokens went with it');
  assert.equal(
    (await token(server, { grant_type: 'client_credentials' }, { Authorization: basic('weather', secret) })).body.error,
    'invalid_client',
  );
});

test('client commands explain mistakes', async () => {
  const neither = await tilth('client', 'create', '--id', 'x', '--grant', 'password');
  assert.equal(neither.code, 2);
  assert.match(neither.stderr, /--confidential or --public/);
  const badGrant = await tilth('client', 'create', '--id', 'x', '--public', '--grant', 'magic');
  assert.equal(badGrant.code, 1);
  assert.match(badGrant.stderr, /Unknown grant type "magic"/);
  const farm = await tilth('client', 'delete', '--id', 'farm');
  assert.equal(farm.code, 1);
  assert.match(farm.stderr, /cannot be deleted/);
});

test('user block and user password revoke the user’s tokens', async () => {
  const user = await addUser(server, ['farm_worker'], 'cli-user');
  const before = await passwordGrant(server, user.name, user.password);
  // In use before the command runs: the server must not go on trusting what it read then.
  assert.equal((await api(`${server.url}/api`, before.access_token)).status, 200);
  const blocked = await tilth('user', 'block', '--name', user.name);
  assert.equal(blocked.code, 0, blocked.stderr);
  assert.equal((await api(`${server.url}/api`, before.access_token)).status, 401);
  assert.equal((await tilth('user', 'block', '--name', user.name, '--unblock')).code, 0);
  assert.equal(
    (await api(`${server.url}/api`, before.access_token)).status,
    401,
    'unblocking does not bring old tokens back',
  );

  const again = await passwordGrant(server, user.name, user.password);
  assert.equal((await api(`${server.url}/api`, again.access_token)).status, 200);
  const changed = await tilth('user', 'password', '--name', user.name, '--password', 'a new password');
  assert.equal(changed.code, 0, changed.stderr);
  assert.equal((await api(`${server.url}/api`, again.access_token)).status, 401);
  assert.equal(
    (await token(server, { grant_type: 'refresh_token', refresh_token: again.refresh_token, client_id: 'farm' }))
      .status,
    400,
  );
  assert.equal((await passwordGrant(server, user.name, 'a new password')).token_type, 'Bearer');
});
