// No token, code, secret, password or session cookie ever reaches a log line: a real
// `tilth serve` process logs at the most verbose level while every flow runs against it, and its
// whole output is searched for each credential handed out or sent.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { freePort } from '../support/child-server.ts';
import { fileURLToPath } from 'node:url';
import { createTestDatabase, ADMIN } from '../support/server.ts';
import { basic, FormAgent, pkce, postForm } from './helpers.ts';

const BIN = fileURLToPath(new URL('../../bin/tilth.js', import.meta.url));

test('a verbose server log holds none of the credentials of a session of every flow', async (t) => {
  const database = await createTestDatabase();
  t.after(() => database.drop());
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const child = spawn(process.execPath, [BIN, 'serve', '--migrate'], {
    env: {
      ...process.env,
      ...database.env,
      PORT: String(port),
      HOST: '127.0.0.1',
      TILTH_BASE_URL: url,
      TILTH_ADMIN_USER: ADMIN.name,
      TILTH_ADMIN_PASSWORD: ADMIN.password,
      TILTH_LOG_LEVEL: 'trace',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (d) => (output += d));
  child.stderr.on('data', (d) => (output += d));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  t.after(async () => {
    if (child.exitCode === null) child.kill('SIGKILL');
    await exited;
  });
  for (let i = 0; !output.includes('Tilth is serving'); i++) {
    if (i > 300 || child.exitCode !== null) throw new Error(`the server did not start:\n${output}`);
    await new Promise((r) => setTimeout(r, 100));
  }

  const secrets: Array<string | undefined> = [ADMIN.password];
  const tokenAt = (form: Record<string, string>, headers: Record<string, string> = {}) =>
    postForm(`${url}/oauth/token`, form, headers);
  // Every token the check looks for must really have been issued: a failed grant would leave
  // nothing to look for, and the check would pass without checking.
  const granted = async (answer: ReturnType<typeof tokenAt>, what: string) => {
    const res = await answer;
    assert.equal(res.status, 200, `${what}: ${res.text}`);
    assert.ok(res.body.access_token, `${what}: an access token`);
    return res.body as { access_token: string; refresh_token?: string };
  };

  // Password grant, use, refresh, replay, revocation, a bad bearer.
  const pair = await granted(
    tokenAt({ grant_type: 'password', username: ADMIN.name, password: ADMIN.password, client_id: 'farm' }),
    'password grant',
  );
  secrets.push(pair.access_token, pair.refresh_token);
  await fetch(`${url}/api?filter[x]=1`, { headers: { Authorization: `Bearer ${pair.access_token}` } });
  const next = await granted(
    tokenAt({ grant_type: 'refresh_token', refresh_token: pair.refresh_token!, client_id: 'farm' }),
    'refresh',
  );
  secrets.push(next.access_token, next.refresh_token);
  await tokenAt({ grant_type: 'refresh_token', refresh_token: pair.refresh_token!, client_id: 'farm' });
  await fetch(`${url}/api`, { headers: { Authorization: `Bearer ${pair.access_token}` } });
  await postForm(`${url}/oauth/revoke`, { token: next.refresh_token!, client_id: 'farm' });
  await tokenAt({ grant_type: 'password', username: ADMIN.name, password: 'a wrong password', client_id: 'farm' });
  secrets.push('a wrong password');

  // The authorization code flow with PKCE, through the login and consent pages.
  const agent = new FormAgent(url);
  const { verifier, challenge } = pkce();
  const redirect = await agent.authorize(
    {
      response_type: 'code',
      client_id: 'farm',
      redirect_uri: 'http://127.0.0.1:9/callback',
      code_challenge: challenge,
      code_challenge_method: 'S256',
    },
    ADMIN,
  );
  const code = redirect.searchParams.get('code')!;
  secrets.push(code, verifier);
  assert.ok(code, 'the authorization flow gave a code');
  const exchanged = await granted(
    tokenAt({
      grant_type: 'authorization_code',
      code,
      client_id: 'farm',
      redirect_uri: 'http://127.0.0.1:9/callback',
      code_verifier: verifier,
    }),
    'code exchange',
  );
  secrets.push(exchanged.access_token, exchanged.refresh_token);
  await tokenAt({
    grant_type: 'authorization_code',
    code,
    client_id: 'farm',
    redirect_uri: 'http://127.0.0.1:9/callback',
    code_verifier: verifier,
  });
  for (const value of agent.cookieValues()) secrets.push(value, value.split('.')[0]!);

  // A confidential client made with the CLI, using its secret.
  const created = await new Promise<string>((resolve) => {
    const cli = spawn(
      process.execPath,
      [
        BIN,
        'client',
        'create',
        '--id',
        'robot',
        '--confidential',
        '--grant',
        'client_credentials',
        '--user',
        ADMIN.name,
      ],
      { env: { ...process.env, ...database.env } },
    );
    let out = '';
    cli.stdout.on('data', (d) => (out += d));
    cli.on('exit', () => resolve(out));
  });
  const secret = /: (\S+)\n$/.exec(created)![1]!;
  secrets.push(secret);
  const machine = await granted(
    tokenAt({ grant_type: 'client_credentials' }, { Authorization: basic('robot', secret) }),
    'client credentials',
  );
  secrets.push(machine.access_token);
  await tokenAt({ grant_type: 'client_credentials', client_id: 'robot', client_secret: `${secret}x` });

  child.kill('SIGTERM');
  await exited;
  assert.match(output, /"url":"\/oauth\/token"/, 'requests were logged');
  assert.match(output, /"url":"\/oauth\/authorize\?/, 'authorization requests were logged');
  assert.ok(
    secrets.every((s) => typeof s === 'string' && s.length >= 8),
    'every credential to look for is a real one',
  );
  const leaked = secrets.filter((s) => output.includes(s!));
  assert.deepEqual(leaked, [], 'credentials found in the log');
});
