// Trust round two, item 13: a sensor's private key never reaches a log line, however the request
// spells it: `private_key=`, `private%5Fkey=`, `PRIVATE_KEY=`, inside a filter on the field
// (`filter[private_key]=…`, or a condition whose path is private_key). A real `tilth serve` logs
// at the most verbose level while they are sent, and its whole output is searched for the keys.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { startChildServer } from '../support/child-server.ts';
import { createTestDatabase, ADMIN } from '../support/server.ts';
import { passwordToken, request } from '../support/http.ts';

test('sensor private keys are redacted from the request log however they are spelled', async (t) => {
  const database = await createTestDatabase();
  t.after(() => database.drop());
  const server = await startChildServer(
    database.env,
    { TILTH_LOG_LEVEL: 'trace', TILTH_LOG_FORMAT: 'json' },
    { keepOutput: true },
  );
  t.after(() => server.stop());
  const url = server.url;
  const token = await passwordToken(url, ADMIN.name, ADMIN.password);
  const key = () => `key${randomBytes(12).toString('hex')}`;
  const keys = [key(), key(), key(), key(), key(), key(), key()];
  const created = await request(`${url}/api/data_stream/basic`, {
    method: 'POST',
    token,
    json: { data: { type: 'data_stream--basic', attributes: { name: 'probe', private_key: keys[0] } } },
  });
  assert.equal(created.status, 201, created.text);
  const stream = `${url}/api/data_stream/${created.body.data.id}/data`;
  assert.equal((await request(`${stream}?private_key=${keys[0]}`)).status, 200, 'the key is used');
  await request(`${stream}?private%5Fkey=${keys[1]}`);
  await request(`${stream}?PRIVATE_KEY=${keys[2]}`);
  await request(`${url}/api/data_stream/basic?filter[private_key]=${keys[3]}`, { token });
  await request(`${url}/api/data_stream/basic?filter%5Bprivate_key%5D=${keys[4]}`, { token });
  await request(
    `${url}/api/data_stream/basic?filter[k][condition][path]=private_key&filter[k][condition][value]=${keys[5]}`,
    { token },
  );
  await request(
    `${url}/api/data_stream/basic?filter[k][condition][value][]=${keys[6]}&filter[k][condition][path]=private%5Fkey&filter[k][condition][operator]=IN`,
    { token },
  );
  // The lines were written (the request log is on), and none holds a key.
  await new Promise((r) => setTimeout(r, 300));
  const output = server.output();
  assert.ok(output.split('\n').filter((l) => l.includes('"request"')).length >= 8, 'request lines were logged');
  for (const [i, k] of keys.entries())
    assert.ok(!output.includes(k), `key ${i} reached the log: ${output.split('\n').find((l) => l.includes(k))}`);
});
