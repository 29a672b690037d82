/**
 * Token and authorization-code storage behind one small interface. Only SHA-256 hashes of the
 * credentials are stored and looked up (unique indexes on the hash); the raw values exist only in
 * the response that hands them out. Everything is in the database, so any number of server
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
  /** Store a new access token of the chain; returns the raw token. */
  issueAccessToken(grant: Grant, lifetime: number): Promise<string>;
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

/** The token store over a Knex handle or transaction. */
export function tokenStore(db: Knex): TokenStore {
  async function insertToken(table: string, grant: Grant, lifetime: number): Promise<string> {
    const token = newSecret();
    const t = now();
    await db(table).insert({
      token_hash: hashSecret(token),
      chain_id: grant.chainId,
      client_id: grant.clientRowId,
      user_id: grant.userId,
      scopes: formatScope(grant.scopes),
      created: t,
      expires: t + lifetime,
    });
    return token;
  }
  const revokeWhere = async (table: string, column: string, value: string | number) => {
    await db(table).where(column, value).whereNull('revoked').update({ revoked: now() });
  };

  return {
    issueAccessToken: (grant, lifetime) => insertToken('oauth_access_tokens', grant, lifetime),
    issueRefreshToken: (grant, lifetime) => insertToken('oauth_refresh_tokens', grant, lifetime),

    async findAccessToken(raw) {
      const row = await db('oauth_access_tokens as t')
        .join('oauth_clients as c', 'c.id', 't.client_id')
        .where('t.token_hash', hashSecret(raw))
        .first('t.id', 't.chain_id', 't.client_id', 'c.client_id as public_client_id', 't.user_id', 't.scopes', 't.expires', 't.revoked');
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
      const row = await db('oauth_refresh_tokens').where('token_hash', hashSecret(raw)).first();
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
      const changed = await db('oauth_refresh_tokens').where('id', id).whereNull('rotated').whereNull('revoked').update({ rotated: now() });
      return changed === 1;
    },

    revokeAccessTokensOfChain: (chainId) => revokeWhere('oauth_access_tokens', 'chain_id', chainId),

    async revokeChain(chainId) {
      await revokeWhere('oauth_access_tokens', 'chain_id', chainId);
      await revokeWhere('oauth_refresh_tokens', 'chain_id', chainId);
    },

    revokeAccessToken: (id) => revokeWhere('oauth_access_tokens', 'id', id),

    async issueCode(code, lifetime) {
      const raw = newSecret();
      const t = now();
      await db('oauth_authorization_codes').insert({
        code_hash: hashSecret(raw),
        chain_id: code.chainId,
        client_id: code.clientRowId,
        user_id: code.userId,
        redirect_uri: code.redirectUri,
        redirect_uri_given: code.redirectUriGiven,
        scopes: formatScope(code.scopes),
        code_challenge: code.codeChallenge,
        code_challenge_method: code.codeChallengeMethod,
        created: t,
        expires: t + lifetime,
      });
      return raw;
    },

    async findCode(raw) {
      const row = await db('oauth_authorization_codes').where('code_hash', hashSecret(raw)).first();
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
      const changed = await db('oauth_authorization_codes').where('id', id).whereNull('used').update({ used: now() });
      return changed === 1;
    },

    async sweep(graceSeconds) {
      const before = now() - graceSeconds;
      // Rotated refresh tokens are kept until they expire so that a replay is still recognised.
      await db('oauth_access_tokens').where('expires', '<', before).delete();
      await db('oauth_refresh_tokens').where('expires', '<', before).delete();
      await db('oauth_authorization_codes').where('expires', '<', before).delete();
      await db('oauth_authorize_requests').where('expires', '<', before).delete();
      await db('oauth_sessions').where('expires', '<', before).delete();
    },
  };
}
