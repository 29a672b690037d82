/**
 * Configuration: one typed object, read from the environment (and an env file) and checked once
 * at start, the same way by the server and every command. A bad setting is a ConfigError naming
 * the variable; the command line prints it as one line and exits with code 2.
 */
import { existsSync, readFileSync, statSync } from 'node:fs';
import { networkInterfaces } from 'node:os';
import { join, resolve } from 'node:path';
import { parseEnv } from 'node:util';

/**
 * What one process has whatever farms it serves: where it listens, what it may hold in memory at
 * once, how it logs and hashes, who may read its metrics (host/process.ts).
 */
export interface ProcessSettings {
  port: number;
  host: string;
  logLevel: string;
  /**
   * How many reverse proxies stand in front of the server (TILTH_TRUST_PROXY, default 0). With N > 0
   * the client address used for rate limiting is the N-th address from the right of
   * X-Forwarded-For; with 0 the header is ignored, since any client could forge it.
   */
  trustProxy: number;
  /** Who may read /metrics (TILTH_METRICS): `token` (an account administrator's), `public`, or `off`. */
  metrics: 'token' | 'public' | 'off';
  /** How costly a new password hash is (TILTH_PASSWORD_HASH); see `passwordHashCost`. */
  passwordHash: PasswordHashCost;
  /** The largest JSON:API response, in bytes (TILTH_RESPONSE_MAX_BYTES); above it, 413. */
  responseMaxBytes: number;
  /**
   * What one subrequests call may hold: the bytes of all its responses, and how many it sends;
   * and how many calls run at once in this process (TILTH_SUBREQUEST_MAX_CALLS; the next is a 503).
   */
  subrequests: { maxBytes: number; maxRequests: number; maxCalls: number };
  /** Seconds a request body may stall (send nothing) before it ends with 408 (TILTH_BODY_TIMEOUT). */
  bodyTimeoutSeconds: number;
  /** Bytes the request bodies being read into memory may reserve at once (TILTH_BODY_BUDGET_MB). */
  bodyBudgetBytes: number;
  /** Connections the server keeps open at once; more are closed on arrival (TILTH_MAX_CONNECTIONS). */
  maxConnections: number;
  /** TILTH_LOG_FORMAT: `auto` (readable on a terminal, JSON otherwise), `json` or `pretty`. */
  logFormat: 'auto' | 'json' | 'pretty';
}

/**
 * What belongs to one farm: its address and name, its database and data folder, its modules and
 * site folder, its first administrator, its token lifetimes and limits (host/farm.ts).
 */
