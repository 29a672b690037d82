// The version changes with each release and between them (issue 29 Part B, item 6): package.json's
// version, and, run from a git checkout, the commit (`2.0.0+1a2b3c4d5e6f`), the same in
// `tilth --version`, `/health`, the front door and backups. A copy without .git (a container
// image) says the release alone.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT } from '../support/project.ts';
import { startTestServer } from '../support/server.ts';
import { request } from '../support/http.ts';
import { versionOf } from '../../runtime/version.ts';

const release = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).version as string;
const head = spawnSync('git', ['rev-parse', 'HEAD'], { cwd: ROOT, encoding: 'utf8' });
const expected = head.status === 0 ? `${release}+${head.stdout.trim().slice(0, 12)}` : release;

test('tilth --version and /health say the release and the commit this checkout is at', async () => {
  const cli = spawnSync(process.execPath, [join(ROOT, 'bin', 'tilth.js'), '--version'], { encoding: 'utf8' });
  assert.equal(cli.status, 0, cli.stderr);
  assert.equal(cli.stdout, `tilth ${expected} (farmOS API 2.x)\n`);
  const server = await startTestServer();
  try {
    const health = await request(`${server.url}/health`);
    assert.equal(health.body.version, expected);
  } finally {
    await server.close();
  }
});

test('the commit is read from .git as git writes it: a branch, packed refs, a worktree, a detached HEAD; none without .git', () => {
  const dir = mkdtempSync(join(tmpdir(), 'tilth-version-'));
  try {
    const sha = (c: string) => c.repeat(40);
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ version: '9.9.9' }));
    assert.equal(versionOf(dir), '9.9.9', 'no .git: the release alone');
    mkdirSync(join(dir, '.git', 'refs', 'heads'), { recursive: true });
    writeFileSync(join(dir, '.git', 'HEAD'), 'ref: refs/heads/main\n');
    writeFileSync(join(dir, '.git', 'refs', 'heads', 'main'), `${sha('a')}\n`);
    assert.equal(versionOf(dir), `9.9.9+${sha('a').slice(0, 12)}`, 'a branch');
    rmSync(join(dir, '.git', 'refs', 'heads', 'main'));
    writeFileSync(
      join(dir, '.git', 'packed-refs'),
      `# pack-refs with: peeled fully-peeled sorted\n${sha('b')} refs/heads/main\n`,
    );
    assert.equal(versionOf(dir), `9.9.9+${sha('b').slice(0, 12)}`, 'a packed ref');
    writeFileSync(join(dir, '.git', 'HEAD'), `${sha('c')}\n`);
    assert.equal(versionOf(dir), `9.9.9+${sha('c').slice(0, 12)}`, 'a detached HEAD');
    // A worktree: .git is a file naming its git directory, whose commondir holds the refs.
    const worktree = join(dir, 'wt');
    mkdirSync(join(worktree));
    writeFileSync(join(worktree, 'package.json'), JSON.stringify({ version: '9.9.9' }));
    mkdirSync(join(dir, '.git', 'worktrees', 'wt'), { recursive: true });
    writeFileSync(join(worktree, '.git'), `gitdir: ${join(dir, '.git', 'worktrees', 'wt')}\n`);
    writeFileSync(join(dir, '.git', 'worktrees', 'wt', 'HEAD'), 'ref: refs/heads/feature\n');
    writeFileSync(join(dir, '.git', 'worktrees', 'wt', 'commondir'), '../..\n');
    writeFileSync(join(dir, '.git', 'refs', 'heads', 'feature'), `${sha('d')}\n`);
    assert.equal(versionOf(worktree), `9.9.9+${sha('d').slice(0, 12)}`, 'a worktree');
    writeFileSync(join(dir, '.git', 'worktrees', 'wt', 'HEAD'), 'ref: refs/heads/unborn\n');
    assert.equal(versionOf(worktree), '9.9.9', 'a branch with no commit yet: the release alone');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
