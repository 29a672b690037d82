// Uploads and request bodies an attacker controls (trust issue, part A 6, 8-11): a slow upload
// holds up nobody and a stalled one ends with 408 leaving nothing behind (nor does one whose
// process died: the next start removes it); a corrupt compressed
// body is a 400; an image field takes only images; file names arrive intact; downloads are not
// cached by anyone in between.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { readdirSync, existsSync, mkdirSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { createTestDatabase, startTestServer, startTestServerAsAdmin, type TestServer } from '../support/server.ts';
import { request } from '../support/http.ts';

let server: TestServer;
let token: string;

before(
  async () =>
    ({ server, token } = await startTestServerAsAdmin({
      env: { TILTH_BODY_TIMEOUT: '1', TILTH_UPLOAD_MAX_BYTES: '100000' },
    })),
);
after(() => server.close());

const PNG = Buffer.concat([
  Buffer.from('89504e470d0a1a0a0000000d4948445200000001000000010806000000', 'hex'),
  Buffer.from('1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082', 'hex'),
]);

function upload(path: string, body: Buffer | string, disposition: string, headers: Record<string, string> = {}) {
  return request(`${server.url}${path}`, {
    method: 'POST',
    token,
    body: typeof body === 'string' ? body : new Uint8Array(body),
    headers: { 'Content-Type': 'application/octet-stream', 'Content-Disposition': disposition, ...headers },
  });
}

/** Open an upload that sends `bytes` bytes of a declared `length`, `chunk` bytes every `everyMs`. */
function trickle(
  path: string,
  length: number,
  bytes: number,
  chunk: number,
  everyMs: number,
): { done: Promise<string>; sent: () => number } {
  const { port } = new URL(server.url);
  const socket = connect(Number(port), '127.0.0.1');
  let sent = 0;
  let answer = '';
  const done = new Promise<string>((resolve) => {
    socket.on('data', (d) => (answer += d));
    socket.on('close', () => resolve(answer));
    socket.on('error', () => resolve(answer));
  });
  socket.write(
    `POST ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/octet-stream\r\nContent-Disposition: file; filename="slow.txt"\r\nContent-Length: ${length}\r\nConnection: close\r\n\r\n`,
  );
  const timer = setInterval(() => {
    if (sent >= bytes) return clearInterval(timer);
    socket.write('x'.repeat(chunk));
    sent += chunk;
  }, everyMs);
  return { done, sent: () => sent };
}

const tmpFiles = () =>
  existsSync(join(server.config.dataDir, 'files', 'tmp'))
    ? readdirSync(join(server.config.dataDir, 'files', 'tmp'))
    : [];
const fileCount = async () => Number((await server.ctx.db.knex('files').count({ n: '*' }))[0]!.n);

test('a slow upload holds up no other request', async () => {
  const slow = trickle('/api/log/activity/file', 60, 60, 6, 150); // 1.5 s to send, under the stall timeout
  await new Promise((r) => setTimeout(r, 200));
  const read = await request(`${server.url}/api/log/activity`, { token });
  const write = await request(`${server.url}/api/log/activity`, {
    method: 'POST',
    token,
    json: { data: { type: 'log--activity', attributes: { name: 'Meanwhile' } } },
  });
  assert.equal(read.status, 200);
  assert.equal(write.status, 201, write.text);
  assert.ok(
    slow.sent() < 60,
    `the other requests were answered while the upload was still arriving (${slow.sent()} of 60 bytes sent)`,
  );
  assert.match(await slow.done, /^HTTP\/1\.1 201/);
});

test('an upload that stalls longer than TILTH_BODY_TIMEOUT ends with 408 and leaves nothing behind', async () => {
  const before = await fileCount();
  const stalled = trickle('/api/log/activity/file', 1000, 20, 10, 50);
  const answer = await stalled.done;
  assert.match(answer, /^HTTP\/1\.1 408/);
  assert.match(answer, /"status":"408"/);
  assert.equal(await fileCount(), before, 'no file record');
  assert.deepEqual(tmpFiles(), [], 'no temporary file');
});

test('a corrupt compressed body is a 400 naming Content-Encoding; without a token it is not read at all (401)', async () => {
  for (const encoding of ['gzip', 'deflate', 'br']) {
    const res = await request(`${server.url}/api/log/activity`, {
      method: 'POST',
      token,
      body: 'not compressed',
      headers: { 'Content-Type': 'application/vnd.api+json', 'Content-Encoding': encoding },
    });
    assert.equal(res.status, 400, `${encoding}: ${res.text}`);
    assert.match(res.body.errors[0].detail, /Content-Encoding/);
    const anonymous = await request(`${server.url}/api/log/activity`, {
      method: 'POST',
      body: 'not compressed',
      headers: { 'Content-Type': 'application/vnd.api+json', 'Content-Encoding': encoding },
    });
    assert.equal(anonymous.status, 401, `${encoding}: ${anonymous.text}`);
  }
  const batch = await request(`${server.url}/subrequests?_format=json`, {
    method: 'POST',
    token,
    body: 'junk',
    headers: { 'Content-Type': 'application/json', 'Content-Encoding': 'gzip' },
  });
  assert.equal(batch.status, 400);
  const file = await upload('/api/log/activity/file', 'junk', 'file; filename="a.txt"', { 'Content-Encoding': 'gzip' });
  assert.equal(file.status, 400, file.text);
  assert.match(file.body.errors[0].detail, /Content-Encoding/);
  const good = await upload('/api/log/activity/file', gzipSync('hello'), 'file; filename="hello.txt"', {
    'Content-Encoding': 'gzip',
  });
  assert.equal(good.status, 201, good.text);
  assert.equal(good.body.data.attributes.filesize, 5, 'a compressed upload is stored decompressed');
  const unknown = await request(`${server.url}/api/log/activity`, {
    method: 'POST',
    token,
    body: '{}',
    headers: { 'Content-Type': 'application/vnd.api+json', 'Content-Encoding': 'zstd-but-not' },
  });
  assert.equal(unknown.status, 415);
});

