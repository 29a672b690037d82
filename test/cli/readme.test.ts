// The README's first recipe works as written (operations issue, item 10): the token request with
// --data-urlencode takes a password with + & = in it, and a wrong password is reported, not
// passed on as a token; the tour's term and upload calls then work with that token.
// The whole curl tour runs as written on a fresh farm (issue 29 Part B, item 2): every variable it
// uses is made first, and any block that fails fails the test, so the tour cannot rot. The
// start-up lines it shows are a fresh farm's (issue 29 Part B, item 6).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT } from '../support/project.ts';
import { createTestDatabase } from '../support/server.ts';
import { startChildServer } from '../support/child-server.ts';
import { request } from '../support/http.ts';
import { freePort, stopProcess } from '../support/processes.ts';

/** The shell block that follows `marker` in the README. */
function block(marker: string): string {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const at = readme.indexOf(marker);
  assert.ok(at >= 0, marker);
  return /```sh\n([\s\S]*?)```/.exec(readme.slice(at))![1]!;
}

test('the README token recipe gets a token, and says so when it cannot', async () => {
  const database = await createTestDatabase();
  const password = 'p+ss&word=with spaces';
  const server = await startChildServer(database.env, { TILTH_ADMIN_PASSWORD: password });
  try {
    const recipe = (pass: string) =>
      spawnSync(
        'bash',
        [
          '-c',
          `${block('then a token with the default').replace('BASE=http://localhost:8080', `BASE=${server.url}`).replace("'password=the password'", `'password=${pass}'`)}\nprintf '%s' "$TOKEN"`,
        ],
        { encoding: 'utf8' },
      );
    const ok = recipe(password);
    assert.equal(ok.stderr, '', 'no complaint');
    assert.equal(
      (await request(`${server.url}/api/log/activity`, { token: ok.stdout })).status,
      200,
      'the token works',
    );
    const wrong = recipe('not it');
    assert.match(wrong.stderr, /^No token: .*invalid_grant/);
  } finally {
    await server.stop();
    await database.drop();
  }
});

/** The shell blocks of the README between `<!-- tour:begin -->` and `<!-- tour:end -->`, in order. */
function tourBlocks(): string[] {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const begin = readme.indexOf('<!-- tour:begin -->');
  const end = readme.indexOf('<!-- tour:end -->');
  assert.ok(begin >= 0 && end > begin, 'the README marks its tour with <!-- tour:begin --> and <!-- tour:end -->');
  return [...readme.slice(begin, end).matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]!);
}

/** A JPEG a browser would show (1×1, grey), for the tour's image upload. */
const JPEG = Buffer.from(
  '/9j/4AAQSkZJRgABAQEASABIAAD/2wBDAP//////////////////////////////////////////////////////////////////////////////////////wgALCAABAAEBAREA/8QAFBABAAAAAAAAAAAAAAAAAAAAAP/aAAgBAQABPxA=',
  'base64',
);

