// Logs people can read (operations issue, item 5): the start-up lines are log lines like every
// other; failed sign-ins and refused tokens are warnings; a generated password reaches the
// terminal once and never a log line.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT } from '../support/project.ts';
import { freePort } from '../support/child-server.ts';

test(
  'start-up lines, failed sign-ins and refused tokens are log lines; the generated password is not',
  { skip: Boolean(process.env.DATABASE_URL) && 'runs on the embedded SQLite database only' },
  async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'tilth-logs-'));
    const port = await freePort();
    const child = spawn(process.execPath, [join(ROOT, 'bin', 'tilth.js'), 'serve', '--migrate'], {
      env: {
        ...process.env,
        TILTH_DATA_DIR: dataDir,
        PORT: String(port),
        DATABASE_URL: '',
        TILTH_ADMIN_PASSWORD: '',
        TILTH_LOG_LEVEL: 'info',
        TILTH_LOG_FORMAT: 'json',
      },
    });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    try {
      for (const deadline = Date.now() + 30_000; !/password: \S+/.test(out) && Date.now() < deadline;)
        await new Promise((r) => setTimeout(r, 100));
      const password = /password: (\S+)/.exec(out)![1]!;
      const base = `http://127.0.0.1:${port}`;
      const wrong = await fetch(`${base}/oauth/token`, {
        method: 'POST',
        body: new URLSearchParams({
          grant_type: 'password',
          client_id: 'farm',
          username: 'admin',
          password: 'not the password',
        }),
      });
      assert.equal(wrong.status, 400);
      assert.equal(
        (await fetch(`${base}/api/log/activity`, { headers: { Authorization: 'Bearer stale-token' } })).status,
        401,
      );
      await new Promise((r) => setTimeout(r, 300));

      const lines = out.split('\n').filter(Boolean);
      const logs = lines
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l) as { level: number; msg: string; userId?: number; reason?: string });
      assert.ok(
        logs.some((l) => l.level === 30 && /Tilth is serving .* at http:\/\/localhost:\d+\/api/.test(l.msg)),
        'where it serves is a log line',
      );
      assert.ok(
        logs.some((l) => l.level === 40 && /failed sign-in/.test(l.msg) && l.userId === 1),
        'a failed sign-in is a warning naming the account',
      );
      assert.ok(
        logs.some((l) => l.level === 40 && /refused access token/.test(l.msg) && l.reason === 'unknown'),
        'a refused token is a warning',
      );
      const mentions = lines.filter((l) => l.includes(password));
      assert.equal(mentions.length, 1, 'the password is printed once');
      assert.ok(!mentions[0]!.startsWith('{'), 'and never as a log line');
      assert.ok(!out.includes('not the password'), 'nor is a wrong password');
    } finally {
      child.kill('SIGTERM');
      await new Promise((r) => child.once('exit', r));
      rmSync(dataDir, { recursive: true, force: true });
    }
  },
);
