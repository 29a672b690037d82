// TILTH_PASSWORD_HASH: by default new password hashes are argon2id with argon2's own parameters
// (64 MiB, 3 passes, 4 lanes); `owasp-minimum` makes OWASP's floor (19 MiB, 2 passes, 1 lane);
// a hash made under one setting is checked under the other, so changing it locks nobody out; a
// wrong value is refused naming the variable. (The suite itself runs with `owasp-minimum`.)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { loadConfig, ConfigError } from '../../runtime/config.ts';

const root = new URL('../..', import.meta.url).pathname;

/** Hash `password` in a fresh process with TILTH_PASSWORD_HASH as given (unset when undefined). */
function hashIn(setting: string | undefined, password: string): string {
  const env: NodeJS.ProcessEnv = { ...process.env };
  delete env.TILTH_PASSWORD_HASH;
  if (setting !== undefined) env.TILTH_PASSWORD_HASH = setting;
  const script = `import { hashPassword } from './runtime/accounts/passwords.ts'; process.stdout.write(await hashPassword(${JSON.stringify(password)}));`;
  const run = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
    cwd: root,
    env,
    encoding: 'utf8',
  });
  assert.equal(run.status, 0, run.stderr);
  return run.stdout;
}

/** The algorithm and parameters a PHC-format hash records ($argon2id$v=19$m=…,t=…,p=…$salt$hash). */
function parameters(hash: string) {
  const [, algorithm, , list] = hash.split('$');
  return {
    algorithm,
    ...Object.fromEntries(list!.split(',').map((pair) => [pair.split('=')[0], Number(pair.split('=')[1])])),
  };
}

test('new password hashes are argon2id with argon2’s own parameters unless TILTH_PASSWORD_HASH says otherwise', async () => {
  assert.deepEqual(parameters(hashIn(undefined, 'a farmer’s password')), {
    algorithm: 'argon2id',
    m: 65536,
    t: 3,
    p: 4,
  });
  assert.deepEqual(parameters(hashIn('strong', 'a farmer’s password')), {
    algorithm: 'argon2id',
    m: 65536,
    t: 3,
    p: 4,
  });
  const cheaper = hashIn('owasp-minimum', 'a farmer’s password');
  assert.deepEqual(parameters(cheaper), { algorithm: 'argon2id', m: 19456, t: 2, p: 1 });
  // Checked by the same code whatever the setting now is: the hash carries its parameters.
  const { verifyPassword } = await import('../../runtime/accounts/passwords.ts');
  assert.equal(await verifyPassword(cheaper, 'a farmer’s password'), true);
  assert.equal(await verifyPassword(cheaper, 'a guess'), false);
});

test('a wrong TILTH_PASSWORD_HASH is refused at start, naming the variable', () => {
  assert.throws(
    () => loadConfig({ TILTH_PASSWORD_HASH: 'weak' }),
    (e: unknown) =>
      e instanceof ConfigError &&
      /TILTH_PASSWORD_HASH must be "strong" or "owasp-minimum"; it is "weak"/.test(e.message),
  );
  assert.equal(loadConfig({}).passwordHash, 'strong');
});

test('a hash made with other parameters is made again at the next successful sign-in, and a wrong password changes nothing', async (t) => {
  // An account whose hash predates today's setting (here: argon2's defaults, while the suite's
  // server makes owasp-minimum hashes). After one right sign-in its check costs what everyone's
  // does, and a change of TILTH_PASSWORD_HASH reaches existing accounts.
  const { startTestServer } = await import('../support/server.ts');
  const { addUser, token } = await import('../oauth/helpers.ts');
  const argon2 = (await import('argon2')).default;
  const server = await startTestServer({ env: { TILTH_PASSWORD_HASH: 'owasp-minimum' } });
  t.after(() => server.close());
  const user = await addUser(server, ['farm_worker']);
  const knex = server.ctx.db.knex;
  const older = await argon2.hash(user.password, {
    type: argon2.argon2id,
    memoryCost: 65_536,
    timeCost: 3,
    parallelism: 4,
  });
  await knex('users').where('name', user.name).update({ pass: older });
  const stored = async () => (await knex('users').where('name', user.name).first('pass')).pass as string;

  assert.equal(
    (await token(server, { grant_type: 'password', client_id: 'farm', username: user.name, password: 'not it' }))
      .status,
    400,
  );
  assert.equal(await stored(), older, 'a wrong password changes nothing');
  assert.equal(
    (await token(server, { grant_type: 'password', client_id: 'farm', username: user.name, password: user.password }))
      .status,
    200,
  );
  const renewed = await stored();
  assert.deepEqual(parameters(renewed), { algorithm: 'argon2id', m: 19456, t: 2, p: 1 });
  assert.equal(
    (await token(server, { grant_type: 'password', client_id: 'farm', username: user.name, password: user.password }))
      .status,
    200,
    'the new hash signs in',
  );
  assert.equal(await stored(), renewed, 'and is not made again');
});
