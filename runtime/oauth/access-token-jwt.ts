/**
 * Access tokens as farmOS issues them: JSON Web Tokens signed with RS256 (RFC 9068's profile),
 * which scripts decode for the user's id and the expiry, and which farmOS.py 2.0's login test
 * expects (`".ey" in token`). farmOS's simple_oauth signs with an RSA key of the site; Tilth's is
 * made on the farm's first start and kept in the database (tilth_state, beside the cookie key),
 * so every server process shares it and a backup carries it.
 *
 * The signature is not what makes a token live: the token's row is (oauth/tokens.ts, found by the
 * SHA-256 of the whole token, as opaque tokens always were). A revoked row, a blocked user or a
 * role taken away is seen on the next request by every process, as before. Verifying the
 * signature refuses a forged or damaged token before the database is asked, and vouches for the
 * claims a client reads.
 *
 * Claims (RFC 9068 §2.2): `iss` the server's base URL (the metadata's issuer), `sub` the user's id
 * as farmOS gives it (simple_oauth: the user entity's id, `drupal_internal__uid`), `aud` and
 * `client_id` the client's id (simple_oauth puts the client in `aud`), `iat`, `exp`, `jti` (a
 * UUID, not a secret: only the whole signed token is a credential) and `scope`, space-separated.
 */
import { createPrivateKey, createPublicKey, generateKeyPair, randomUUID } from 'node:crypto';
import { promisify } from 'node:util';
import type { Knex } from 'knex';
import { calculateJwkThumbprint, errors, exportJWK, importPKCS8, importSPKI, jwtVerify, SignJWT } from 'jose';
import { formatScope } from './scopes.ts';

/** RS256, as simple_oauth signs: verifying costs a fraction of signing, and a token is verified far more often. */
const ALG = 'RS256';
/** RFC 9068 §2.1: the `typ` of an access token, which no ID token or other JWT of a client carries. */
const TYP = 'at+jwt';
/** The row of tilth_state holding the signing key (a PKCS #8 PEM). */
const KEY_STATE = 'oauth_jwt_signing_key';
/** RSA modulus: 2048 bits, simple_oauth's documented key size. */
const MODULUS_BITS = 2048;

const generateRsa = promisify(generateKeyPair);

/** A key as jose holds it (a WebCrypto CryptoKey). */
type JoseKey = Awaited<ReturnType<typeof importPKCS8>>;

/** What an access token says, besides what every one says. */
export interface AccessTokenClaims {
  issuer: string;
  userId: number;
  clientId: string;
  scopes: readonly string[];
  /** Unix seconds. */
  issuedAt: number;
  expires: number;
}

/** Why a token that looks like a JWT is refused before its row is read. */
export type JwtRefusal = 'unknown' | 'expired';

/** The farm's key pair, ready to sign and verify access tokens. */
export class AccessTokenKeys {
  private constructor(
    private readonly privateKey: JoseKey,
    private readonly publicKey: JoseKey,
    /** The key's JWK thumbprint (RFC 7638), so that a key replaced later can be told apart. */
    private readonly kid: string,
  ) {}

  /** The keys of a PKCS #8 PEM private key. */
  static async fromPem(pem: string): Promise<AccessTokenKeys> {
    const spki = createPublicKey(createPrivateKey(pem)).export({ type: 'spki', format: 'pem' }).toString();
    const publicKey = await importSPKI(spki, ALG, { extractable: true });
    const kid = await calculateJwkThumbprint(await exportJWK(publicKey));
    return new AccessTokenKeys(await importPKCS8(pem, ALG), publicKey, kid);
  }

  /** A signed access token. */
  sign(claims: AccessTokenClaims): Promise<string> {
    return new SignJWT({ client_id: claims.clientId, scope: formatScope([...claims.scopes]) })
      .setProtectedHeader({ alg: ALG, typ: TYP, kid: this.kid })
      .setIssuer(claims.issuer)
      .setSubject(String(claims.userId))
      .setAudience(claims.clientId)
      .setIssuedAt(claims.issuedAt)
      .setExpirationTime(claims.expires)
      .setJti(randomUUID())
      .sign(this.privateKey);
  }

  /**
   * Whether `token` is one of this farm's access tokens, signed with its key and not expired; the
   * time it expires, or why it is refused. The issuer is not compared: a farm given a new address
   * (TILTH_BASE_URL) keeps its signed-in clients, and only this farm holds the key.
   */
  async verify(token: string): Promise<{ expires: number } | JwtRefusal> {
    try {
      const { payload } = await jwtVerify(token, this.publicKey, {
        algorithms: [ALG],
        typ: TYP,
        requiredClaims: ['exp', 'sub', 'jti', 'client_id'],
      });
      return { expires: payload.exp! };
    } catch (error) {
      if (error instanceof errors.JWTExpired) return 'expired';
      if (error instanceof errors.JOSEError) return 'unknown';
      throw error;
    }
  }
}

/** The header of every token Tilth signs, base64url: `{"alg":"RS256",...}` starts `eyJ`. */
const JWT_SHAPE = /^eyJ[A-Za-z0-9_-]*\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/;

/** Whether a bearer token is a JWT (Tilth's since JWTs), not an opaque token issued before them. */
export function looksLikeJwt(token: string): boolean {
  return JWT_SHAPE.test(token);
}

/** Each database's keys, loaded once (every process of a farm reads the same row). */
const loaded = new WeakMap<Knex, Promise<AccessTokenKeys>>();

/**
 * The farm's access token keys: read from tilth_state, made on the first start. Two processes
 * starting at once each make one, and both use the one stored first.
 */
export function accessTokenKeys(db: Knex): Promise<AccessTokenKeys> {
  let keys = loaded.get(db);
  if (!keys) {
    keys = loadKeys(db);
    // A failure (the database away at start) is not kept: the next request tries again.
    keys.catch(() => loaded.delete(db));
    loaded.set(db, keys);
  }
  return keys;
}

async function loadKeys(db: Knex): Promise<AccessTokenKeys> {
  let row = await db('tilth_state').where('name', KEY_STATE).first('value');
  if (!row) {
    const { privateKey } = await generateRsa('rsa', { modulusLength: MODULUS_BITS });
    const pem = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
    await db('tilth_state').insert({ name: KEY_STATE, value: pem }).onConflict('name').ignore();
    row = await db('tilth_state').where('name', KEY_STATE).first('value');
  }
  return AccessTokenKeys.fromPem(row.value as string);
}
