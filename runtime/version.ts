/**
 * Versions: Tilth's own, and the farmOS API major version it speaks (meta.farm.version).
 *
 * Tilth's version is package.json's `version`, which each release raises (CHANGELOG.md names it),
 * and, when the code runs from a git checkout, the commit it is at as semver build metadata:
 * `2.0.0+1a2b3c4d5e6f`. So two servers between releases never claim the same version; a copy
 * without `.git` (a container image, a tarball) says the release alone. The commit is read from
 * the files git writes (HEAD, the ref it names, packed-refs, a worktree's commondir), without
 * running git, once at start.
 */
import { existsSync, readFileSync, statSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { join, resolve } from 'node:path';

export const TILTH_API_VERSION = '2.x';

const SHA = /^[0-9a-f]{40}$/;

/** The commit checked out at `root`, or null when there is no git checkout (or no commit yet). */
function gitCommit(root: string): string | null {
  try {
    let gitDir = join(root, '.git');
    if (!existsSync(gitDir)) return null;
    if (statSync(gitDir).isFile()) {
      const named = /^gitdir:\s*(.+)$/m.exec(readFileSync(gitDir, 'utf8'))?.[1]?.trim();
      if (!named) return null;
      gitDir = resolve(root, named);
    }
    const head = readFileSync(join(gitDir, 'HEAD'), 'utf8').trim();
    if (SHA.test(head)) return head;
    const ref = /^ref:\s*(\S+)$/.exec(head)?.[1];
    if (!ref) return null;
    const common = existsSync(join(gitDir, 'commondir'))
      ? resolve(gitDir, readFileSync(join(gitDir, 'commondir'), 'utf8').trim())
      : gitDir;
    for (const dir of [gitDir, common]) {
      const file = join(dir, ref);
      if (existsSync(file)) {
        const sha = readFileSync(file, 'utf8').trim();
        return SHA.test(sha) ? sha : null;
      }
    }
    const packed = join(common, 'packed-refs');
    if (!existsSync(packed)) return null;
    for (const line of readFileSync(packed, 'utf8').split('\n')) {
      const [sha, name] = line.trim().split(' ');
      if (name === ref && sha && SHA.test(sha)) return sha;
    }
    return null;
  } catch {
    return null;
  }
}

/** The version of the Tilth at `root`: its package.json version, plus `+` and 12 digits of its commit when it is a git checkout. */
export function versionOf(root: string): string {
  const release = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).version as string;
  const commit = gitCommit(root);
  return commit ? `${release}+${commit.slice(0, 12)}` : release;
}

export const TILTH_VERSION: string = versionOf(fileURLToPath(new URL('..', import.meta.url)));
