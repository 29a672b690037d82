// A backup carries the farm's keys (issue 39): the access tokens' signing key lives in the
// database beside the cookie key, so a signed-in client's token from before a restore still works
// on the restored farm, and the farm goes on signing with the same key.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT } from '../support/project.ts';
import { createTestDatabase, ADMIN } from '../support/server.ts';
import { startChildServer } from '../support/child-server.ts';
import { request, passwordToken } from '../support/http.ts';

function tilth(args: string[], env: Record<string, string>) {
  return spawnSync(process.execPath, [join(ROOT, 'bin', 'tilth.js'), ...args], {
    encoding: 'utf8',
    env: { ...process.env, TILTH_LOG_LEVEL: 'silent', DATABASE_URL: '', ...env },
    timeout: 120_000,
  });
}

const keyId = (jwt: string) => JSON.parse(Buffer.from(jwt.split('.')[0]!, 'base64url').toString('utf8')).kid;

test('an access token from before a backup still works on the farm restored from it, which signs with the same key', async () => {
  const source = await createTestDatabase();
  const target = await createTestDatabase();
  const dir = mkdtempSync(join(tmpdir(), 'tilth-backup-keys-'));
  const file = join(dir, 'farm.tar.gz');
  try {
    const server = await startChildServer(source.env);
    const token = await passwordToken(server.url, ADMIN.name, ADMIN.password);
    const me = (await request(`${server.url}/api`, { token })).body.meta.links.me.meta.id;
    const backedUp = tilth(['backup', file], source.env);
    assert.equal(backedUp.status, 0, backedUp.stderr);
    await server.stop();

    const restored = tilth(['restore', file], target.env);
    assert.equal(restored.status, 0, restored.stderr);
    const copy = await startChildServer(target.env);
    try {
      const res = await request(`${copy.url}/api`, { token });
      assert.equal(res.status, 200, res.text);
      assert.equal(res.body.meta.links.me.meta.id, me, 'the same user');
      const fresh = await passwordToken(copy.url, ADMIN.name, ADMIN.password);
      assert.equal(keyId(fresh), keyId(token), 'signed with the restored key');
    } finally {
      await copy.stop();
    }
  } finally {
    await source.drop();
    await target.drop();
    rmSync(dir, { recursive: true, force: true });
  }
});
