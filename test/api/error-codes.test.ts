// One catalogue of errors with stable codes (layers issue, item 5): README.md's "Error codes"
// lists exactly the codes the server's catalogue holds, with the same statuses and meanings, both
// ways; and the errors a client meets carry them.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ERROR_CATALOGUE, OAUTH_STATUS } from '../../runtime/errors.ts';
import { ROOT } from '../support/project.ts';
import { startTestServerAsAdmin, type TestServer } from '../support/server.ts';
import { request } from '../support/http.ts';

/** The rows of the tables in README.md's "### Error codes" section. */
function readmeRows(): string[][] {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const start = readme.indexOf('\n### Error codes\n');
  assert.ok(start >= 0, 'README.md has an "Error codes" section');
  const section = readme.slice(start + 1, readme.indexOf('\n## ', start + 1));
  return section
    .split('\n')
    .filter((line) => /^\| `/.test(line))
    .map((line) =>
      line
        .slice(1, -1)
        .split(' | ')
        .map((cell) => cell.trim()),
    );
}

test("README's error codes and the catalogue agree, both ways", () => {
  const rows = readmeRows();
  const jsonapi = rows
    .filter((r) => r.length === 3)
    .map(([code, status, meaning]) => ({ code: code!.replace(/`/g, ''), status: Number(status), meaning }));
  const oauth = rows
    .filter((r) => r.length === 2)
    .map(([code, status]) => ({ code: code!.replace(/`/g, ''), status: Number(status) }));
  assert.deepEqual(
    jsonapi,
    Object.entries(ERROR_CATALOGUE).map(([code, e]) => ({ code, status: e.status, meaning: e.meaning })),
  );
  assert.deepEqual(
    oauth,
    Object.entries(OAUTH_STATUS).map(([code, status]) => ({ code, status })),
  );
});

let server: TestServer;
let token: string;
before(async () => ({ server, token } = await startTestServerAsAdmin()));
after(() => server.close());

test('errors a client meets carry their code from the catalogue', async () => {
  const cases: Array<[string, RequestInit & { token?: string; json?: unknown }, number, string]> = [
    ['/api/log/activity?sort=nonsense', { token }, 400, 'bad_parameter'],
    ['/api/log/activity', {}, 401, 'unauthorized'],
    ['/api/log/activity/00000000-0000-4000-8000-000000000000', { token }, 404, 'not_found'],
    ['/api/log/activity', { token, method: 'PUT', json: {} }, 405, 'method_not_allowed'],
    [
      '/api/log/activity',
      { token, method: 'POST', json: { data: { type: 'log--activity', attributes: { status: 'sideways' } } } },
      422,
      'invalid_value',
    ],
    [
      '/api/log/activity',
      { token, method: 'POST', body: 'x', headers: { 'Content-Type': 'text/plain' } },
      415,
      'unsupported_media_type',
    ],
  ];
  for (const [path, init, status, code] of cases) {
    const res = await request(`${server.url}${path}`, init);
    assert.equal(res.status, status, `${path}: ${res.text.slice(0, 200)}`);
    for (const error of res.body.errors) {
      assert.equal(error.code, code, `${init.method ?? 'GET'} ${path}`);
      assert.equal(ERROR_CATALOGUE[code as keyof typeof ERROR_CATALOGUE].status, status);
    }
  }
});