test('an image field takes only images whose content matches their name, within the size limit', async () => {
  const asset = await request(`${server.url}/api/asset/equipment`, {
    method: 'POST',
    token,
    json: { data: { type: 'asset--equipment', attributes: { name: 'Tractor' } } },
  });
  const path = `/api/asset/equipment/${asset.body.data.id}/image`;
  const before = await fileCount();
  const fake = await upload(path, Buffer.from('#!/bin/sh\necho pwned\n'), 'file; filename="tractor.png"');
  assert.equal(fake.status, 422, fake.text);
  assert.match(fake.body.errors[0].detail, /^image: /);
  const mislabelled = await upload(path, PNG, 'file; filename="tractor.jpg"');
  assert.equal(mislabelled.status, 422, 'a PNG named .jpg');
  assert.equal(await fileCount(), before, 'nothing was stored');
  assert.deepEqual(tmpFiles(), []);
  const real = await upload(path, PNG, 'file; filename="tractor.png"');
  assert.equal(real.status, 200, real.text);
  const big = await upload('/api/log/activity/file', Buffer.alloc(100_001, 1), 'file; filename="big.txt"');
  assert.equal(big.status, 413);
  assert.match(big.body.errors[0].detail, /TILTH_UPLOAD_MAX_BYTES|100000|bytes/);
});

test('file names: filename* and UTF-8 bytes decoded, control characters stripped', async () => {
  const star = await upload(
    '/api/log/activity/file',
    'a',
    `file; filename="fallback.txt"; filename*=UTF-8''f%C3%A4rm_%F0%9F%90%84.txt`,
  );
  assert.equal(star.status, 201, star.text);
  assert.equal(star.body.data.attributes.filename, 'färm_🐄.txt');
  // farmOS.js sends the name's UTF-8 bytes as they are.
  const { port } = new URL(server.url);
  const raw = await new Promise<string>((resolve) => {
    const socket = connect(Number(port), '127.0.0.1');
    let answer = '';
    socket.on('data', (d) => (answer += d));
    socket.on('close', () => resolve(answer));
    socket.write(
      Buffer.concat([
        Buffer.from(
          `POST /api/log/activity/file HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/octet-stream\r\nContent-Length: 1\r\nConnection: close\r\nContent-Disposition: file; filename="`,
        ),
        Buffer.from('färm_🐄\t.txt', 'utf8'), // (a tab: Node itself refuses other control bytes in headers)
        Buffer.from('"\r\n\r\na'),
      ]),
    );
  });
  assert.match(raw, /^HTTP\/1\.1 201/);
  // (The same name again: stored under a new one, as Drupal renames.)
  assert.equal(JSON.parse(raw.slice(raw.indexOf('\r\n\r\n') + 4)).data.attributes.filename, 'färm_🐄_0.txt');
});

test('a file with a non-ASCII name downloads under that name (RFC 6266)', async () => {
  const res = await upload('/api/log/activity/file', 'moo', `file; filename*=UTF-8''k%C3%BChe.txt`);
  assert.equal(res.status, 201, res.text);
  const download = await fetch(`${server.url}${res.body.data.attributes.uri.url}`, {
    headers: { Authorization: `Bearer ${token}` },
  });
  assert.equal(download.status, 200);
  assert.match(download.headers.get('content-disposition')!, /filename\*=UTF-8''k%C3%BChe\.txt/);
  assert.equal(await download.text(), 'moo');
  const disguised = await upload('/api/log/activity/file', 'x', `file; filename*=UTF-8''photo%E2%80%AEtxt.exe.txt`);
  assert.equal(
    disguised.body.data.attributes.filename,
    'phototxt.exe.txt',
    'a right-to-left override cannot disguise the extension',
  );
});

test('private file downloads are not cacheable', async () => {
  const res = await upload('/api/log/activity/file', 'secret yields', 'file; filename="yields.txt"');
  const download = await fetch(`${server.url}${res.body.data.attributes.uri.url}`, {
    headers: { Authorization: `Bearer ${token}` },
  });
  assert.equal(download.status, 200);
  assert.equal(download.headers.get('cache-control'), 'private, no-store');
});

test('an upload abandoned by a process that died is removed at the next start; one still arriving is kept', async () => {
  const database = await createTestDatabase();
  const tmp = join(database.env.TILTH_DATA_DIR!, 'files', 'tmp');
  mkdirSync(tmp, { recursive: true });
  const twoHoursAgo = new Date(Date.now() - 2 * 3600_000);
  writeFileSync(join(tmp, 'abandoned'), 'half a photo');
  utimesSync(join(tmp, 'abandoned'), twoHoursAgo, twoHoursAgo);
  writeFileSync(join(tmp, 'arriving'), 'the start of a photo');
  const again = await startTestServer({ database });
  try {
    assert.deepEqual(readdirSync(tmp), ['arriving']);
  } finally {
    await again.close();
    await database.drop();
  }
});
