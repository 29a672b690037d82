// A full disk is the operator's problem, not the client's and not a bug: writes that meet it are
// answered 507 with a JSON:API error saying so, leave no trace and undo no other write; reads go
// on; writing resumes once there is room. The token endpoint says the same in RFC 6749's form.
// (SQLite's max_page_count stands in for the database's full disk; a 256 KiB tmpfs over the file
// store for the uploads'.)
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { ADMIN, startTestServerAsAdmin, type TestServer } from '../support/server.ts';
import { request } from '../support/http.ts';
import { passwordGrant, token as tokenRequest } from '../oauth/helpers.ts';

const sqliteOnly = {
  skip: process.env.DATABASE_URL ? 'a size limit stands in for the full disk on SQLite only' : false,
};

let server: TestServer;
let token: string;
/** The server's log lines at warn and above, as an operator's log collector would read them. */
const logged: Array<{ level: number; msg: string }> = [];
before(async () => {
  const logger = pino(
    { level: 'warn', base: undefined },
    { write: (line: string) => void logged.push(JSON.parse(line)) },
  );
  // No grace for a replayed refresh token: a refresh that failed must have rotated nothing. The
  // refreshes until the disk fills must not meet the token endpoint's rate limit first.
  ({ server, token } = await startTestServerAsAdmin({
    env: { TILTH_REFRESH_REUSE_GRACE: '0', TILTH_RATE_LIMIT_PER_ADDRESS: '100000' },
    logger,
  }));
});
after(() => server.close());

/** Limit the database file to its current size and `spare` more pages, on the server's writing connection. */
async function diskFullAfter(spare: number): Promise<void> {
  const [{ page_count: pages }] = await server.ctx.db.knex.raw('PRAGMA page_count');
  await server.ctx.db.knex.raw(`PRAGMA max_page_count = ${pages + spare}`);
}

const post = (name: string, notes: string) =>
  request(`${server.url}/api/log/activity`, {
    method: 'POST',
    token,
    json: { data: { type: 'log--activity', attributes: { name, notes: { value: notes, format: 'default' } } } },
  });

test(
  'writes on a full disk are 507 and leave no trace; reads go on; writing resumes once there is room',
  sqliteOnly,
  async () => {
    await diskFullAfter(2);
    const sent = Array.from({ length: 12 }, (_, i) => `Full disk ${i}`);
    const answers = await Promise.all(sent.map((name) => post(name, 'x'.repeat(3000))));
    const saved = new Set<string>();
    for (const [i, res] of answers.entries()) {
      if (res.status === 201) {
        saved.add(sent[i]!);
        continue;
      }
      assert.equal(res.status, 507, res.text);
      assert.equal(res.body.errors[0].code, 'insufficient_storage');
      assert.match(res.body.errors[0].detail, /disk is full/);
    }
    assert.ok(saved.size < sent.length, 'the disk filled up');
    // The operator hears of the full disk, but the log line carries the statement, not the
    // values the farmer sent (Knex's default writes them into the error's message).
    const errors = logged.filter((l) => l.level >= 50);
    assert.ok(errors.length > 0, 'the full disk is logged');
    assert.ok(!JSON.stringify(errors).includes('Full disk'), 'no record values in the log');

    const listed = await request(
      `${server.url}/api/log/activity?filter[name][operator]=STARTS_WITH&filter[name][value]=Full disk&page[limit]=50`,
      { token },
    );
    assert.equal(listed.status, 200, listed.text);
    assert.deepEqual(
      new Set(listed.body.data.map((l: { attributes: { name: string } }) => l.attributes.name)),
      saved,
      'exactly the acknowledged writes are stored',
    );

    await server.ctx.db.knex.raw('PRAGMA max_page_count = 1073741823');
    assert.equal((await post('After room was made', 'x')).status, 201);
  },
);

test(
  'the token endpoint on a full disk answers 507 in RFC 6749 form; the refresh token that failed still works once there is room',
  sqliteOnly,
  async () => {
    let pair = await passwordGrant(server, ADMIN.name, ADMIN.password);
    await diskFullAfter(0);
    // Each refresh stores a new pair of tokens; the table's last page fills after a few.
    let failed: Awaited<ReturnType<typeof tokenRequest>> | undefined;
    for (let i = 0; i < 500 && !failed; i++) {
      const res = await tokenRequest(server, {
        grant_type: 'refresh_token',
        refresh_token: pair.refresh_token,
        client_id: 'farm',
      });
      if (res.status === 200) pair = res.body;
      else failed = res;
    }
    assert.ok(failed, 'the disk filled up');
    assert.equal(failed.status, 507, failed.text);
    assert.equal(failed.body.error, 'server_error', failed.text);
    assert.match(failed.body.error_description, /disk is full/);
    assert.equal(failed.headers.get('cache-control'), 'no-store');
    assert.match(failed.headers.get('content-type') ?? '', /^application\/json/);
    assert.ok(
      logged.some((l) => l.level >= 50 && l.msg === 'OAuth request failed'),
      'the full disk is logged as an error for the operator',
    );

    await server.ctx.db.knex.raw('PRAGMA max_page_count = 1073741823');
    const retried = await tokenRequest(server, {
      grant_type: 'refresh_token',
      refresh_token: pair.refresh_token,
      client_id: 'farm',
    });
    assert.equal(retried.status, 200, `the failed refresh rotated nothing: ${retried.text}`);
    assert.equal((await request(`${server.url}/api`, { token: retried.body.access_token })).status, 200);
  },
);

// A 256 KiB tmpfs mounted over the file store is its full disk. Mounting needs root with the right
// to mount (as on CI; not root in an ordinary container): tried once on a scratch directory.
function mountSkipReason(): string | false {
  if (process.getuid?.() !== 0) return 'mounting a small filesystem needs root';
  const scratch = mkdtempSync(join(tmpdir(), 'tilth-mount-'));
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=64k', 'tmpfs', scratch], { stdio: 'ignore' });
    execFileSync('umount', [scratch]);
    return false;
  } catch {
    return 'this machine does not let the test mount a tmpfs';
  } finally {
    try {
      rmSync(scratch, { recursive: true, force: true });
    } catch {
      // Still mounted (umount failed): a directory left in the temporary folder, nothing worse.
    }
  }
}
const asRoot = { skip: mountSkipReason() };

test(
  'an upload that fills the disk is 507 and leaves no file behind; the next one that fits is stored',
  asRoot,
  async () => {
    const files = join(server.config.dataDir, 'files');
    mkdirSync(files, { recursive: true });
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=256k', 'tmpfs', files]);
    try {
      const upload = (bytes: number, name: string) =>
        request(`${server.url}/api/log/activity/file`, {
          method: 'POST',
          token,
          body: new Uint8Array(Buffer.alloc(bytes, 1)),
          headers: { 'Content-Type': 'application/octet-stream', 'Content-Disposition': `file; filename="${name}"` },
        });
      const big = await upload(1024 * 1024, 'too-big.txt');
      assert.equal(big.status, 507, big.text);
      assert.equal(big.body.errors[0].code, 'insufficient_storage');
      assert.match(big.body.errors[0].detail, /disk is full/);
      assert.deepEqual(readdirSync(join(files, 'tmp')), [], 'the partial file was removed');

      const small = await upload(1000, 'fits.txt');
      assert.equal(small.status, 201, small.text);
      assert.equal(small.body.data.attributes.filesize, 1000);
    } finally {
      execFileSync('umount', [files]);
    }
  },
);