export interface FarmSettings {
  /** Public base URL used in every link, without a trailing slash. */
  baseUrl: string;
  /** True when TILTH_BASE_URL is unset and `baseUrl` is the default, http://localhost:$PORT. */
  baseUrlDefaulted?: boolean;
  /** postgres://… selects PostgreSQL; null means the embedded SQLite file. */
  databaseUrl: string | null;
  dataDir: string;
  farmName: string;
  systemOfMeasurement: 'metric' | 'us';
  /**
   * The locale (a BCP 47 tag, TILTH_LOCALE) and IANA time zone (TILTH_TIME_ZONE) the web pages
   * write every date and number in; each defaults to the server's own.
   */
  locale: string;
  timeZone: string;
  /** Optional modules switched on (TILTH_MODULES=ledger,…). */
  modules: string[];
  /** The farm's own definitions and what was generated from them (TILTH_SITE_DIR; default site/ in the checkout). */
  siteDir: string;
  adminUser: string;
  adminPassword: string | null;
  accessTokenLifetime: number;
  refreshTokenLifetime: number;
  authorizationCodeLifetime: number;
  /** Attempts per window before the token endpoint and login form answer 429. */
  rateLimit: { windowSeconds: number; perAddress: number; perUsername: number };
  /** Lifetime in seconds of the browser sign-in of the authorization (login and consent) pages. */
  loginSessionLifetime: number;
  /**
   * How SQLite's writes reach the disk (TILTH_SQLITE_SYNCHRONOUS): FULL (default) syncs the
   * write-ahead log after every commit and before the answer (off the event loop: storage/
   * wal-sync.ts), so an acknowledged write survives a power cut; NORMAL syncs only at
   * checkpoints, faster, but a power cut (not a crash of the process) may lose the last commits.
   * SQLite itself runs `synchronous=NORMAL` either way, which keeps the file safe from corruption.
   */
  sqliteSynchronous: 'FULL' | 'NORMAL';
  /**
   * Seconds after a refresh token was rotated in which presenting it again is refused without
   * revoking its chain (TILTH_REFRESH_REUSE_GRACE): a client racing its own refresh (two tabs, a
   * retry after a lost response) is not logged out everywhere. After it, reuse revokes the chain.
   */
  refreshReuseGraceSeconds: number;
  /** Whether Field Kit's public client `fieldkit` exists (TILTH_FIELDKIT_CLIENT, default 1). */
  fieldKitClient: boolean;
  /** Whether the default `farm` client must use PKCE too (TILTH_FARM_CLIENT_REQUIRE_PKCE=1). */
  farmClientRequiresPkce: boolean;
  /** The largest file upload accepted, in bytes (TILTH_UPLOAD_MAX_BYTES). */
  uploadMaxBytes: number;
  /**
   * Days the change feed keeps a deleted record's tombstone, and a cursor stays good
   * (TILTH_TOMBSTONE_DAYS, default 365; a fraction of a day is allowed). An older cursor is a 410.
   */
  tombstoneDays: number;
  /** The largest JSON document `tilth import farmos` reads from its source, in bytes (TILTH_IMPORT_MAX_DOCUMENT_MB). */
  importMaxDocumentBytes: number;
  /**
   * The map's base layer (TILTH_MAP_TILES, an XYZ tile URL, and TILTH_MAP_TILES_ATTRIBUTION): the
   * URL, the origins it loads from (the pages' CSP lets images come from them only), its
   * attribution as plain text. Null (the default): no base layer, the farm's shapes on a plain
   * background, nothing from the internet.
   */
  mapTiles: MapTiles | null;
}

/**
 * Every setting, as read from one environment: a process serving one farm (the server, every
 * command) reads both halves at once. The environment's variables and their checks are unchanged.
 */
export type Config = ProcessSettings & FarmSettings;

export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

/** pino's levels: anything else is a mistake, not "info". */
const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

/**
 * The environment with the env file's settings under it: TILTH_ENV_FILE, or `./.env` when there
 * is one. Variables set in the environment win over the file.
 */
export function readEnvironment(env: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  const named = env.TILTH_ENV_FILE;
  const file = named || (existsSync('.env') ? '.env' : null);
  if (!file) return env;
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new ConfigError(
      `TILTH_ENV_FILE names ${resolve(file)}, which cannot be read (${(error as NodeJS.ErrnoException).code ?? 'error'}).`,
    );
  }
  return { ...parseEnv(text), ...env };
}

/** Whether a listening address is this machine alone (127.0.0.0/8, ::1, localhost). */
function isLoopback(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, '').toLowerCase();
  return h === 'localhost' || h === '::1' || /^127\.\d+\.\d+\.\d+$/.test(h) || h === '::ffff:127.0.0.1';
}

/**
 * What to say at start when the server listens beyond this machine (HOST not loopback) but its
 * links, with TILTH_BASE_URL unset, say http://localhost:…: a phone or another computer on the
 * farm's network cannot follow them. Null when the links are right.
 */
export function networkLinksWarning(
  config: Pick<Config, 'host' | 'port' | 'baseUrl' | 'baseUrlDefaulted'>,
): string | null {
  if (!config.baseUrlDefaulted || isLoopback(config.host)) return null;
  const wildcard = config.host === '0.0.0.0' || config.host === '::' || config.host === '[::]';
  let address = wildcard ? null : config.host;
  if (!address) {
    for (const entries of Object.values(networkInterfaces())) {
      const found = entries?.find((e) => e.family === 'IPv4' && !e.internal);
      if (found) {
        address = found.address;
        break;
      }
    }
  }
  const example = `http://${address && address.includes(':') ? `[${address}]` : (address ?? 'this-machine')}:${config.port}`;
  return `HOST=${config.host} serves the network, but TILTH_BASE_URL is unset, so links say ${config.baseUrl}, which a phone or another computer cannot follow. Set TILTH_BASE_URL to the address they reach this server at, e.g. TILTH_BASE_URL=${example}${address && wildcard ? " (this machine's address on the network)" : ''}, or the https:// address of a reverse proxy in front.`;
}

