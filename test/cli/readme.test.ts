// The README's first recipe works as written (operations issue, item 10): the token request with
// --data-urlencode takes a password with + & = in it, and a wrong password is reported, not
// passed on as a token; the tour's term and upload calls then work with that token.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from '../support/project.ts';
import { createTestDatabase } from '../support/server.ts';
import { startChildServer } from '../support/child-server.ts';
import { request } from '../support/http.ts';

/** The shell block that follows `marker` in the README. */
function block(marker: string): string {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const at = readme.indexOf(marker);
  assert.ok(at >= 0, marker);
  return /```sh\n([\s\S]*?)```/.exec(readme.slice(at))![1]!;
}

test('the README token recipe gets a token, and says so when it cannot', async () => {
  const database = await createTestDatabase();
  const password = 'p+ss&word=with spaces';
  const server = await startChildServer(database.env, { TILTH_ADMIN_PASSWORD: password });
  try {
    const recipe = (pass: string) =>
      spawnSync('bash', ['-c', `${block('Get a token with the default').replace('BASE=http://localhost:8080', `BASE=${server.url}`).replace("'password=the password'", `'password=${pass}'`)}\nprintf '%s' "$TOKEN"`], { encoding: 'utf8' });
    const ok = recipe(password);
    assert.equal(ok.stderr, '', 'no complaint');
    assert.equal((await request(`${server.url}/api/log/activity`, { token: ok.stdout })).status, 200, 'the token works');
    const wrong = recipe('not it');
    assert.match(wrong.stderr, /^No token: .*invalid_grant/);
  } finally {
    await server.stop();
    await database.drop();
  }
});
