/**
 * What a signed access token adds to the bearer check and to issuing a token, in CPU time per
 * call (process.cpuUsage, so that other work on a shared machine counts less than in req/s):
 * `node --import tsx bench/bearer-cost.ts`. The figures are in bench/README.md (issue 39).
 */
import { generateKeyPairSync } from 'node:crypto';
import { AccessTokenKeys, looksLikeJwt } from '../runtime/oauth/access-token-jwt.ts';
import { hashSecret, newSecret } from '../runtime/oauth/secrets.ts';

const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const keys = await AccessTokenKeys.fromPem(privateKey.export({ type: 'pkcs8', format: 'pem' }).toString());
const now = Math.floor(Date.now() / 1000);
const claims = {
  issuer: 'http://localhost:8080',
  userId: 12,
  clientId: 'farm',
  scopes: ['farm_manager'],
  issuedAt: now,
  expires: now + 3600,
};
const jwt = await keys.sign(claims);
const opaque = newSecret();

/** CPU microseconds per call of `fn`, run `n` times (after `n / 10` not counted). */
async function cpu(n: number, fn: () => unknown): Promise<number> {
  for (let i = 0; i < n / 10; i++) await fn();
  const start = process.cpuUsage();
  for (let i = 0; i < n; i++) await fn();
  const used = process.cpuUsage(start);
  return (used.user + used.system) / n;
}

const verified = new Map([[hashSecret(jwt), claims.expires]]);
const rows = [
  ['hot path, opaque token (before): SHA-256 of 43 characters', await cpu(200_000, () => hashSecret(opaque))],
  [
    `hot path, JWT (after): SHA-256 of ${jwt.length} characters, the shape test and the verified-signature lookup`,
    await cpu(200_000, () => looksLikeJwt(jwt) && verified.get(hashSecret(jwt))),
  ],
  ['first use of a JWT per process: jose jwtVerify (RS256, 2048-bit)', await cpu(5_000, () => keys.verify(jwt))],
  ['issuing: jose SignJWT (RS256, 2048-bit)', await cpu(1_000, () => keys.sign(claims))],
] as const;
for (const [what, us] of rows) console.log(`${us.toFixed(1).padStart(8)} µs  ${what}`);
