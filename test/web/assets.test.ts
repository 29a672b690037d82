// The pages' own scripts (issue 42): built from runtime/web/browser/ by esbuild (at install, and
// at start when missing or stale), served by Tilth under /farm/assets/ with their content's hash
// in the name, cached for good, never sniffed, gzipped for a browser that takes it; the pages'
// CSP allows scripts from Tilth only, never inline.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { gunzipSync } from 'node:zlib';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { startTestServer, type TestServer } from '../support/server.ts';
import { ASSET_ENTRIES, ASSETS_ROOT, assetPath, staleReason } from '../../runtime/web/assets.ts';
import { PAGE_CSP, pageCsp } from '../../runtime/web/layout.ts';

let server: TestServer;

before(async () => {
  server = await startTestServer();
});
after(async () => {
  await server?.close();
});

test('every entry point is built, fresh, and served with a hashed name, a year of cache and nosniff', async () => {
  assert.equal(staleReason(), null, 'the server found or made a fresh build at start');
  for (const { name } of ASSET_ENTRIES) {
    const js = assetPath(name, 'js');
    assert.match(js ?? '', new RegExp(`^/farm/assets/${name}\\.[A-Z0-9]{8}\\.js$`));
    const plain = await fetch(`${server.url}${js}`, { headers: { 'Accept-Encoding': 'identity' } });
    assert.equal(plain.status, 200);
    assert.equal(plain.headers.get('content-type'), 'text/javascript; charset=utf-8');
    assert.equal(plain.headers.get('cache-control'), 'public, max-age=31536000, immutable');
    assert.equal(plain.headers.get('x-content-type-options'), 'nosniff');
    const body = Buffer.from(await plain.arrayBuffer());
    assert.deepEqual(body, readFileSync(join(ASSETS_ROOT, '.cache', 'assets', js!.split('/').pop()!)));
    // Minified: no line of the source's comments is left, and the file is one or a few lines.
    assert.ok(body.toString().split('\n').length < 50, 'minified');
    const zipped = await fetch(`${server.url}${js}`, {
      headers: { 'Accept-Encoding': 'gzip' },
      decompress: false,
    } as RequestInit);
    assert.equal(zipped.headers.get('content-encoding'), 'gzip');
    const raw = Buffer.from(await zipped.arrayBuffer());
    // fetch may have decoded it already; either way the bytes are the script's.
    assert.deepEqual(raw.length < body.length ? gunzipSync(raw) : raw, body);
    const css = assetPath(name, 'css');
    if (css) {
      const sheet = await fetch(`${server.url}${css}`);
      assert.equal(sheet.headers.get('content-type'), 'text/css; charset=utf-8');
      assert.equal(sheet.headers.get('x-content-type-options'), 'nosniff');
    }
  }
});

test("the pages' CSP: scripts from Tilth only, none inline; a tile server's origin added to images only", async () => {
  const res = await fetch(`${server.url}/farm/sign-in`);
  const csp = res.headers.get('content-security-policy')!;
  assert.equal(csp, PAGE_CSP);
  assert.match(csp, /script-src 'self';/);
  assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval|\*/);
  assert.match(pageCsp(['https://tiles.example.org']), /img-src 'self' https:\/\/tiles\.example\.org;.*/);
  assert.doesNotMatch(pageCsp(['https://tiles.example.org']), /script-src[^;]*example/);
});
