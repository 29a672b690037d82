// Access tokens as farmOS issues them (issue 39): RS256-signed JWTs (RFC 9068) that scripts decode
// for the user's id and the expiry, and that farmOS.py 2.0's login test expects (`".ey" in token`).
// The signature vouches for the claims; the token's row still decides whether it is live, so a
// revocation counts at once, on every process. Opaque tokens issued before keep working until they
// expire.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createPublicKey, generateKeyPairSync, randomUUID, sign as rsaSign, verify as rsaVerify } from 'node:crypto';
import type { Knex } from 'knex';
import { createTestDatabase, startTestServer, ADMIN, type TestServer } from '../support/server.ts';
import { startCluster } from '../support/cluster.ts';
import { passwordToken, request } from '../support/http.ts';
import { addUser, api, passwordGrant, postForm } from './helpers.ts';
import { hashSecret, newSecret } from '../../runtime/oauth/secrets.ts';
import { AccessTokenKeys } from '../../runtime/oauth/access-token-jwt.ts';

let server: TestServer;
before(async () => {
  server = await startTestServer();
});
after(() => server.close());

const SIGNING_KEY_ROW = 'oauth_jwt_signing_key';
const part = (token: string, i: number) => JSON.parse(Buffer.from(token.split('.')[i]!, 'base64url').toString('utf8'));
const now = () => Math.floor(Date.now() / 1000);

async function signingKeyPem(knex: Knex): Promise<string> {
  return ((await knex('tilth_state').where('name', SIGNING_KEY_ROW).first('value')) as { value: string }).value;
}

/** A JWT of `header` and `payload` signed RS256 with `privateKey` (node:crypto, not the server's code). */
function signWith(privateKey: Parameters<typeof rsaSign>[2], header: object, payload: object): string {
  const input = `${Buffer.from(JSON.stringify(header)).toString('base64url')}.${Buffer.from(JSON.stringify(payload)).toString('base64url')}`;
  return `${input}.${rsaSign('sha256', Buffer.from(input), privateKey).toString('base64url')}`;
}

function assertRefused(res: Awaited<ReturnType<typeof api>>, why: RegExp) {
  assert.equal(res.status, 401, res.text);
  assert.match(res.headers.get('www-authenticate') ?? '', /error="invalid_token"/);
  assert.match(res.body.errors[0].detail, why);
}