/** Where the configured database is, for people: the SQLite file, or the PostgreSQL database without its password. */
export function describeDatabase(config: Pick<Config, 'databaseUrl' | 'dataDir'>): string {
  if (!config.databaseUrl) return `SQLite database ${join(config.dataDir, 'tilth.sqlite')}`;
  const url = new URL(config.databaseUrl);
  return `PostgreSQL database ${decodeURIComponent(url.pathname.slice(1)) || '(default)'} on ${url.hostname}:${url.port || 5432}`;
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

/**
 * How costly a new password hash is to compute (TILTH_PASSWORD_HASH):
 * - `strong` (the default): argon2's own defaults, 64 MiB, 3 passes, 4 lanes.
 * - `owasp-minimum`: the OWASP Password Storage Cheat Sheet's floor for argon2id, 19 MiB, 2
 *   passes, 1 lane: about an eighth of the time and a third of the memory, for a small box that
 *   signs many people in at once (the test suite runs with it too).
 * A hash records its own parameters, so hashes made under either setting are checked alike.
 */
export type PasswordHashCost = 'strong' | 'owasp-minimum';

export function passwordHashCost(env: NodeJS.ProcessEnv): PasswordHashCost {
  const cost = env.TILTH_PASSWORD_HASH || 'strong';
  if (cost !== 'strong' && cost !== 'owasp-minimum')
    throw new ConfigError(`TILTH_PASSWORD_HASH must be "strong" or "owasp-minimum"; it is "${cost}".`);
  return cost;
}

function positiveNumber(env: NodeJS.ProcessEnv, name: string, fallback: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value <= 0 || value > max)
    throw new ConfigError(`${name} must be a number above 0 and at most ${max}; it is "${raw}".`);
  return value;
}

/**
 * TILTH_LOCALE: a BCP 47 tag this Node's Intl can format in (canonicalised: `en-gb` → `en-GB`);
 * unset, the server's own locale.
 */
export function farmLocale(env: NodeJS.ProcessEnv): string {
  const raw = env.TILTH_LOCALE;
  if (raw === undefined || raw === '') return new Intl.DateTimeFormat().resolvedOptions().locale;
  let tag: string | undefined;
  try {
    tag = Intl.getCanonicalLocales(raw)[0];
  } catch {
    tag = undefined;
  }
  // A well-formed tag Node has no data for would silently fall back to another language.
  if (
    !tag ||
    !Intl.DateTimeFormat.supportedLocalesOf([tag]).length ||
    !Intl.NumberFormat.supportedLocalesOf([tag]).length
  )
    throw new ConfigError(
      `TILTH_LOCALE must be a language tag such as "en-GB" or "fr-FR" that this Node.js formats dates in; it is "${raw}".`,
    );
  return tag;
}

/** TILTH_TIME_ZONE: an IANA time zone (`Europe/Paris`, `UTC`); unset, the server's own. */
export function farmTimeZone(env: NodeJS.ProcessEnv): string {
  const raw = env.TILTH_TIME_ZONE;
  if (raw === undefined || raw === '') return new Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC';
  try {
    // The zone as Intl names it (`europe/paris` → `Europe/Paris`); a RangeError when there is none.
    return new Intl.DateTimeFormat('en', { timeZone: raw }).resolvedOptions().timeZone;
  } catch {
    throw new ConfigError(`TILTH_TIME_ZONE must be an IANA time zone such as "Europe/Paris" or "UTC"; it is "${raw}".`);
  }
}

