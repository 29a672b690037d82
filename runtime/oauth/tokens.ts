/**
 * Token and authorization-code storage behind one small interface. Only SHA-256 hashes of the
 * credentials are stored and looked up (unique indexes on the hash); the raw values exist only in
 * the response that hands them out. An access token is a signed JWT (access-token-jwt.ts), stored
 * and found by the hash of the whole token as the opaque ones issued before it were: a copy of
 * the database holds the signing key too, and still no token. Everything is in the database, so any number of server
 * processes can share it.
 *
 * Finding a token is an index search for its hash, not a constant-time comparison of the token:
 * what the timing of such a search could reveal is how much of a SHA-256 digest matched, which
 * says nothing about any token.
 *
 * Bind a store to a transaction (`tokenStore(trx)`) to make several steps one atomic change.
 * "Claim" operations (markCodeUsed, markRotated) are conditional UPDATEs whose row count says who
 * won, which stays correct when two requests race on PostgreSQL or SQLite.
 *
 * Revoking all of a user's tokens at once (blocked, or a new password) is an account rule:
 * accounts/credentials.ts, below the faces, since saving a user calls it.
 */
import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { hashSecret, newSecret } from './secrets.ts';
import { formatScope } from './scopes.ts';
import { execute, selectRows } from '../storage/sql.ts';

const now = () => Math.floor(Date.now() / 1000);

/** What every token of a chain shares: who, for which client, with which scopes. */
export interface Grant {
  chainId: string;
  /** Row id of the client. */
  clientRowId: number;
  userId: number;
  scopes: string[];
}

export interface AccessTokenRecord extends Grant {
  id: number;
  /** The client's public client_id. */
  clientId: string;
  expires: number;
  revoked: number | null;
}

export interface RefreshTokenRecord extends Grant {
  id: number;
  expires: number;
  rotated: number | null;
  revoked: number | null;
}

export interface NewCode extends Grant {
  redirectUri: string;
  redirectUriGiven: boolean;
  codeChallenge: string | null;
  codeChallengeMethod: string | null;
}

export interface CodeRecord extends NewCode {
  id: number;
  expires: number;
  used: number | null;
}

export interface TokenStore {
  /** Store an access token of the chain (a signed JWT, issue.ts) made at `created`, good until `expires` (seconds). */
  storeAccessToken(token: string, grant: Grant, created: number, expires: number): Promise<void>;
  /** Store a new refresh token of the chain; returns the raw token. */
  issueRefreshToken(grant: Grant, lifetime: number): Promise<string>;
  findAccessToken(raw: string): Promise<AccessTokenRecord | null>;
  findRefreshToken(raw: string): Promise<RefreshTokenRecord | null>;
  /** Mark a refresh token as replaced. False when it already was or was revoked: someone replays it. */
  markRotated(id: number): Promise<boolean>;
  /** Revoke the live access tokens of a chain (after a refresh replaced them). */
  revokeAccessTokensOfChain(chainId: string): Promise<void>;
  /** Revoke every access and refresh token of a chain. */
  revokeChain(chainId: string): Promise<void>;
  revokeAccessToken(id: number): Promise<void>;
  issueCode(code: NewCode, lifetime: number): Promise<string>;
  findCode(raw: string): Promise<CodeRecord | null>;
  /** Mark a code as used. False when it already was: a replay. */
  markCodeUsed(id: number): Promise<boolean>;
  /** Delete what expired more than `graceSeconds` ago. */
  sweep(graceSeconds: number): Promise<void>;
}

/** A new chain id for the tokens of one grant. */
export function newChainId(): string {
  return randomUUID();
}

const splitScopes = (s: string) => s.split(' ').filter(Boolean);

/**
 * The store's statements, written once: a refresh or a sign-in runs four or five of them, and in
 * a transaction on SQLite they run on its connection directly (storage/sql.ts). Their columns are
 * named: on PostgreSQL they are prepared, and a `SELECT *` prepared before a column was added
 * would fail after it.
 */
const insertTokenSql = (table: string) =>
  `INSERT INTO ${table} (token_hash, chain_id, client_id, user_id, scopes, created, expires) VALUES (?, ?, ?, ?, ?, ?, ?)`;
const revokeSql = (table: string, column: string) =>
  `UPDATE ${table} SET revoked = ? WHERE ${column} = ? AND revoked IS NULL`;
