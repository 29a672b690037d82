// A signed-in page's session (oauth/session.ts): one statement for the session, its user and the
// user's roles, and on SQLite none at all while the database has not changed. What would break if
// the kept session outlived a change: a person blocked or given other roles by an operator's
// `tilth user` command (another process, another connection) keeps browsing as before.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, type TestServer } from '../support/server.ts';
import { tilthAsync } from '../support/tilth-command.ts';
import { createUser } from '../../runtime/accounts/users.ts';

let server: TestServer;
before(async () => {
  server = await startTestServer();
});
after(() => server.close());

const FORM = 'application/x-www-form-urlencoded';

/** The cookies a response sets, as one Cookie header's pairs by name. */
function cookies(res: Response, into = new Map<string, string>()): Map<string, string> {
  for (const line of res.headers.getSetCookie()) {
    const [pair] = line.split(';');
    const at = pair!.indexOf('=');
    into.set(pair!.slice(0, at).trim(), pair!.slice(at + 1).trim());
  }
  return into;
}
const header = (jar: Map<string, string>) => [...jar].map(([k, v]) => `${k}=${v}`).join('; ');

/** Sign in through the web form as a browser does; the cookie header to send afterwards. */
async function signIn(name: string, password: string): Promise<string> {
  const form = await fetch(`${server.url}/farm/sign-in`);
  const csrf = /name="csrf_token" value="([^"]+)"/.exec(await form.text())?.[1];
  assert.ok(csrf, 'the sign-in form carries a CSRF token');
  const jar = cookies(form);
  const res = await fetch(`${server.url}/farm/sign-in`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'Content-Type': FORM, Cookie: header(jar) },
    body: new URLSearchParams({ csrf_token: csrf, return_to: '/farm', username: name, password }),
  });
  assert.equal(res.status, 303, 'signed in');
  return header(cookies(res, jar));
}

/** GET a page with the cookie: its status, where it sends the browser, its HTML and the session statements it ran. */
async function visit(path: string, cookie: string) {
  const knex = server.ctx.db.knex;
  const sessionReads: string[] = [];
  const listener = (q: { sql: string }) => {
    if (q.sql.includes('oauth_sessions')) sessionReads.push(q.sql);
  };
  knex.on('query', listener);
  try {
    const res = await fetch(`${server.url}${path}`, { headers: { Cookie: cookie }, redirect: 'manual' });
    return { status: res.status, location: res.headers.get('location'), html: await res.text(), sessionReads };
  } finally {
    knex.removeListener('query', listener);
  }
}

const operator = (...args: string[]) =>
  tilthAsync(['user', ...args], {
    TILTH_DATA_DIR: server.config.dataDir,
    DATABASE_URL: server.config.databaseUrl ?? '',
  }).done;

test('a signed-in page reads its session in one statement, on SQLite none while nothing changed', async () => {
  await createUser(server.ctx.db.knex, { name: 'kit', password: 'kit-password-1', roles: ['farm_worker'] });
  const cookie = await signIn('kit', 'kit-password-1');
  const first = await visit('/farm', cookie);
  assert.equal(first.status, 200);
  assert.ok(first.sessionReads.length <= 1, `at most one session statement, not ${first.sessionReads.length}`);
  const again = await visit('/farm', cookie);
  assert.equal(again.status, 200);
  assert.equal(again.sessionReads.length, server.dialect === 'sqlite' ? 0 : 1);
});

test("an operator's block or role change in another process counts on the next page", async () => {
  await createUser(server.ctx.db.knex, { name: 'lee', password: 'lee-password-1', roles: ['farm_viewer'] });
  const cookie = await signIn('lee', 'lee-password-1');
  // Kept now (on SQLite): two pages in a row with nothing changed between.
  await visit('/farm/log/activity', cookie);
  const viewer = await visit('/farm/log/activity', cookie);
  assert.equal(viewer.status, 200);
  assert.doesNotMatch(viewer.html, /href="\/farm\/log\/activity\/new"/, 'a viewer is offered no new log');

  const roles = await operator('roles', '--name', 'lee', '--role', 'farm_worker');
  assert.equal(roles.status, 0, roles.stderr);
  const worker = await visit('/farm/log/activity', cookie);
  assert.equal(worker.status, 200);
  assert.match(worker.html, /href="\/farm\/log\/activity\/new"/, 'the new role counts at once');

  const blocked = await operator('block', '--name', 'lee');
  assert.equal(blocked.status, 0, blocked.stderr);
  const after = await visit('/farm/log/activity', cookie);
  assert.equal(after.status, 303, 'a blocked person is sent to sign in');
  assert.match(after.location ?? '', /^\/farm\/sign-in/);
});

test('a forged or tampered session cookie is never kept or honoured', async () => {
  await createUser(server.ctx.db.knex, { name: 'max', password: 'max-password-1', roles: ['farm_worker'] });
  const cookie = await signIn('max', 'max-password-1');
  assert.equal((await visit('/farm', cookie)).status, 200);
  const tampered = cookie.replace(/tilth_session=([^;.]+)/, (_m, id: string) => `tilth_session=${id.slice(0, -1)}A`);
  assert.notEqual(tampered, cookie);
  for (let i = 0; i < 2; i++) assert.equal((await visit('/farm', tampered)).status, 303);
});
