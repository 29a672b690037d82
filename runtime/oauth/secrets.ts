/**
 * The few cryptographic primitives of the authorization server: random credentials, the hashes
 * they are stored as, constant-time comparison, HMAC signatures and the PKCE S256 transform.
 */
import * as crypto from 'node:crypto';
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/** crypto.hash, the one-shot form without a Hash object per call (Node 20.12+; engines allow 20.11). */
const oneShotHash = (crypto as { hash?: (algorithm: string, data: string, encoding: 'hex') => string }).hash;

/** A new credential (token, code, secret, session id): 256 random bits, base64url. */
export function newSecret(): string {
  return randomBytes(32).toString('base64url');
}

/**
 * The stored form of a credential: hex SHA-256. The credentials are 256-bit random values, so a
 * fast unsalted hash is enough; nothing can be guessed from it.
 */
export function hashSecret(secret: string): string {
  // Every request hashes its bearer token: the one-shot form is about twice as quick.
  return oneShotHash ? oneShotHash('sha256', secret, 'hex') : createHash('sha256').update(secret, 'utf8').digest('hex');
}

/** Compares two strings in time that depends only on their lengths. */
export function constantTimeEqual(a: string, b: string): boolean {
  const x = Buffer.from(a, 'utf8');
  const y = Buffer.from(b, 'utf8');
  if (x.length !== y.length) {
    // Still do the work of a comparison so that a length mismatch is not much faster.
    timingSafeEqual(x, x);
    return false;
  }
  return timingSafeEqual(x, y);
}

/** Whether `secret` hashes to `hash`, compared in constant time. */
export function secretMatches(secret: string, hash: string): boolean {
  return constantTimeEqual(hashSecret(secret), hash);
}

/** An HMAC-SHA256 signature (base64url) of `value` under `key`. */
export function sign(key: Buffer, value: string): string {
  return createHmac('sha256', key).update(value, 'utf8').digest('base64url');
}

/** RFC 7636 §4.2: BASE64URL(SHA256(ASCII(code_verifier))). */
export function pkceS256(verifier: string): string {
  return createHash('sha256').update(verifier, 'ascii').digest('base64url');
}

/** RFC 7636 §4.1: a code verifier (and an S256 challenge) is 43 to 128 unreserved characters. */
export const PKCE_VALUE = /^[A-Za-z0-9\-._~]{43,128}$/;
