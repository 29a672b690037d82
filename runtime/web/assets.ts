/**
 * The pages' own scripts and their stylesheets (issue 42): browser entry points written in
 * TypeScript under runtime/web/browser/, bundled by esbuild with only the parts of their packages
 * (OpenLayers, uPlot) they import, minified, into the git-ignored .cache/assets/, and served by
 * Tilth under /farm/assets/ with their content's hash in the name: never from a CDN, never inline
 * (the pages' CSP is `script-src 'self'`).
 *
 * They are built at install time (`npm ci` runs scripts/build-assets.ts from the `prepare`
 * lifecycle) and again by the server at start when they are missing or stale: the manifest
 * records every file a build read and a hash of their contents, and a start that finds one
 * changed (a source edited, a package upgraded, this file changed) builds again and says so in
 * the log. Every output is written to a temporary name and renamed, so servers starting at once
 * never read half a file.
 *
 * Adding an entry point is one line in ASSET_ENTRIES; a page asks for it by name (layout.ts
 * `page(…, { assets: ['chart'] })`), which adds its `<script defer>` and, when its sources import
 * CSS, its `<link rel="stylesheet">`.
 */
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import type { Request, Response } from 'express';
import * as esbuild from 'esbuild';

/** The browser entry points: a name, and its file under runtime/web/browser/. One line each. */
export const ASSET_ENTRIES: ReadonlyArray<{ name: string; source: string }> = [
  { name: 'map', source: 'map.ts' },
  // helper `views`: readings and inventory charts (uPlot; web/charts.ts renders what it draws).
  { name: 'chart', source: 'chart.ts' },
];

/** Where the assets are served: /farm/assets/<name>.<hash>.<js|css>, beside the stylesheet (style.ts). */
export const ASSETS_PREFIX = '/farm/assets/';

const HERE = dirname(fileURLToPath(import.meta.url));
/** The checkout: runtime/web/ is two folders down. */
export const ASSETS_ROOT = join(HERE, '..', '..');
const BROWSER_DIR = join('runtime', 'web', 'browser');
const OUT_DIR = join('.cache', 'assets');
/** This file takes part in every key: a change to how assets are built makes the old ones stale. */
const BUILDER = join('runtime', 'web', 'assets.ts');

/** What a build made: each entry's files (names under OUT_DIR), the files it read, and their key. */
interface Manifest {
  key: string;
  inputs: string[];
  entries: Record<string, { js: string; css?: string }>;
}

/** One file as served: its bytes, compressed once, and its type. */
interface Served {
  type: string;
  body: Buffer;
  gzip: Buffer;
}

/** The assets a process serves, loaded once. */
interface Loaded {
  entries: Record<string, { js: string; css?: string }>;
  files: Map<string, Served>;
}

let loaded: Loaded | null = null;

/** The hash of the inputs' contents (paths relative to root), or null when one cannot be read (stale). */
function keyOf(root: string, inputs: readonly string[]): string | null {
  const hash = createHash('sha256');
  for (const input of inputs) {
    let content: Buffer;
    try {
      content = readFileSync(join(root, input));
    } catch {
      return null;
    }
    hash.update(`${input}\0${content.length}\0`).update(content);
  }
  return hash.digest('hex').slice(0, 32);
}

function readManifest(root: string): Manifest | null {
  try {
    const m = JSON.parse(readFileSync(join(root, OUT_DIR, 'manifest.json'), 'utf8')) as Manifest;
    return typeof m.key === 'string' && Array.isArray(m.inputs) && m.entries ? m : null;
  } catch {
    return null;
  }
}

/** Why the built assets cannot be used as they are, or null when they are fresh. */
export function staleReason(root = ASSETS_ROOT): string | null {
  const m = readManifest(root);
  if (!m) return 'none built yet';
  if (ASSET_ENTRIES.some((e) => !m.entries[e.name])) return 'an entry point was added';
  if (keyOf(root, m.inputs) !== m.key) return 'a source changed';
  return null;
}

function writeAtomically(file: string, content: string | Uint8Array): void {
  const temp = `${file}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`;
  writeFileSync(temp, content);
  renameSync(temp, file);
}

