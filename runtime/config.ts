/**
 * Configuration: one typed object, read from the environment and checked once at start.
 * Insecure or surprising settings are announced loudly rather than silently accepted.
 */
import { resolve } from 'node:path';

export interface Config {
  port: number;
  host: string;
  /** Public base URL used in every link, without a trailing slash. */
  baseUrl: string;
  /** postgres://… selects PostgreSQL; null means the embedded SQLite file. */
  databaseUrl: string | null;
  dataDir: string;
  farmName: string;
  systemOfMeasurement: 'metric' | 'us';
  /** Optional modules switched on (TILTH_MODULES=ledger,…). */
  modules: string[];
  adminUser: string;
  adminPassword: string | null;
  accessTokenLifetime: number;
  refreshTokenLifetime: number;
  authorizationCodeLifetime: number;
  /** Attempts per window before the token endpoint and login form answer 429. */
  rateLimit: { windowSeconds: number; perAddress: number; perUsername: number };
  logLevel: string;
  /**
   * How many reverse proxies stand in front of the server (TILTH_TRUST_PROXY, default 0). With N > 0
   * the client address used for rate limiting is the N-th address from the right of
   * X-Forwarded-For; with 0 the header is ignored, since any client could forge it.
   */
  trustProxy: number;
  /** Lifetime in seconds of the browser sign-in of the authorization (login and consent) pages. */
  loginSessionLifetime: number;
}

export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

function integer(env: NodeJS.ProcessEnv, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new ConfigError(`${name} must be a whole number from ${min} to ${max}; it is "${raw}".`);
  }
  return value;
}

/** Read the configuration from an environment (process.env by default). Throws ConfigError naming the variable at fault. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const port = integer(env, 'PORT', 8080, 0, 65535);
  const host = env.HOST || '127.0.0.1';
  let baseUrl = env.TILTH_BASE_URL || `http://localhost:${port}`;
  try {
    const url = new URL(baseUrl);
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error();
    if (url.search || url.hash) throw new Error();
  } catch {
    throw new ConfigError(`TILTH_BASE_URL must be an absolute http(s) URL without query or fragment; it is "${baseUrl}".`);
  }
  baseUrl = baseUrl.replace(/\/+$/, '');
  const databaseUrl = env.DATABASE_URL || null;
  if (databaseUrl && !/^postgres(ql)?:\/\//.test(databaseUrl)) {
    throw new ConfigError(`DATABASE_URL must start with postgres:// (leave it unset for the embedded SQLite database); it is "${databaseUrl.replace(/\/\/[^@]*@/, '//…@')}".`);
  }
  const system = env.TILTH_SYSTEM_OF_MEASUREMENT || 'metric';
  if (system !== 'metric' && system !== 'us') throw new ConfigError(`TILTH_SYSTEM_OF_MEASUREMENT must be "metric" or "us"; it is "${system}".`);
  const modules = (env.TILTH_MODULES || '')
    .split(',')
    .map((m) => m.trim())
    .filter(Boolean);
  return {
    port,
    host,
    baseUrl,
    databaseUrl,
    dataDir: resolve(env.TILTH_DATA_DIR || './data'),
    farmName: env.TILTH_FARM_NAME || 'My farm',
    systemOfMeasurement: system,
    modules,
    adminUser: env.TILTH_ADMIN_USER || 'admin',
    adminPassword: env.TILTH_ADMIN_PASSWORD || null,
    accessTokenLifetime: integer(env, 'TILTH_ACCESS_TOKEN_LIFETIME', 3600, 60, 31_536_000),
    refreshTokenLifetime: integer(env, 'TILTH_REFRESH_TOKEN_LIFETIME', 1_209_600, 60, 31_536_000),
    authorizationCodeLifetime: integer(env, 'TILTH_AUTHORIZATION_CODE_LIFETIME', 60, 10, 600),
    rateLimit: {
      windowSeconds: integer(env, 'TILTH_RATE_LIMIT_WINDOW', 60, 1, 86_400),
      perAddress: integer(env, 'TILTH_RATE_LIMIT_PER_ADDRESS', 300, 1, 1_000_000),
      perUsername: integer(env, 'TILTH_RATE_LIMIT_PER_USERNAME', 20, 1, 1_000_000),
    },
    logLevel: env.TILTH_LOG_LEVEL || 'info',
    trustProxy: integer(env, 'TILTH_TRUST_PROXY', 0, 0, 10),
    loginSessionLifetime: integer(env, 'TILTH_LOGIN_SESSION_LIFETIME', 3600, 60, 86_400),
  };
}