test("the README's curl tour runs as written, block by block, on a fresh farm", async () => {
  const database = await createTestDatabase();
  const password = 'tour-password';
  const dir = mkdtempSync(join(tmpdir(), 'tilth-tour-'));
  const server = await startChildServer(database.env, { TILTH_ADMIN_PASSWORD: password });
  try {
    writeFileSync(join(dir, 'soil.pdf'), '%PDF-1.4\n%%EOF\n');
    writeFileSync(join(dir, 'north.jpg'), JPEG);
    const blocks = tourBlocks();
    assert.ok(blocks.length >= 8, `the tour has its blocks (${blocks.length})`);
    assert.match(blocks[0]!, /BASE=http:\/\/localhost:8080/);
    blocks[0] = blocks[0]!
      .replace('BASE=http://localhost:8080', `BASE=${server.url}`)
      .replace("'password=the password'", `'password=${password}'`);
    // Every block must succeed: the shell stops at the first failing command, an unset variable
    // is an error, and curl fails on any 4xx or 5xx (showing the answer).
    const script = [
      'set -euo pipefail',
      'curl() { command curl -S --fail-with-body "$@"; }',
      ...blocks.map((b, i) => `echo "--- tour block ${i + 1}" >&2\n${b}`),
      'echo "--- end of the tour" >&2',
      'printf "\\n%s\\n%s\\n%s\\n%s\\n" "$TOKEN" "$SHEEP" "$TANK" "$SOIL_TEST"',
    ].join('\n');
    const run = spawnSync('bash', ['-c', script], { cwd: dir, encoding: 'utf8', timeout: 120_000 });
    const last = run.stderr.match(/--- tour block \d+/g)?.pop() ?? 'before the first block';
    assert.equal(run.status, 0, `the tour failed in ${last}:\n${run.stderr.slice(-3000)}\n${run.stdout.slice(-1500)}`);
    assert.match(run.stderr, /--- end of the tour/);
    const [token, sheep, tank, soilTest] = run.stdout.trim().split('\n').slice(-4) as [string, string, string, string];
    // What the tour says it did, it did.
    const animal = await request(`${server.url}/api/asset/animal/${sheep}`, { token });
    assert.equal(animal.status, 200, animal.text);
    assert.equal(
      animal.body.data.relationships.location.data[0].id,
      '6f1c2d70-0a43-4c55-9a53-2d6a0c1a0001',
      'the sheep are in the north field',
    );
    const water = await request(`${server.url}/api/asset/water/${tank}`, { token });
    assert.deepEqual(
      water.body.data.attributes.inventory.map((i: any) => [i.measure, i.value, i.units]),
      [['volume', '40', 'litres']],
    );
    const harvests = await request(`${server.url}/api/log/harvest?include=quantity`, { token });
    assert.equal(harvests.body.data.length, 1, 'a harvest');
    assert.equal(harvests.body.included[0].attributes.value.decimal, '12.5', 'with its quantity');
    // The uploaded report attached to the soil test, and a second sent straight onto its file field (issue 41 Part E, item 6).
    const soil = await request(`${server.url}/api/log/observation/${soilTest}?include=file`, { token });
    assert.equal(soil.status, 200, soil.text);
    assert.deepEqual(soil.body.included.map((f: any) => f.attributes.filename).sort(), ['soil-2.pdf', 'soil.pdf']);
    const field = await request(`${server.url}/api/asset/land/6f1c2d70-0a43-4c55-9a53-2d6a0c1a0001`, { token });
    assert.equal(field.body.data.attributes.intrinsic_geometry.geo_type, 'Polygon', 'the field is drawn as a polygon');
  } finally {
    await server.stop();
    await database.drop();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('the start-up lines the README shows are what a fresh farm prints, migration count and all', async () => {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const at = readme.indexOf('then serves the API:');
  assert.ok(at >= 0);
  const shown = /```\n([\s\S]*?)```/.exec(readme.slice(at))![1]!;
  // The README's example is the embedded SQLite database, whatever DATABASE_URL the suite runs with.
  const dataDir = mkdtempSync(join(tmpdir(), 'tilth-startup-'));
  const port = await freePort();
  const child = spawn(process.execPath, ['bin/tilth.js', 'serve', '--migrate'], {
    cwd: ROOT,
    // As `npm start` on a terminal: readable log lines, a generated password.
    env: {
      ...process.env,
      PORT: String(port),
      HOST: '127.0.0.1',
      TILTH_BASE_URL: '',
      TILTH_ADMIN_PASSWORD: '',
      TILTH_LOG_LEVEL: 'info',
      TILTH_LOG_FORMAT: 'pretty',
      DATABASE_URL: '',
      TILTH_DATA_DIR: dataDir,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let printed = '';
  let startup = '';
  try {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no start-up lines within 60 s:\n${printed}`)), 60_000);
      child.stdout!.on('data', (chunk: Buffer) => {
        printed += chunk.toString();
        if (!startup && printed.includes('Tilth is serving') && printed.includes('It is shown once')) {
          clearTimeout(timer);
          startup = printed; // before the lines of shutting down
          resolve();
        }
      });
    });
  } finally {
    await stopProcess(child, exited);
    rmSync(dataDir, { recursive: true, force: true });
  }
  // The same lines, whatever the time, the password, the port and the folder. (pino-pretty writes
  // its lines from a thread of its own, so their order beside the password's may vary.)
  const normal = (text: string) =>
    text
      .trim()
      .split('\n')
      .map((line) =>
        line
          .replace(/^\[\d\d:\d\d:\d\d\]/, '[time]')
          .replace(/the password: \S+/, 'the password: …')
          .replace(/:\d+\//g, ':PORT/')
          .replace(/127\.0\.0\.1:\d+/, '127.0.0.1:PORT')
          .replace(/SQLite in [^)]+\)/, 'SQLite in DIR)'),
      )
      .sort();
  assert.deepEqual(normal(shown), normal(startup), `the README shows:\n${shown}\na fresh farm prints:\n${startup}`);
});