/**
 * Bundle every entry point: minified, for browsers of the last few years, each with the CSS its
 * sources import as a stylesheet of its own; the names carry the content's hash.
 */
export function buildAssets(root = ASSETS_ROOT): Manifest {
  const out = join(root, OUT_DIR);
  mkdirSync(out, { recursive: true });
  const result = esbuild.buildSync({
    absWorkingDir: root,
    entryPoints: Object.fromEntries(ASSET_ENTRIES.map((e) => [e.name, join(root, BROWSER_DIR, e.source)])),
    bundle: true,
    minify: true,
    format: 'iife',
    // What OpenLayers 10 itself is written for: browsers of the last few years, phones' too.
    target: ['es2021'],
    outdir: out,
    entryNames: '[name].[hash]',
    metafile: true,
    write: false,
    logLevel: 'silent',
    // OpenLayers' licence comment is kept, at the end of the file, as its licence asks.
    legalComments: 'eof',
  });
  const entries: Manifest['entries'] = {};
  for (const file of result.outputFiles) {
    writeAtomically(file.path, file.contents);
    const name = relative(out, file.path);
    const entry = name.split('.')[0]!;
    const slot = (entries[entry] ??= { js: '' });
    if (name.endsWith('.css')) slot.css = name;
    else slot.js = name;
  }
  const inputs = [...new Set([BUILDER, ...Object.keys(result.metafile.inputs)])].sort();
  const key = keyOf(root, inputs);
  if (!key) throw new Error('An input of the browser assets vanished during their build.');
  const manifest: Manifest = { key, inputs, entries };
  writeAtomically(join(out, 'manifest.json'), JSON.stringify(manifest));
  return manifest;
}

/**
 * The assets, built first when missing or stale (said in the log), loaded once per process.
 * A checkout the server may not write keeps serving pages without them (every page works
 * without script), and says why.
 */
export function ensureAssets(
  log: { info(o: object, m: string): void; warn(o: object, m: string): void },
  root = ASSETS_ROOT,
): void {
  if (loaded) return;
  let manifest = readManifest(root);
  const stale = staleReason(root);
  if (stale) {
    try {
      const started = Date.now();
      manifest = buildAssets(root);
      log.info({ reason: stale, ms: Date.now() - started, dir: join(root, OUT_DIR) }, 'browser assets built');
    } catch (err) {
      log.warn({ err, reason: stale }, 'browser assets could not be built: pages are served without their scripts');
      if (!manifest) {
        loaded = { entries: {}, files: new Map() };
        return;
      }
    }
  }
  const files = new Map<string, Served>();
  for (const slot of Object.values(manifest!.entries)) {
    for (const name of [slot.js, slot.css]) {
      if (!name) continue;
      const body = readFileSync(join(root, OUT_DIR, name));
      files.set(name, {
        type: name.endsWith('.css') ? 'text/css; charset=utf-8' : 'text/javascript; charset=utf-8',
        body,
        gzip: gzipSync(body, { level: 9 }),
      });
    }
  }
  loaded = { entries: manifest!.entries, files };
}

/** The path an entry point's script (or stylesheet) is served at, or null when it was not built. */
export function assetPath(name: string, kind: 'js' | 'css'): string | null {
  const file = loaded?.entries[name]?.[kind];
  return file ? `${ASSETS_PREFIX}${file}` : null;
}

/**
 * GET /farm/assets/<file>: a built asset, kept for a year (a new build has a new name), gzipped
 * when the browser takes it, never sniffed as another type. Anything else goes on (a 404).
 */
export function serveAsset(req: Request, res: Response, next: () => void): void {
  const file = loaded?.files.get(String(req.params.file));
  if (!file) return next();
  const gzip = /\bgzip\b/.test(String(req.headers['accept-encoding'] ?? ''));
  res
    .status(200)
    .set('Content-Type', file.type)
    .set('Cache-Control', 'public, max-age=31536000, immutable')
    .set('X-Content-Type-Options', 'nosniff')
    .set('Vary', 'Accept-Encoding');
  if (gzip) res.set('Content-Encoding', 'gzip');
  res.end(gzip ? file.gzip : file.body);
}
