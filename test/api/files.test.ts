// Files: binary uploads to a new file or onto a record's field, downloads with the same token (spec "Files").
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServerAsAdmin, type TestServer } from '../support/server.ts';
import { request } from '../support/http.ts';

let server: TestServer;
let token: string;
before(async () => ({ server, token } = await startTestServerAsAdmin()));
after(() => server.close());

const upload = (path: string, body: Uint8Array | string, headers: Record<string, string>) =>
  request(`${server.url}${path}`, {
    method: 'POST',
    token,
    body: typeof body === 'string' ? body : Buffer.from(body),
    headers: { Accept: 'application/vnd.api+json', ...headers },
  });

test('a file uploaded on its own can be referenced by a log and downloaded', async () => {
  const bytes = Buffer.from('date,yield\n2024-07-01,12\n');
  const res = await upload('/api/log/harvest/file', bytes, {
    'Content-Type': 'application/octet-stream',
    'Content-Disposition': 'file; filename="yield.csv"',
  });
  assert.equal(res.status, 201, res.text);
  const file = res.body.data;
  assert.equal(file.type, 'file--file');
  assert.equal(file.attributes.filename, 'yield.csv');
  assert.equal(file.attributes.filemime, 'text/csv');
  assert.equal(file.attributes.filesize, bytes.length);
  assert.equal(file.attributes.status, false, 'temporary until a record references it');
  assert.match(file.attributes.uri.value, /^private:\/\/farm\/log\/\d{4}-\d{2}\/yield\.csv$/);
  // Root-relative, as Drupal's ComputedFileUrl gives it (farmOS), not absolute.
  assert.equal(file.attributes.uri.url, `/system/files/${file.attributes.uri.value.slice('private://'.length)}`);

  const log = await request(`${server.url}/api/log/harvest`, {
    method: 'POST',
    token,
    json: {
      data: {
        type: 'log--harvest',
        attributes: { name: 'With a file' },
        relationships: { file: { data: [{ type: 'file--file', id: file.id, meta: { description: 'Yields' } }] } },
      },
    },
  });
  assert.equal(log.status, 201, log.text);
  assert.equal(log.body.data.relationships.file.data[0].meta.description, 'Yields');
  const again = await request(`${server.url}/api/file/file/${file.id}`, { token });
  assert.equal(again.body.data.attributes.status, true, 'permanent once referenced');

  const download = await fetch(`${server.url}${file.attributes.uri.url}`, {
    headers: { Authorization: `Bearer ${token}` },
  });
  assert.equal(download.status, 200);
  assert.equal(await download.text(), bytes.toString());
  const anonymous = await fetch(`${server.url}${file.attributes.uri.url}`);
  assert.equal(anonymous.status, 401);
});

test('a file uploaded onto a record is added to its field', async () => {
  const asset = await request(`${server.url}/api/asset/equipment`, {
    method: 'POST',
    token,
    json: { data: { type: 'asset--equipment', attributes: { name: 'Tractor' } } },
  });
  // A whole 1×1 PNG: image fields check the content, not only the name.
  const png = Uint8Array.from(
    Buffer.from(
      '89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082',
      'hex',
    ),
  );
  const res = await upload(`/api/asset/equipment/${asset.body.data.id}/image`, png, {
    'Content-Type': 'application/octet-stream',
    'Content-Disposition': 'attachment; filename="tractor.png"',
  });
  assert.equal(res.status, 200, res.text);
  assert.equal(res.body.data.length, 1);
  assert.equal(res.body.data[0].attributes.filename, 'tractor.png');
  const second = await upload(`/api/asset/equipment/${asset.body.data.id}/image`, png, {
    'Content-Type': 'application/octet-stream',
    'Content-Disposition': 'attachment; filename="tractor.png"',
  });
  assert.equal(second.body.data.length, 2);
  assert.equal(second.body.data[1].attributes.filename, 'tractor_0.png', 'a taken name is renamed, not overwritten');
  const reread = await request(`${server.url}/api/asset/equipment/${asset.body.data.id}`, { token });
  assert.equal(reread.body.data.relationships.image.data.length, 2);
});

test('bad uploads get clear errors and store nothing', async () => {
  const before = (await request(`${server.url}/api/file/file`, { token })).body.data.length;
  const wrongType = await upload('/api/log/harvest/file', 'x', {
    'Content-Type': 'text/plain',
    'Content-Disposition': 'file; filename="a.txt"',
  });
  assert.equal(wrongType.status, 415);
  const noName = await upload('/api/log/harvest/file', 'x', { 'Content-Type': 'application/octet-stream' });
  assert.equal(noName.status, 400);
  assert.match(noName.body.errors[0].detail, /Content-Disposition/);
  const badExtension = await upload('/api/log/harvest/image', 'x', {
    'Content-Type': 'application/octet-stream',
    'Content-Disposition': 'file; filename="notes.exe"',
  });
  assert.equal(badExtension.status, 422);
  assert.match(badExtension.body.errors[0].detail, /png gif jpg jpeg/);
  const traversal = await upload('/api/log/harvest/file', 'x', {
    'Content-Type': 'application/octet-stream',
    'Content-Disposition': 'file; filename="../../etc/passwd.txt"',
  });
  assert.equal(traversal.status, 201);
  assert.equal(traversal.body.data.attributes.filename, 'passwd.txt', 'only the base name is kept');
  const missingHost = await upload('/api/log/harvest/00000000-0000-4000-8000-000000000000/file', 'x', {
    'Content-Type': 'application/octet-stream',
    'Content-Disposition': 'file; filename="a.txt"',
  });
  assert.equal(missingHost.status, 404);
  const after = (await request(`${server.url}/api/file/file`, { token })).body.data.length;
  assert.equal(after, before + 1, 'only the valid upload was stored');
});

test('twenty uploads of one file name to one log at once all succeed, as distinct files with their own bytes', async () => {
  // A phone sending several photos at once: none may be refused as a conflict (issue 26).
  const log = await request(`${server.url}/api/log/observation`, {
    method: 'POST',
    token,
    json: { data: { type: 'log--observation', attributes: { name: 'Soil samples' } } },
  });
  assert.equal(log.status, 201, log.text);
  const bodies = Array.from({ length: 20 }, (_, i) => `sample,ph\n${i},${6 + i / 10}\n`);
  const answers = await Promise.all(
    bodies.map((body) =>
      upload(`/api/log/observation/${log.body.data.id}/file`, body, {
        'Content-Type': 'application/octet-stream',
        'Content-Disposition': 'file; filename="soil.csv"',
      }),
    ),
  );
  assert.deepEqual(
    answers.map((a) => a.status),
    bodies.map(() => 200),
    answers.find((a) => a.status !== 200)?.text,
  );
  const reread = await request(`${server.url}/api/log/observation/${log.body.data.id}?include=file`, { token });
  assert.equal(reread.body.data.relationships.file.data.length, 20, 'every upload is on the log');
  const files = reread.body.included as { attributes: { filename: string; uri: { url: string } } }[];
  assert.equal(new Set(files.map((f) => f.attributes.filename)).size, 20, 'twenty distinct names');
  const downloaded = await Promise.all(
    files.map((f) =>
      fetch(`${server.url}${f.attributes.uri.url}`, { headers: { Authorization: `Bearer ${token}` } }).then((r) =>
        r.text(),
      ),
    ),
  );
  assert.deepEqual([...downloaded].sort(), [...bodies].sort(), 'each download equals its upload');
});
