// farmOS.py 1.0.1's requests, replayed with fetch exactly as clients.md §2.1 captured them
// (requests-oauthlib, LegacyApplicationClient): the password grant with the client in HTTP Basic
// `farm:` and scope farm_manager, which must be echoed unchanged (oauthlib raises "Scope has
// changed" otherwise); the automatic refresh with client_id, scope and a stray allow_redirects;
// errors read from the JSON `error` member.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, ADMIN, type TestServer } from '../support/server.ts';

let server: TestServer;
before(async () => {
  server = await startTestServer();
});
after(() => server.close());

const PY_HEADERS = {
  Accept: 'application/json',
  'Content-Type': 'application/x-www-form-urlencoded;charset=UTF-8',
  'User-Agent': 'python-requests/2.28.1',
};

async function fetchToken(body: string, headers: Record<string, string>) {
  const res = await fetch(`${server.url}/oauth/token`, {
    method: 'POST',
    headers: { ...PY_HEADERS, ...headers },
    body,
  });
  return { status: res.status, body: (await res.json()) as Record<string, any> };
}

/** What oauthlib checks in a token response before requests-oauthlib accepts it. */
function assertOauthlibAccepts(token: Record<string, any>, requestedScope: string) {
  assert.ok(token.access_token, 'missing access_token');
  assert.equal(String(token.token_type).toLowerCase(), 'bearer');
  assert.ok(Number.isFinite(Number(token.expires_in)));
  if ('scope' in token)
    assert.deepEqual(String(token.scope).split(' ').sort(), requestedScope.split(' ').sort(), 'Scope has changed');
}

test('farm.authorize(): password grant with Basic "farm:" and scope farm_manager', async () => {
  const body = `grant_type=password&username=${encodeURIComponent(ADMIN.name)}&password=${encodeURIComponent(ADMIN.password)}&scope=farm_manager`;
  const res = await fetchToken(body, { Authorization: `Basic ${Buffer.from('farm:').toString('base64')}` });
  assert.equal(res.status, 200);
  assertOauthlibAccepts(res.body, 'farm_manager');
  assert.equal(res.body.scope, 'farm_manager');

  // Resource requests: Accept */*, the bearer token.
  const info = await fetch(`${server.url}/api`, {
    headers: { Authorization: `Bearer ${res.body.access_token}`, Accept: '*/*' },
  });
  assert.equal(info.status, 200);
  assert.ok(((await info.json()) as any).meta.links.me);

  // The automatic refresh: no Basic header, client_id in the body, the scope again, and allow_redirects.
  const refresh = await fetchToken(
    `grant_type=refresh_token&client_id=farm&scope=farm_manager&refresh_token=${res.body.refresh_token}&allow_redirects=True`,
    {},
  );
  assert.equal(refresh.status, 200);
  assertOauthlibAccepts(refresh.body, 'farm_manager');
  const after = await fetch(`${server.url}/api`, {
    headers: { Authorization: `Bearer ${refresh.body.access_token}`, Accept: '*/*' },
  });
  assert.equal(after.status, 200);
});

test('errors are read from the JSON error member: invalid_grant, invalid_client, invalid_scope', async () => {
  const basicFarm = { Authorization: `Basic ${Buffer.from('farm:').toString('base64')}` };
  const wrong = await fetchToken(
    `grant_type=password&username=${ADMIN.name}&password=wrong&scope=farm_manager`,
    basicFarm,
  );
  assert.equal(wrong.body.error, 'invalid_grant');
  const client = await fetchToken(
    `grant_type=password&username=${ADMIN.name}&password=${ADMIN.password}&scope=farm_manager`,
    { Authorization: `Basic ${Buffer.from('no-such-client:').toString('base64')}` },
  );
  assert.equal(client.body.error, 'invalid_client');
  const scope = await fetchToken(
    `grant_type=password&username=${ADMIN.name}&password=${ADMIN.password}&scope=farm_owner`,
    basicFarm,
  );
  assert.equal(scope.body.error, 'invalid_scope');
});

