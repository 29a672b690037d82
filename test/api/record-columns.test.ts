// RecordStore.load reads only the columns of the bundles its caller names (a bundle's page, a
// record found by UUID). A record loaded that way must be the same record: every field of the
// bundle, references with their targets; and a row of a bundle the caller did not expect is still
// loaded whole, not with the other bundle's columns missing.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServerAsAdmin, type TestServer } from '../support/server.ts';
import { Api, createFixture } from '../support/fixtures.ts';
import { RecordStore } from '../../runtime/storage/records.ts';

let server: TestServer;
let api: Api;

before(async () => {
  const started = await startTestServerAsAdmin();
  server = started.server;
  api = new Api(server.url, started.token);
});
after(() => server.close());

test('a record loaded with its bundle named, or with another bundle named, equals the record loaded whole', async () => {
  const store = new RecordStore(server.ctx.registry);
  const knex = server.ctx.db.knex;
  for (const type of ['log--activity', 'log--harvest', 'asset--animal', 'asset--land']) {
    const created = await createFixture(api, type, { full: true });
    const [entityType, bundle] = type.split('--') as [string, string];
    const { id } = (await store.findByUuid(knex, entityType, created.id))!;
    const [whole] = await store.load(knex, entityType, [id]);
    const [named] = await store.load(knex, entityType, [id], undefined, [bundle]);
    const [other] = await store.load(knex, entityType, [id], undefined, [
      entityType === 'log' ? 'observation' : 'plant',
    ]);
    assert.ok(whole && whole.values.size > 5, type);
    assert.deepEqual(named!.values, whole.values, `${type}: its bundle's columns`);
    assert.deepEqual(other!.values, whole.values, `${type}: read again whole when of another bundle`);
    assert.equal(named!.revisionId, whole.revisionId);
  }
});