const SQL = {
  insertAccessToken: insertTokenSql('oauth_access_tokens'),
  insertRefreshToken: insertTokenSql('oauth_refresh_tokens'),
  revokeAccessTokensOfChain: revokeSql('oauth_access_tokens', 'chain_id'),
  revokeRefreshTokensOfChain: revokeSql('oauth_refresh_tokens', 'chain_id'),
  revokeAccessToken: revokeSql('oauth_access_tokens', 'id'),
  findAccessToken: `SELECT t.id, t.chain_id, t.client_id, c.client_id AS public_client_id, t.user_id, t.scopes, t.expires, t.revoked
    FROM oauth_access_tokens AS t JOIN oauth_clients AS c ON c.id = t.client_id WHERE t.token_hash = ? LIMIT 1`,
  findRefreshToken: `SELECT id, chain_id, client_id, user_id, scopes, expires, rotated, revoked FROM oauth_refresh_tokens WHERE token_hash = ? LIMIT 1`,
  markRotated: `UPDATE oauth_refresh_tokens SET rotated = ? WHERE id = ? AND rotated IS NULL AND revoked IS NULL`,
  insertCode: `INSERT INTO oauth_authorization_codes (code_hash, chain_id, client_id, user_id, redirect_uri, redirect_uri_given, scopes, code_challenge, code_challenge_method, created, expires) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  findCode: `SELECT id, chain_id, client_id, user_id, scopes, redirect_uri, redirect_uri_given, code_challenge, code_challenge_method, expires, used
    FROM oauth_authorization_codes WHERE code_hash = ? LIMIT 1`,
  markCodeUsed: `UPDATE oauth_authorization_codes SET used = ? WHERE id = ? AND used IS NULL`,
  sweep: [
    'oauth_access_tokens',
    'oauth_refresh_tokens',
    'oauth_authorization_codes',
    'oauth_authorize_requests',
    'oauth_sessions',
  ].map((table) => `DELETE FROM ${table} WHERE expires < ?`),
};

/** The token store over a Knex handle or transaction. */
export function tokenStore(db: Knex): TokenStore {
  async function insertToken(sql: string, token: string, grant: Grant, created: number, expires: number) {
    await execute(db, sql, [
      hashSecret(token),
      grant.chainId,
      grant.clientRowId,
      grant.userId,
      formatScope(grant.scopes),
      created,
      expires,
    ]);
  }
  const revoke = async (sql: string, value: string | number) => {
    await execute(db, sql, [now(), value]);
  };

  return {
    storeAccessToken: (token, grant, created, expires) =>
      insertToken(SQL.insertAccessToken, token, grant, created, expires),

    async issueRefreshToken(grant, lifetime) {
      const token = newSecret();
      const t = now();
      await insertToken(SQL.insertRefreshToken, token, grant, t, t + lifetime);
      return token;
    },

    async findAccessToken(raw) {
      const [row] = await selectRows<any>(db, SQL.findAccessToken, [hashSecret(raw)]);
      if (!row) return null;
      return {
        id: row.id,
        chainId: row.chain_id,
        clientRowId: row.client_id,
        clientId: row.public_client_id,
        userId: row.user_id,
        scopes: splitScopes(row.scopes),
        expires: Number(row.expires),
        revoked: row.revoked === null ? null : Number(row.revoked),
      };
    },

    async findRefreshToken(raw) {
      const [row] = await selectRows<any>(db, SQL.findRefreshToken, [hashSecret(raw)]);
      if (!row) return null;
      return {
        id: row.id,
        chainId: row.chain_id,
        clientRowId: row.client_id,
        userId: row.user_id,
        scopes: splitScopes(row.scopes),
        expires: Number(row.expires),
        rotated: row.rotated === null ? null : Number(row.rotated),
        revoked: row.revoked === null ? null : Number(row.revoked),
      };
    },

    async markRotated(id) {
      return (await execute(db, SQL.markRotated, [now(), id])) === 1;
    },

    revokeAccessTokensOfChain: (chainId) => revoke(SQL.revokeAccessTokensOfChain, chainId),

    async revokeChain(chainId) {
      await revoke(SQL.revokeAccessTokensOfChain, chainId);
      await revoke(SQL.revokeRefreshTokensOfChain, chainId);
    },

    revokeAccessToken: (id) => revoke(SQL.revokeAccessToken, id),

    async issueCode(code, lifetime) {
      const raw = newSecret();
      const t = now();
      await execute(db, SQL.insertCode, [
        hashSecret(raw),
        code.chainId,
        code.clientRowId,
        code.userId,
        code.redirectUri,
        code.redirectUriGiven,
        formatScope(code.scopes),
        code.codeChallenge,
        code.codeChallengeMethod,
        t,
        t + lifetime,
      ]);
      return raw;
    },

    async findCode(raw) {
      const [row] = await selectRows<any>(db, SQL.findCode, [hashSecret(raw)]);
      if (!row) return null;
      return {
        id: row.id,
        chainId: row.chain_id,
        clientRowId: row.client_id,
        userId: row.user_id,
        scopes: splitScopes(row.scopes),
        redirectUri: row.redirect_uri,
        redirectUriGiven: Boolean(row.redirect_uri_given),
        codeChallenge: row.code_challenge,
        codeChallengeMethod: row.code_challenge_method,
        expires: Number(row.expires),
        used: row.used === null ? null : Number(row.used),
      };
    },

    async markCodeUsed(id) {
      return (await execute(db, SQL.markCodeUsed, [now(), id])) === 1;
    },

    async sweep(graceSeconds) {
      const before = now() - graceSeconds;
      // Rotated refresh tokens are kept until they expire so that a replay is still recognised.
      for (const sql of SQL.sweep) await execute(db, sql, [before]);
    },
  };
}
