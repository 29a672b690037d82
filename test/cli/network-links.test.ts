// Links right on a network (issue 29 Part B, item 3): a server listening beyond loopback (HOST not
// 127.0.0.1) without TILTH_BASE_URL writes links to http://localhost:…, which a phone on the
// farm's network cannot follow. `tilth serve` says so at start, at warn level in its log and on
// stderr, naming the setting; it says nothing when the links are right.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { ROOT } from '../support/project.ts';
import { createTestDatabase } from '../support/server.ts';
import { freePort, stopProcess } from '../support/processes.ts';

/** Start `tilth serve --migrate` with `env`, wait until it serves, stop it; what it wrote. */
async function serveOnce(env: Record<string, string>): Promise<{ stdout: string; stderr: string }> {
  const database = await createTestDatabase();
  const port = await freePort();
  const child = spawn(process.execPath, ['bin/tilth.js', 'serve', '--migrate'], {
    cwd: ROOT,
    env: {
      ...process.env,
      PORT: String(port),
      TILTH_ADMIN_PASSWORD: 'network-links-test',
      TILTH_LOG_LEVEL: 'info',
      TILTH_LOG_FORMAT: 'json',
      TILTH_BASE_URL: '',
      ...database.env,
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<void>((resolve) => child.once('close', () => resolve()));
  let stdout = '';
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  try {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`not serving within 60 s:\n${stdout}\n${stderr}`)), 60_000);
      child.stdout!.on('data', (chunk: Buffer) => {
        stdout += chunk.toString();
        if (stdout.includes('Tilth is serving')) {
          clearTimeout(timer);
          resolve();
        }
      });
      child.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`exited with ${code}:\n${stdout}\n${stderr}`));
      });
    });
  } finally {
    await stopProcess(child, exited);
    await database.drop();
  }
  return { stdout, stderr };
}

const warnings = (stdout: string) =>
  stdout
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as { level: number; msg: string })
    .filter((line) => line.level === 40);

test('listening on the network without TILTH_BASE_URL: a warning naming TILTH_BASE_URL, in the log and on stderr', async () => {
  const { stdout, stderr } = await serveOnce({ HOST: '0.0.0.0' });
  const logged = warnings(stdout).filter((w) => /TILTH_BASE_URL/.test(w.msg));
  assert.equal(logged.length, 1, `one warning in the log:\n${stdout}`);
  assert.match(logged[0]!.msg, /HOST=0\.0\.0\.0/);
  assert.match(logged[0]!.msg, /http:\/\/localhost:\d+/, 'it says what the links say now');
  assert.match(logged[0]!.msg, /TILTH_BASE_URL=http:\/\/[^\s]+:\d+/, 'and gives an example to set');
  assert.match(stderr, /TILTH_BASE_URL/, `and on stderr:\n${stderr}`);
});

test('no warning when the links are right: TILTH_BASE_URL set, or listening on loopback only', async () => {
  for (const env of [{ HOST: '0.0.0.0', TILTH_BASE_URL: 'http://farm.example:8080' }, { HOST: '127.0.0.1' }] as Array<
    Record<string, string>
  >) {
    const { stdout, stderr } = await serveOnce(env);
    assert.deepEqual(
      warnings(stdout).map((w) => w.msg),
      [],
      JSON.stringify(env),
    );
    assert.doesNotMatch(stderr, /TILTH_BASE_URL/, JSON.stringify(env));
  }
});