/** Read the configuration from an environment (process.env by default). Throws ConfigError naming the variable at fault. */
export function loadConfig(env: NodeJS.ProcessEnv = readEnvironment()): Config {
  const port = integer(env, 'PORT', 8080, 0, 65535);
  const host = env.HOST || '127.0.0.1';
  let baseUrl = env.TILTH_BASE_URL || `http://localhost:${port}`;
  try {
    const url = new URL(baseUrl);
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error();
    if (url.search || url.hash) throw new Error();
  } catch {
    throw new ConfigError(
      `TILTH_BASE_URL must be an absolute http(s) URL without query or fragment; it is "${baseUrl}".`,
    );
  }
  baseUrl = baseUrl.replace(/\/+$/, '');
  const databaseUrl = env.DATABASE_URL || null;
  if (databaseUrl && !/^postgres(ql)?:\/\//.test(databaseUrl)) {
    throw new ConfigError(
      `DATABASE_URL must start with postgres:// (leave it unset for the embedded SQLite database); it is "${databaseUrl.replace(/\/\/[^@]*@/, '//…@')}".`,
    );
  }
  const system = env.TILTH_SYSTEM_OF_MEASUREMENT || 'metric';
  if (system !== 'metric' && system !== 'us')
    throw new ConfigError(`TILTH_SYSTEM_OF_MEASUREMENT must be "metric" or "us"; it is "${system}".`);
  const logLevel = env.TILTH_LOG_LEVEL || 'info';
  if (!LOG_LEVELS.includes(logLevel))
    throw new ConfigError(`TILTH_LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}; it is "${logLevel}".`);
  const dataDir = resolve(env.TILTH_DATA_DIR || './data');
  if (existsSync(dataDir) && !statSync(dataDir).isDirectory())
    throw new ConfigError(`TILTH_DATA_DIR must be a directory; ${dataDir} is a file.`);
  const synchronous = (env.TILTH_SQLITE_SYNCHRONOUS || 'FULL').toUpperCase();
  if (synchronous !== 'FULL' && synchronous !== 'NORMAL')
    throw new ConfigError(
      `TILTH_SQLITE_SYNCHRONOUS must be "FULL" or "NORMAL"; it is "${env.TILTH_SQLITE_SYNCHRONOUS}".`,
    );
  const logFormat = env.TILTH_LOG_FORMAT || 'auto';
  if (logFormat !== 'auto' && logFormat !== 'json' && logFormat !== 'pretty')
    throw new ConfigError(`TILTH_LOG_FORMAT must be "auto", "json" or "pretty"; it is "${logFormat}".`);
  const metrics = env.TILTH_METRICS || 'token';
  if (metrics !== 'token' && metrics !== 'public' && metrics !== 'off')
    throw new ConfigError(`TILTH_METRICS must be "token", "public" or "off"; it is "${metrics}".`);
  const modules = (env.TILTH_MODULES || '')
    .split(',')
    .map((m) => m.trim())
    .filter(Boolean);
  // The site folder's default is beside definitions/ in the checkout, wherever the command runs
  // from, as `npm run generate` finds it; .gitignore keeps it out of Tilth's own tree.
  const siteDir = resolve(env.TILTH_SITE_DIR || join(import.meta.dirname, '..', 'site'));
  if (existsSync(siteDir) && !statSync(siteDir).isDirectory())
    throw new ConfigError(`TILTH_SITE_DIR must be a directory; ${siteDir} is a file.`);
  return {
    port,
    host,
    siteDir,
    baseUrl,
    baseUrlDefaulted: !env.TILTH_BASE_URL,
    databaseUrl,
    dataDir,
    farmName: env.TILTH_FARM_NAME || 'My farm',
    systemOfMeasurement: system,
    locale: farmLocale(env),
    timeZone: farmTimeZone(env),
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
    logLevel,
    trustProxy: integer(env, 'TILTH_TRUST_PROXY', 0, 0, 10),
    loginSessionLifetime: integer(env, 'TILTH_LOGIN_SESSION_LIFETIME', 3600, 60, 86_400),
    sqliteSynchronous: synchronous,
    metrics,
    logFormat,
    refreshReuseGraceSeconds: integer(env, 'TILTH_REFRESH_REUSE_GRACE', 10, 0, 300),
    fieldKitClient: integer(env, 'TILTH_FIELDKIT_CLIENT', 1, 0, 1) === 1,
    farmClientRequiresPkce: integer(env, 'TILTH_FARM_CLIENT_REQUIRE_PKCE', 0, 0, 1) === 1,
    passwordHash: passwordHashCost(env),
    responseMaxBytes: integer(env, 'TILTH_RESPONSE_MAX_BYTES', 32 * 1024 * 1024, 64 * 1024, 1024 * 1024 * 1024),
    subrequests: {
      maxBytes: integer(env, 'TILTH_SUBREQUEST_MAX_BYTES', 64 * 1024 * 1024, 64 * 1024, 1024 * 1024 * 1024),
      maxRequests: integer(env, 'TILTH_SUBREQUEST_MAX_REQUESTS', 250, 1, 10_000),
      maxCalls: integer(env, 'TILTH_SUBREQUEST_MAX_CALLS', 4, 1, 1000),
    },
    uploadMaxBytes: integer(env, 'TILTH_UPLOAD_MAX_BYTES', 64 * 1024 * 1024, 1024, 4 * 1024 * 1024 * 1024),
    bodyTimeoutSeconds: integer(env, 'TILTH_BODY_TIMEOUT', 30, 1, 3600),
    tombstoneDays: positiveNumber(env, 'TILTH_TOMBSTONE_DAYS', 365, 36500),
    bodyBudgetBytes: integer(env, 'TILTH_BODY_BUDGET_MB', 32, 4, 4096) * 1024 * 1024,
    maxConnections: integer(env, 'TILTH_MAX_CONNECTIONS', 1000, 10, 1_000_000),
    importMaxDocumentBytes: integer(env, 'TILTH_IMPORT_MAX_DOCUMENT_MB', 64, 1, 4096) * 1024 * 1024,
    mapTiles: mapTiles(env),
  };
}