test('an access token is an RS256 JWT carrying the user, the client, the scope and the expiry; the refresh token stays opaque', async () => {
  const worker = await addUser(server, ['farm_worker']);
  const pair = await passwordGrant(server, worker.name, worker.password, 'farm_worker');
  const jwt = pair.access_token;
  assert.ok(jwt.includes('.ey'), 'farmOS.py 2.0 asserts ".ey" in token');
  assert.deepEqual(Object.keys(part(jwt, 0)).sort(), ['alg', 'kid', 'typ']);
  assert.equal(part(jwt, 0).alg, 'RS256');
  assert.equal(part(jwt, 0).typ, 'at+jwt');

  const claims = part(jwt, 1);
  assert.equal(claims.iss, server.url);
  assert.equal(claims.aud, 'farm');
  assert.equal(claims.client_id, 'farm');
  assert.equal(claims.scope, 'farm_worker');
  assert.match(claims.jti, /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
  assert.equal(claims.exp - claims.iat, pair.expires_in);
  assert.ok(Math.abs(claims.iat - now()) <= 5, 'issued now');
  // sub is the user's id as farmOS gives it: the drupal_internal__uid of the user's record.
  const me = await api(`${server.url}/api/user/user/${worker.uuid}`, jwt);
  assert.equal(me.status, 200, me.text);
  assert.equal(claims.sub, String(me.body.data.attributes.drupal_internal__uid));

  // Signed with the farm's key, which lives with its other keys in the database.
  const [h, p, s] = jwt.split('.');
  const publicKey = createPublicKey(await signingKeyPem(server.ctx.db.knex));
  assert.ok(rsaVerify('sha256', Buffer.from(`${h}.${p}`), publicKey, Buffer.from(s!, 'base64url')));

  assert.match(pair.refresh_token, /^[A-Za-z0-9_-]{43}$/);
  const stored = JSON.stringify(await server.ctx.db.knex('oauth_access_tokens').select());
  assert.ok(!stored.includes(jwt) && !stored.includes(s!), 'the token itself is not stored');
  assert.ok(stored.includes(hashSecret(jwt)), 'its hash is');
});

test('a token signed with another key, changed, or never issued is refused', async () => {
  const pair = await passwordGrant(server, ADMIN.name, ADMIN.password);
  const [h, p, s] = pair.access_token.split('.');
  const header = part(pair.access_token, 0);
  const claims = part(pair.access_token, 1);

  const { privateKey: otherKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  assertRefused(await api(`${server.url}/api`, signWith(otherKey, header, claims)), /invalid/);

  const widened = Buffer.from(JSON.stringify({ ...claims, scope: 'farm_manager' })).toString('base64url');
  assertRefused(await api(`${server.url}/api`, `${h}.${widened}.${s}`), /invalid/);
  assertRefused(await api(`${server.url}/api`, `${h}.${p}.${s!.slice(0, -4)}AAAA`), /invalid/);

  const unsigned = `${Buffer.from(JSON.stringify({ alg: 'none', typ: 'at+jwt' })).toString('base64url')}.${p}.`;
  assertRefused(await api(`${server.url}/api`, unsigned), /invalid/);

  // Well signed with the farm's own key, but no row says it was issued: the row makes a token live.
  const farmKey = await signingKeyPem(server.ctx.db.knex);
  const forged = signWith(farmKey, header, { ...claims, jti: randomUUID() });
  assertRefused(await api(`${server.url}/api`, forged), /invalid/);

  const keys = await AccessTokenKeys.fromPem(farmKey);
  const lapsed = await keys.sign({
    issuer: server.url,
    userId: 1,
    clientId: 'farm',
    scopes: ['user_access'],
    issuedAt: now() - 7200,
    expires: now() - 3600,
  });
  assertRefused(await api(`${server.url}/api`, lapsed), /expired/);

  assert.equal((await api(`${server.url}/api`, pair.access_token)).status, 200, 'the real one still works');
});

test('revoking a token that was just used (its signature already verified) refuses it at once', async () => {
  const signedOut = await passwordGrant(server, ADMIN.name, ADMIN.password);
  assert.equal((await api(`${server.url}/api`, signedOut.access_token)).status, 200);
  const revoked = await postForm(`${server.url}/oauth/revoke`, { client_id: 'farm', token: signedOut.access_token });
  assert.equal(revoked.status, 200);
  assertRefused(await api(`${server.url}/api`, signedOut.access_token), /revoked/);

  // Signing out with the refresh token ends the chain's access token too.
  const pair = await passwordGrant(server, ADMIN.name, ADMIN.password);
  assert.equal((await api(`${server.url}/api`, pair.access_token)).status, 200);
  await postForm(`${server.url}/oauth/revoke`, { client_id: 'farm', token: pair.refresh_token });
  assertRefused(await api(`${server.url}/api`, pair.access_token), /revoked/);

  // A refresh replaces the pair: the previous access token stops at once.
  const second = await passwordGrant(server, ADMIN.name, ADMIN.password);
  assert.equal((await api(`${server.url}/api`, second.access_token)).status, 200);
  const refreshed = await postForm(`${server.url}/oauth/token`, {
    grant_type: 'refresh_token',
    client_id: 'farm',
    refresh_token: second.refresh_token,
  });
  assert.equal(refreshed.status, 200, refreshed.text);
  assertRefused(await api(`${server.url}/api`, second.access_token), /revoked/);
  assert.equal((await api(`${server.url}/api`, refreshed.body.access_token)).status, 200);
});

test('an opaque token issued before tokens were JWTs keeps working after the upgrade, until it expires', async () => {
  const database = await createTestDatabase();
  try {
    // A farm as the release before JWTs left it: no signing key, and tokens that are random
    // strings, stored as tilth 2.0.0's tokenStore stored them.
    const old = await startTestServer({ database });
    const knex = old.ctx.db.knex;
    const client = await knex('oauth_clients').where('client_id', 'farm').first('id');
    const admin = await knex('users').where('name', ADMIN.name).first('id', 'uuid');
    const opaque = (expires: number) => {
      const token = newSecret();
      return knex('oauth_access_tokens')
        .insert({
          token_hash: hashSecret(token),
          chain_id: randomUUID(),
          client_id: client.id,
          user_id: admin.id,
          scopes: 'user_access',
          created: now() - 600,
          expires,
        })
        .then(() => token);
    };
    const live = await opaque(now() + 3000);
    const lapsed = await opaque(now() - 1);
    await knex('tilth_state').where('name', SIGNING_KEY_ROW).delete();
    await old.close();

    const upgraded = await startTestServer({ database });
    try {
      const me = await api(`${upgraded.url}/api`, live);
      assert.equal(me.status, 200, me.text);
      assert.equal(me.body.meta.links.me.meta.id, admin.uuid);
      assertRefused(await api(`${upgraded.url}/api`, lapsed), /expired/);
      // The upgraded farm made its key, and signs new tokens with it.
      const fresh = await passwordToken(upgraded.url, ADMIN.name, ADMIN.password);
      assert.ok(fresh.includes('.ey'));
      assert.ok(await signingKeyPem(upgraded.ctx.db.knex));
      // The old token is revoked like any other.
      assert.equal((await postForm(`${upgraded.url}/oauth/revoke`, { client_id: 'farm', token: live })).status, 200);
      assertRefused(await api(`${upgraded.url}/api`, live), /revoked/);
    } finally {
      await upgraded.close();
    }
  } finally {
    await database.drop();
  }
});

test(
  'processes started at once share one key: a token from one works on another, and a revocation on one counts on the other at once',
  { skip: process.env.DATABASE_URL ? false : 'several processes share a PostgreSQL database only' },
  async () => {
    const cluster = await startCluster({ processes: 2, together: true });
    try {
      const [a, b] = cluster.servers;
      const jwt = await passwordToken(a!.url, ADMIN.name, ADMIN.password);
      assert.equal((await request(`${b!.url}/api`, { token: jwt })).status, 200, 'verified by the other process');
      const revoked = await postForm(`${a!.url}/oauth/revoke`, { client_id: 'farm', token: jwt });
      assert.equal(revoked.status, 200);
      const after = await request(`${b!.url}/api`, { token: jwt });
      assert.equal(after.status, 401, after.text);
      assert.match(after.body.errors[0].detail, /revoked/);
    } finally {
      await cluster.close();
    }
  },
);
