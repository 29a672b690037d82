// A process whose database was migrated ahead of it (`tilth migrate` of a newer release, or of a
// farm's renamed value, run beside it) refuses every write with a 503 saying to restart it (issue
// 41 Part E, item 1): before, it stored records its code's rules allowed and the migrated database
// no longer does (an old `mob` after the rename to `mob_grazing`), which could never be saved back
// as read. Reads go on, and signing in too. The check is throttled (at most one read of the
// migrations table a second), so the test waits that second after "migrating".
import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServerAsAdmin, ADMIN, type TestServer } from '../support/server.ts';
import { request, passwordToken } from '../support/http.ts';

let server: TestServer;
let token: string;
before(async () => ({ server, token } = await startTestServerAsAdmin()));
after(() => server.close());

const throttle = () => new Promise((resolve) => setTimeout(resolve, 1100));

test('a process older than its database refuses writes (503, Retry-After, "restart"), serves reads, and writes again once the database matches it', async () => {
  const post = (name: string) =>
    request(`${server.url}/api/log/activity`, {
      method: 'POST',
      token,
      json: { data: { type: 'log--activity', attributes: { name } } },
    });
  const before = await post('Before the migration');
  assert.equal(before.status, 201, before.text);
  const stream = await request(`${server.url}/api/data_stream/basic`, {
    method: 'POST',
    token,
    json: { data: { type: 'data_stream--basic', attributes: { name: 'soil temperature' } } },
  });
  assert.equal(stream.status, 201, stream.text);

  // What `tilth migrate` of a newer code records beside the running process.
  const knex = server.ctx.db.knex;
  const [row] = await knex('knex_migrations')
    .insert({ name: 'site/9999_rename_from_elsewhere', batch: 99, migration_time: new Date() })
    .returning('id');
  await throttle();

  const refused = [
    await post('After the migration'),
    await request(`${server.url}/api/log/activity/${before.body.data.id}`, {
      method: 'PATCH',
      token,
      json: { data: { type: 'log--activity', id: before.body.data.id, attributes: { name: 'Renamed' } } },
    }),
    await request(`${server.url}/api/log/activity/${before.body.data.id}`, { method: 'DELETE', token }),
    await request(`${server.url}/api/log/activity/file`, {
      method: 'POST',
      token,
      body: 'a,b\n',
      headers: { 'Content-Type': 'application/octet-stream', 'Content-Disposition': 'file; filename="notes.csv"' },
    }),
    await request(`${server.url}/subrequests?_format=json`, {
      method: 'POST',
      token,
      json: [
        {
          requestId: 'a',
          uri: '/api/log/activity',
          action: 'create',
          body: JSON.stringify({ data: { type: 'log--activity', attributes: { name: 'Through subrequests' } } }),
        },
      ],
    }),
    await request(
      `${server.url}/api/data_stream/${stream.body.data.id}/data?private_key=${stream.body.data.attributes.private_key}`,
      { method: 'POST', json: { value: 21.5 } },
    ),
  ];
  for (const answer of refused) {
    assert.equal(answer.status, 503, answer.text);
    assert.ok(answer.headers.get('retry-after'), 'Retry-After');
    assert.match(answer.body.errors[0].detail, /newer.*restart/s, answer.text);
  }
  const names = (await request(`${server.url}/api/log/activity`, { token })).body.data.map(
    (l: { attributes: { name: string } }) => l.attributes.name,
  );
  assert.deepEqual(names, ['Before the migration'], 'reads are served, and nothing of the refused writes was stored');
  // Signing in is not a write of records: a load balancer's retry may land anywhere.
  assert.ok(await passwordToken(server.url, ADMIN.name, ADMIN.password));

  // The database matches the code again (the migration was a mistake, undone): writes are served.
  await knex('knex_migrations')
    .where('id', typeof row === 'object' ? row.id : row)
    .delete();
  await throttle();
  assert.equal((await post('After the undo')).status, 201);
});

test('the web pages refuse a form that saves a record while the database is ahead (a 503 page, nothing stored); signing in goes on', async () => {
  // A browser's cookies, by hand: the sign-in page's cookie, then the session's.
  const cookies = new Map<string, string>();
  const browse = async (path: string, form?: Record<string, string>) => {
    const res = await fetch(`${server.url}${path}`, {
      method: form ? 'POST' : 'GET',
      redirect: 'manual',
      headers: {
        Cookie: [...cookies].map(([k, v]) => `${k}=${v}`).join('; '),
        ...(form ? { 'Content-Type': 'application/x-www-form-urlencoded' } : {}),
      },
      body: form ? new URLSearchParams(form).toString() : undefined,
    });
    for (const line of res.headers.getSetCookie()) {
      const [pair] = line.split(';');
      const at = pair!.indexOf('=');
      cookies.set(pair!.slice(0, at), pair!.slice(at + 1));
    }
    return { status: res.status, headers: res.headers, text: await res.text() };
  };
  const csrf = (html: string) => /name="csrf_token" value="([^"]+)"/.exec(html)?.[1] ?? '';

  const knex = server.ctx.db.knex;
  const [row] = await knex('knex_migrations')
    .insert({ name: 'site/9998_web_from_elsewhere', batch: 98, migration_time: new Date() })
    .returning('id');
  await throttle();
  try {
    const signInPage = await browse('/farm/sign-in');
    const signedIn = await browse('/farm/sign-in', {
      username: ADMIN.name,
      password: ADMIN.password,
      csrf_token: csrf(signInPage.text),
    });
    assert.equal(signedIn.status, 303, `signing in is not refused: ${signedIn.text.slice(0, 300)}`);
    const form = await browse('/farm/log/activity/new');
    assert.equal(form.status, 200, form.text.slice(0, 300));
    const saved = await browse('/farm/log/activity/new', {
      csrf_token: csrf(form.text),
      name: 'Through the web, ahead',
    });
    assert.equal(saved.status, 503, saved.text.slice(0, 300));
    assert.match(saved.headers.get('content-type') ?? '', /text\/html/);
    assert.ok(saved.headers.get('retry-after'), 'Retry-After');
    assert.match(saved.text, /newer.*restart/s);
    const found = await request(`${server.url}/api/log/activity?filter[name]=Through the web, ahead`, { token });
    assert.equal(found.body.data.length, 0, 'nothing of the refused form was stored');
  } finally {
    await knex('knex_migrations')
      .where('id', typeof row === 'object' ? row.id : row)
      .delete();
    await throttle();
  }
});