/** A base layer of XYZ tiles for the map. */
export interface MapTiles {
  url: string;
  origins: string[];
  attribution: string;
}

/**
 * TILTH_MAP_TILES: an http(s) URL with `{z}`, `{x}` and `{y}` (and, in its host, an optional range
 * of subdomains such as `{a-c}`, which OpenLayers spreads requests over); its attribution in
 * TILTH_MAP_TILES_ATTRIBUTION. Unset: no base layer.
 */
export function mapTiles(env: NodeJS.ProcessEnv): MapTiles | null {
  const url = env.TILTH_MAP_TILES;
  if (!url) return null;
  const refuse = (why: string) =>
    new ConfigError(
      `TILTH_MAP_TILES must be an http(s) URL of XYZ tiles with {z}, {x} and {y}, e.g. "https://tile.openstreetmap.org/{z}/{x}/{y}.png"; ${why}.`,
    );
  if (!/\{z\}/.test(url) || !/\{x\}/.test(url) || !/\{-?y\}/.test(url)) throw refuse(`it is "${url}"`);
  // The subdomains' range, each written out: the CSP names every origin the tiles come from.
  const range = /\{([a-z0-9])-([a-z0-9])\}/.exec(url);
  const subdomains = range
    ? Array.from({ length: range[2]!.charCodeAt(0) - range[1]!.charCodeAt(0) + 1 }, (_, i) =>
        String.fromCharCode(range[1]!.charCodeAt(0) + i),
      )
    : [null];
  if (!subdomains.length || subdomains.length > 26) throw refuse(`its subdomain range is not one, in "${url}"`);
  const origins: string[] = [];
  for (const sub of subdomains) {
    const one = (sub === null ? url : url.replace(range![0], sub)).replace(/\{-?[xyz]\}/g, '0');
    let parsed: URL;
    try {
      parsed = new URL(one);
    } catch {
      throw refuse(`it is "${url}"`);
    }
    if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:') throw refuse(`it is "${url}"`);
    if (!origins.includes(parsed.origin)) origins.push(parsed.origin);
  }
  return { url, origins, attribution: env.TILTH_MAP_TILES_ATTRIBUTION ?? '' };
}
