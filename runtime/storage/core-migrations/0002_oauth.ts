/**
 * The OAuth 2.0 authorization server's tables: clients, tokens, authorization codes, browser
 * sessions of the authorize flow and its pending authorization requests.
 *
 * Tokens, codes, session ids and client secrets are stored only as SHA-256 hashes of 256-bit
 * random values, looked up through a unique index on the hash: a copy of the database gives no
 * usable credential. Times are Unix seconds, like every other timestamp in Tilth.
 */
import type { Knex } from 'knex';

/** Length of a hex SHA-256 digest. */
const HASH = 64;

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('oauth_clients', (t) => {
    t.increments('id');
    t.text('client_id').notNullable().unique('oauth_clients_client_id_uniq');
    t.text('label').notNullable();
    // Null for public clients. A hash of a generated 256-bit secret, so SHA-256 is enough.
    t.string('secret_hash', HASH).nullable();
    t.boolean('confidential').notNullable();
    // JSON arrays of strings: grant types, redirect URIs, default scopes.
    t.text('grant_types').notNullable();
    t.text('redirect_uris').notNullable();
    t.text('default_scopes').notNullable();
    // The user client_credentials tokens act as.
    t.integer('user_id').nullable().references('id').inTable('users').onDelete('SET NULL');
    t.bigInteger('created').notNullable();
  });
  // One row per allowed CORS origin, so that a request's Origin is one indexed lookup.
  await knex.schema.createTable('oauth_client_origins', (t) => {
    t.integer('client_id').notNullable().references('id').inTable('oauth_clients').onDelete('CASCADE');
    t.text('origin').notNullable();
    t.primary(['client_id', 'origin']);
    t.index(['origin'], 'oauth_client_origins_origin_idx');
  });

  // A chain is everything issued from one grant (a login, an authorization code, a client
  // credentials request): its access tokens and the refresh tokens that replace each other.
  // Presenting a refresh token that was already rotated revokes the whole chain.
  await knex.schema.createTable('oauth_access_tokens', (t) => {
    t.increments('id');
    t.string('token_hash', HASH).notNullable().unique('oauth_access_tokens_hash_uniq');
    t.string('chain_id', 36).notNullable();
    t.integer('client_id').notNullable().references('id').inTable('oauth_clients').onDelete('CASCADE');
    t.integer('user_id').notNullable().references('id').inTable('users').onDelete('CASCADE');
    t.text('scopes').notNullable();
    t.bigInteger('created').notNullable();
    t.bigInteger('expires').notNullable();
    t.bigInteger('revoked').nullable();
    t.index(['chain_id'], 'oauth_access_tokens_chain_idx');
    t.index(['user_id'], 'oauth_access_tokens_user_idx');
    t.index(['expires'], 'oauth_access_tokens_expires_idx');
  });
  await knex.schema.createTable('oauth_refresh_tokens', (t) => {
    t.increments('id');
    t.string('token_hash', HASH).notNullable().unique('oauth_refresh_tokens_hash_uniq');
    t.string('chain_id', 36).notNullable();
    t.integer('client_id').notNullable().references('id').inTable('oauth_clients').onDelete('CASCADE');
    t.integer('user_id').notNullable().references('id').inTable('users').onDelete('CASCADE');
    t.text('scopes').notNullable();
    t.bigInteger('created').notNullable();
    t.bigInteger('expires').notNullable();
    // Set when a refresh replaced this token; presenting it again is a replay.
    t.bigInteger('rotated').nullable();
    t.bigInteger('revoked').nullable();
    t.index(['chain_id'], 'oauth_refresh_tokens_chain_idx');
    t.index(['user_id'], 'oauth_refresh_tokens_user_idx');
    t.index(['expires'], 'oauth_refresh_tokens_expires_idx');
  });
  await knex.schema.createTable('oauth_authorization_codes', (t) => {
    t.increments('id');
    t.string('code_hash', HASH).notNullable().unique('oauth_authorization_codes_hash_uniq');
    // The chain the exchange will start, so that a replayed code can revoke what it issued.
    t.string('chain_id', 36).notNullable();
    t.integer('client_id').notNullable().references('id').inTable('oauth_clients').onDelete('CASCADE');
    t.integer('user_id').notNullable().references('id').inTable('users').onDelete('CASCADE');
    t.text('redirect_uri').notNullable();
    // Whether the authorization request named redirect_uri (then the exchange must repeat it).
    t.boolean('redirect_uri_given').notNullable();
    t.text('scopes').notNullable();
    t.text('code_challenge').nullable();
    t.text('code_challenge_method').nullable();
    t.bigInteger('created').notNullable();
    t.bigInteger('expires').notNullable();
    t.bigInteger('used').nullable();
    t.index(['expires'], 'oauth_authorization_codes_expires_idx');
  });

  // The signed-in browser of the authorize flow. The cookie carries the session id; only its hash is here.
  await knex.schema.createTable('oauth_sessions', (t) => {
    t.string('session_hash', HASH).primary();
    t.integer('user_id').notNullable().references('id').inTable('users').onDelete('CASCADE');
    t.bigInteger('created').notNullable();
    t.bigInteger('expires').notNullable();
    t.index(['expires'], 'oauth_sessions_expires_idx');
    t.index(['user_id'], 'oauth_sessions_user_idx');
  });
  // Authorization requests waiting for the user's decision on the consent page (oauth2orize's
  // transactions), bound to the session that saw the page.
  await knex.schema.createTable('oauth_authorize_requests', (t) => {
    t.string('transaction_hash', HASH).primary();
    t.string('session_hash', HASH)
      .notNullable()
      .references('session_hash')
      .inTable('oauth_sessions')
      .onDelete('CASCADE');
    t.integer('client_id').notNullable().references('id').inTable('oauth_clients').onDelete('CASCADE');
    t.text('redirect_uri').notNullable();
    // The parsed request (response type, scopes, state, PKCE challenge) as JSON.
    t.text('request').notNullable();
    t.bigInteger('created').notNullable();
    t.bigInteger('expires').notNullable();
    t.index(['expires'], 'oauth_authorize_requests_expires_idx');
  });
}

export async function down(): Promise<void> {
  throw new Error('Tilth migrations only go forward: restore a backup to go back.');
}