test('a sensor: farm.asset.send("sensor", …), readings posted by its device, read back with the session', async () => {
  const token = await fetchToken(
    `grant_type=password&username=${ADMIN.name}&password=${ADMIN.password}&scope=farm_manager`,
    { Authorization: `Basic ${Buffer.from('farm:').toString('base64')}` },
  );
  const bearer = { Authorization: `Bearer ${token.body.access_token}`, 'User-Agent': PY_HEADERS['User-Agent'] };
  // farm.asset.send('sensor', {'attributes': {'name': …}}): POST api/asset/sensor, Accept */*.
  const sent = await fetch(`${server.url}/api/asset/sensor`, {
    method: 'POST',
    headers: { ...bearer, Accept: '*/*', 'Content-Type': 'application/vnd.api+json' },
    body: JSON.stringify({ data: { type: 'asset--sensor', attributes: { name: 'Weather station' } } }),
  });
  assert.equal(sent.status, 201);
  const sensor = ((await sent.json()) as any).data;
  // The station: requests.post(url, json={...}) with the private key.
  const post = await fetch(`${server.url}/asset/${sensor.id}/data/basic?private_key=${sensor.attributes.private_key}`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', 'User-Agent': PY_HEADERS['User-Agent'], Accept: '*/*' },
    body: JSON.stringify({ timestamp: 1700000000, temperature: 12.5, humidity: 80 }),
  });
  assert.equal(post.status, 201);
  // farm.resource.get('data_stream', 'basic') lists the streams the post created.
  const streams = await fetch(`${server.url}/api/data_stream/basic?filter%5Bname%5D=temperature`, {
    headers: { ...bearer, Accept: '*/*' },
  });
  const stream = ((await streams.json()) as any).data[0];
  assert.equal(stream.attributes.name, 'temperature');
  // farm.session.http_request('api/data_stream/<id>/data', params=…): raise_for_status passes.
  const data = await fetch(`${server.url}/api/data_stream/${stream.id}/data?start=1700000000&limit=10`, {
    headers: { ...bearer, Accept: '*/*' },
  });
  assert.equal(data.status, 200);
  assert.deepEqual(await data.json(), [{ timestamp: 1700000000, temperature: '12.5' }]);
});

test('a birth log: farm.log.send("birth", …) sets the child\'s birthdate and mother; a second one raises', async () => {
  const token = await fetchToken(
    `grant_type=password&username=${ADMIN.name}&password=${ADMIN.password}&scope=farm_manager`,
    { Authorization: `Basic ${Buffer.from('farm:').toString('base64')}` },
  );
  const headers = {
    Authorization: `Bearer ${token.body.access_token}`,
    'User-Agent': PY_HEADERS['User-Agent'],
    Accept: '*/*',
    'Content-Type': 'application/vnd.api+json',
  };
  // farm.<x>.send(bundle, payload) with no id: POST api/<entity>/<bundle>, the payload as passed.
  const send = async (entity: string, bundle: string, payload: Record<string, unknown>) => {
    const res = await fetch(`${server.url}/api/${entity}/${bundle}`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ data: { type: `${entity}--${bundle}`, ...payload } }),
    });
    return { status: res.status, body: (await res.json()) as any };
  };
  const goats = (await send('taxonomy_term', 'animal_type', { attributes: { name: 'Goats' } })).body.data;
  const species = { data: { type: 'taxonomy_term--animal_type', id: goats.id } };
  const nanny = (
    await send('asset', 'animal', { attributes: { name: 'Nanny', sex: 'F' }, relationships: { animal_type: species } })
  ).body.data;
  const kid = (await send('asset', 'animal', { attributes: { name: 'Kid' }, relationships: { animal_type: species } }))
    .body.data;
  const birth = {
    attributes: { name: 'Kidding', timestamp: '2024-04-10T06:00:00+00:00', status: 'done' },
    relationships: {
      asset: { data: [{ type: 'asset--animal', id: kid.id }] },
      mother: { data: { type: 'asset--animal', id: nanny.id } },
    },
  };
  const sent = await send('log', 'birth', birth);
  assert.equal(sent.status, 201, JSON.stringify(sent.body));
  // farm.asset.get_id('animal', kid_id)
  const child = ((await (await fetch(`${server.url}/api/asset/animal/${kid.id}`, { headers })).json()) as any).data;
  assert.equal(child.attributes.birthdate, '2024-04-10T06:00:00+00:00');
  assert.deepEqual(
    child.relationships.parent.data.map((r: { id: string }) => r.id),
    [nanny.id],
  );
  // raise_for_status() raises on the 422, whose detail says why.
  const again = await send('log', 'birth', birth);
  assert.equal(again.status, 422);
  assert.match(again.body.errors[0].detail, /birth/i);
});
