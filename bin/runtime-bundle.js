// @ts-check
/**
 * The runtime as one JavaScript file, so that `tilth` starts without a TypeScript loader: loading
 * ~190 modules through tsx's hooks was most of a start (issue 28, bench/README.md). The sources
 * stay what runs: the bundle is made from them by esbuild (tsx's own dependency) on demand, in the
 * git-ignored .cache/runtime/, and is used only while every file it was made from has the same
 * content; otherwise it is made again. When it cannot be made, bin/tilth.js runs the sources
 * through tsx as before.
 *
 * Files are content-addressed (main-<key>.mjs, the key a hash of the inputs' contents), and
 * manifest.json names the latest with its inputs: each is written to a temporary name and
 * renamed, so processes starting at once never read half a file, and a process imports exactly
 * the bundle whose inputs it checked.
 */
import { createHash } from 'node:crypto';
import {
  accessSync,
  constants,
  existsSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

export const ROOT = fileURLToPath(new URL('..', import.meta.url));
const ENTRY = 'runtime/cli/main.ts';
/** Bundles other than the latest are removed once this old (a process may be about to import one). */
const STALE_AFTER_MS = 3600_000;

/** This file is part of every key: a change to how bundles are made makes the old ones stale. */
const BUILDER = readFileSync(fileURLToPath(import.meta.url));

/**
 * The key of a bundle of `root` made from `inputs` (paths relative to root) with these contents:
 * the root is in it because the bundle holds each source's absolute URL (a copied checkout must
 * not run the original's files). null when an input cannot be read (gone: stale).
 * @param {string} root
 * @param {readonly string[]} inputs
 * @param {(path: string) => Buffer | string} read
 */
export function bundleKey(root, inputs, read = (path) => readFileSync(path)) {
  const hash = createHash('sha256')
    .update(BUILDER)
    .update(`\0${resolve(root)}\0`);
  for (const input of inputs) {
    let content;
    try {
      content = read(join(root, input));
    } catch {
      return null;
    }
    hash.update(`${input}\0${Buffer.byteLength(content)}\0`).update(content);
  }
  return hash.digest('hex').slice(0, 32);
}

/**
 * The file URL of a bundle made from the sources as they are now, or null when there is none
 * and one cannot be made (the caller falls back to tsx).
 * @param {{ root?: string, build?: boolean }} [options] build: false only checks (tests)
 * @returns {Promise<string | null>}
 */
export async function runtimeBundle({ root = ROOT, build = true } = {}) {
  const dir = join(root, '.cache', 'runtime');
  const fresh = freshBundle(dir, root);
  if (fresh || !build) return fresh;
  try {
    return await buildBundle(dir, root);
  } catch {
    return null;
  }
}

/**
 * The latest bundle if every input still has the content it was made from.
 * @param {string} dir
 * @param {string} root
 */
function freshBundle(dir, root) {
  /** @type {{ key?: unknown, inputs?: unknown }} */
  let manifest;
  try {
    manifest = JSON.parse(readFileSync(join(dir, 'manifest.json'), 'utf8'));
  } catch {
    return null;
  }
  if (typeof manifest.key !== 'string' || !Array.isArray(manifest.inputs)) return null;
  if (bundleKey(root, manifest.inputs) !== manifest.key) return null;
  const file = join(dir, `main-${manifest.key}.mjs`);
  return existsSync(file) ? pathToFileURL(file).href : null;
}

/**
 * Bundle the runtime's CLI, its packages left as imports. Each source's `import.meta.url`,
 * `.dirname` and `.filename` are replaced with its own, since code finds files beside it
 * (package.json, core migrations, swagger-ui's assets). The key is made from the very contents
 * esbuild bundled, so an edit during the build makes a bundle that the next start finds stale.
 * @param {string} dir
 * @param {string} root
 */
async function buildBundle(dir, root) {
  // A checkout the server may not write (systemd's ProtectSystem, a container's root-owned /app)
  // runs through tsx without paying for a build it could not keep; its installer makes the bundle.
  mkdirSync(dir, { recursive: true });
  accessSync(dir, constants.W_OK);
  const esbuild = /** @type {typeof import('esbuild')} */ (
    createRequire(createRequire(join(root, 'package.json')).resolve('tsx/package.json'))('esbuild')
  );
  /** @type {Map<string, Buffer>} */
  const read = new Map();
  const result = await esbuild.build({
    absWorkingDir: root,
    entryPoints: [join(root, ENTRY)],
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: `node${process.versions.node.split('.')[0]}`,
    packages: 'external',
    outfile: join(dir, 'main.mjs'),
    sourcemap: 'linked',
    write: false,
    logLevel: 'silent',
    plugins: [
      {
        name: 'sources-where-they-are',
        setup(build) {
          build.onLoad({ filter: /\.(ts|mts|js|mjs|json)$/ }, (args) => {
            const content = readFileSync(args.path);
            read.set(relative(root, args.path), content);
            const ext = /** @type {'ts' | 'js' | 'json'} */ (
              args.path.endsWith('.json') ? 'json' : args.path.endsWith('ts') ? 'ts' : 'js'
            );
            if (ext === 'json') return { contents: content, loader: 'json' };
            const own = { url: pathToFileURL(args.path).href, filename: args.path, dirname: dirname(args.path) };
            const text = content
              .toString('utf8')
              .replace(/\bimport\.meta\.(url|dirname|filename)\b/g, (_, part) =>
                JSON.stringify(own[/** @type {'url' | 'dirname' | 'filename'} */ (part)]),
              );
            return { contents: text, loader: ext };
          });
        },
      },
    ],
  });
  const inputs = [...read.keys()].sort();
  const key = bundleKey(root, inputs, (path) => /** @type {Buffer} */ (read.get(relative(root, path))));
  if (!key) return null;
  const name = `main-${key}.mjs`;
  const code = result.outputFiles.find((f) => f.path.endsWith('.mjs'));
  const map = result.outputFiles.find((f) => f.path.endsWith('.map'));
  if (!code || !map) return null;
  writeAtomically(join(dir, `${name}.map`), map.contents);
  writeAtomically(
    join(dir, name),
    code.text.replace(/\/\/# sourceMappingURL=main\.mjs\.map\s*$/, `//# sourceMappingURL=${name}.map\n`),
  );
  writeAtomically(join(dir, 'manifest.json'), JSON.stringify({ key, inputs }));
  removeOld(dir, name);
  return pathToFileURL(join(dir, name)).href;
}

/**
 * @param {string} file
 * @param {string | Uint8Array} content
 */
function writeAtomically(file, content) {
  const temp = `${file}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`;
  writeFileSync(temp, content);
  renameSync(temp, file);
}

/**
 * @param {string} dir
 * @param {string} keep
 */
function removeOld(dir, keep) {
  for (const file of readdirSync(dir)) {
    if (file === 'manifest.json' || file.startsWith(keep)) continue;
    try {
      if (Date.now() - statSync(join(dir, file)).mtimeMs > STALE_AFTER_MS) rmSync(join(dir, file), { force: true });
    } catch {
      // Another process removed it first.
    }
  }
}
