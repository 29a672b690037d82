// The optional ledger module: absent everywhere unless TILTH_MODULES names it (issue 2, item 3).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, ADMIN } from '../support/server.ts';
import { request, passwordToken } from '../support/http.ts';

test('with the ledger module off, sale and purchase logs exist nowhere', async () => {
  const server = await startTestServer();
  try {
    const token = await passwordToken(server.url, ADMIN.name, ADMIN.password);
    const root = await request(`${server.url}/api`);
    assert.equal(root.body.links['log--sale'], undefined);
    assert.equal(root.body.links['log--purchase'], undefined);
    const index = await request(`${server.url}/api/schema`);
    assert.ok(!index.text.includes('log--sale'));
    assert.equal((await request(`${server.url}/api/log/sale/resource/schema`)).status, 404);
    assert.equal((await request(`${server.url}/api/log/sale`, { token })).status, 404);
    const post = await request(`${server.url}/api/log/sale`, {
      method: 'POST',
      token,
      json: { data: { type: 'log--sale', attributes: {} } },
    });
    assert.equal(post.status, 404);
  } finally {
    await server.close();
  }
});

test('with TILTH_MODULES=ledger, sale and purchase logs behave like any core bundle', async () => {
  const server = await startTestServer({ env: { TILTH_MODULES: 'ledger' } });
  try {
    const token = await passwordToken(server.url, ADMIN.name, ADMIN.password);
    const root = await request(`${server.url}/api`);
    assert.equal(root.body.links['log--sale'].href, `${server.url}/api/log/sale`);
    const schema = await request(`${server.url}/api/log/sale/resource/schema`);
    assert.equal(schema.body.definitions.type.const, 'log--sale');
    assert.equal(schema.body.definitions.attributes.properties.customer.type, 'string');
    const created = await request(`${server.url}/api/log/sale`, {
      method: 'POST',
      token,
      json: {
        data: { type: 'log--sale', attributes: { customer: 'Village shop', invoice_number: 'INV-7', status: 'done' } },
      },
    });
    assert.equal(created.status, 201, created.text);
    const found = await request(`${server.url}/api/log/sale?filter[customer]=Village%20shop`, { token });
    assert.equal(found.body.data.length, 1);
    assert.equal(found.body.data[0].attributes.invoice_number, 'INV-7');
  } finally {
    await server.close();
  }
});

test('naming a module that does not exist stops the server with a clear message', async () => {
  await assert.rejects(
    startTestServer({ env: { TILTH_MODULES: 'ledgr' } }),
    /TILTH_MODULES names "ledgr", which is not a module\. Modules: ledger\./,
  );
});
