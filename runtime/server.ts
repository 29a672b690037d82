/**
 * Starting and stopping a Tilth server: open the database, bind the port (answering 503 until
 * started), check or apply migrations, create the first administrator and the default client (on
 * PostgreSQL under a lock, so that processes started together do this once: storage/process-lock.ts),
 * then serve. Tests start real servers through this on an ephemeral port.
 */
import { fillIfPending } from './storage/change-feed.ts';
import type { Server, ServerResponse } from 'node:http';
import { createAppServer } from './http/node-server.ts';
import { markApi4Port } from './http/shape-choice.ts';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import { loadConfig, networkLinksWarning, type Config } from './config.ts';
import { assertMigrated, migrateLatest } from './storage/migrations.ts';
import { sweepAbandonedUploads } from './files/storage.ts';
import { joinRunningProcesses, withStartLock, type SharedSettings } from './storage/process-lock.ts';
import { createApp } from './http/app.ts';
import { ApiError, toJsonApiErrorDocument } from './errors.ts';
import { JSONAPI_MEDIA_TYPE } from './jsonapi/document.ts';
import { createUser } from './accounts/users.ts';
import { generatePassword } from './accounts/passwords.ts';
import { createProcess } from './host/process.ts';
import { openFarm, type Farm } from './host/farm.ts';
import type { AppContext } from './context.ts';

export interface StartOptions {
  config?: Config;
  /** Apply pending migrations first (npm start does); otherwise refuse a database that is behind. */
  migrate?: boolean;
  generatedDir?: string;
  logger?: Logger;
  /**
   * Called with what a person starting the server should see: where it listens (for the log),
   * and, marked `secret`, a generated administrator password (for the terminal only, never a log).
   */
  announce?: (line: string, options?: { secret?: boolean }) => void;
  /** Called, besides the log's warning, with what a person starting the server must fix (a setting). */
  warn?: (line: string) => void;
}

export interface RunningServer {
  url: string;
  ctx: AppContext;
  /** The farm it serves (host/farm.ts): its services graph, timers and database. */
  farm: Farm;
  server: Server;
  /** The TILTH_API4_PORT server, answering in the farmOS 4.x shape, and its address; null without the port. */
  api4: { server: Server; url: string } | null;
  close(): Promise<void>;
}

/** Create the first administrator on an empty database. Returns the generated password, if one was made. */
async function ensureAdministrator(ctx: AppContext): Promise<{ name: string; password: string | null } | null> {
  const any = await ctx.db.knex('users').first('id');
  if (any) return null;
  const password = ctx.config.adminPassword ?? generatePassword();
  await createUser(ctx.db.knex, { name: ctx.config.adminUser, password, roles: ['administrator'] });
  return { name: ctx.config.adminUser, password: ctx.config.adminPassword ? null : password };
}

/** The answer to a request that comes while the server is still starting (migrating, creating the administrator). */
function answerStarting(res: ServerResponse, via: string): void {
  const { status, headers, body } = toJsonApiErrorDocument(
    new ApiError(503, 'The server is starting (checking or applying migrations); retry in a moment.', {
      headers: { 'Retry-After': '1' },
    }),
    via,
  );
  res
    .writeHead(status, { ...headers, 'Content-Type': JSONAPI_MEDIA_TYPE, 'Cache-Control': 'no-store' })
    .end(JSON.stringify(body));
}

/** The settings every process over one database must share (storage/process-lock.ts), by their variables. */
function sharedSettings(config: Config): SharedSettings {
  return {
    TILTH_BASE_URL: config.baseUrl,
    TILTH_MODULES: [...config.modules].sort().join(','),
    TILTH_FARM_NAME: config.farmName,
  };
}

function listen(server: Server, port: number, host: string): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
}

function closeServer(server: Server): Promise<void> {
  return new Promise<void>((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
}

export async function startServer(options: StartOptions = {}): Promise<RunningServer> {
  const config = options.config ?? loadConfig();
  const processContext = createProcess(config, { logger: options.logger });
  const logger = processContext.logger;
  const announce = options.announce ?? (() => {});
  // The one path every process opens a farm by (host/farm.ts): on SQLite it claims the data folder.
  const farm = await openFarm(processContext, config, { use: 'serve', generatedDir: options.generatedDir });
  const { db, registry, generated } = farm;
  let running = null as { record(): Promise<void>; leave(): Promise<void> } | null;
  let bound: Server | null = null;
  let bound4: Server | null = null;
  try {
    const ctx = farm.ctx;
    const oauth = farm.oauth;
    // The port is bound before the start-up work: a busy one then fails the start before the first
    // administrator is created (its password, shown once, was lost with the failed start). Until
    // that work is done every request is answered 503, starting.
    const app = createApp(ctx, oauth);
    let started = false;
    const server = createAppServer(app, (req, res) =>
      started ? app(req, res) : answerStarting(res, `${config.baseUrl}${req.url ?? ''}`),
    );
    bound = server;
    server.keepAliveTimeout = 65_000;
    server.maxConnections = config.maxConnections;
    await listen(server, config.port, config.host);
    // The farmOS 4.x shape's port: the same app, the same farm; its requests are marked so that
    // http/shape-choice.ts answers them in that shape.
    let api4: RunningServer['api4'] = null;
    if (config.api4Port !== null) {
      const server4 = createAppServer(app, (req, res) => {
        markApi4Port(req);
        return started ? app(req, res) : answerStarting(res, `${config.api4BaseUrl}${req.url ?? ''}`);
      });
      bound4 = server4;
      server4.keepAliveTimeout = 65_000;
      server4.maxConnections = config.maxConnections;
      await listen(server4, config.api4Port, config.host);
      api4 = { server: server4, url: config.api4BaseUrl! };
    }
    const address = server.address() as AddressInfo;
    const loopback =
      address.family === 'IPv6'
        ? address.address === '::'
          ? '[::1]'
          : `[${address.address}]`
        : address.address === '0.0.0.0'
          ? '127.0.0.1'
          : address.address;
    ctx.internalUrl = `http://${loopback}:${address.port}`;
    if (api4) ctx.internalUrl4 = `http://${loopback}:${(api4.server.address() as AddressInfo).port}`;
    const admin = await withStartLock(db, async () => {
      // First: a process whose settings differ from the running ones' changes nothing.
      if (config.databaseUrl) running = await joinRunningProcesses(config.databaseUrl, db, sharedSettings(config));
      if (options.migrate) {
        const notes = new Map<string, string[]>();
        const applied = await migrateLatest(db.knex, generated.migrations, notes);
        if (applied.length) announce(`Applied ${applied.length} migration(s).`);
        for (const [name, lines] of notes) for (const line of lines) announce(`${name}: ${line}`);
      } else {
        await assertMigrated(db.knex, generated.migrations);
      }
      // A farm upgraded to the release that stores placements gets them computed once, before serving.
      const placed = await farm.services.placements.rebuildIfPending(db.knex);
      if (placed) announce(`Computed the locations of ${placed} asset(s).`);
      // Adjustments dated ahead whose moments are not recorded yet (a farm upgraded to the release that records them).
      await farm.services.inventories.recordAllDue(db.knex);
      // A farm upgraded to the release with the change feed gets a row for each of its records, once.
      const fed = await fillIfPending(
        db.knex,
        Object.entries(registry.model.entityTypes).map(([entityType, et]) => ({ entityType, table: et.table })),
      );
      if (fed) announce(`Listed ${fed} record(s) in the change feed.`);
      // Uploads a process that died left half-received: idle for an hour, and for twice the body timeout.
      const swept = sweepAbandonedUploads(config.dataDir, Math.max(3_600_000, 2 * config.bodyTimeoutSeconds * 1000));
      if (swept) logger.info({ removed: swept }, 'removed abandoned uploads');
      await running?.record();
      const created = await ensureAdministrator(ctx);
      await oauth.bootstrap();
      return created;
    });
    started = true;
    const url =
      config.port === 0
        ? `http://${address.family === 'IPv6' ? `[${address.address}]` : address.address}:${address.port}`
        : config.baseUrl;
    // Before the line that says it serves, which is what people (and scripts) wait for.
    const linksWarning = networkLinksWarning({ ...config, port: address.port });
    if (linksWarning) {
      logger.warn(linksWarning);
      options.warn?.(linksWarning);
    }
    announce(
      `Tilth is serving ${config.farmName} at ${config.baseUrl}/api (listening on ${config.host}:${address.port}, ${db.dialect === 'sqlite' ? `SQLite in ${config.dataDir}` : 'PostgreSQL'}).`,
    );
    if (api4)
      announce(
        `It answers in the farmOS 4.x shape at ${api4.url}/api (listening on ${config.host}:${(api4.server.address() as AddressInfo).port}).`,
      );
    if (config.api4Hosts.length)
      announce(`Host names answered in the farmOS 4.x shape: ${config.api4Hosts.join(', ')}.`);
    if (admin) {
      if (admin.password) {
        announce(
          `Created the administrator "${admin.name}" with the password: ${admin.password}\nIt is shown once; change it with \`npx tilth user password --name ${admin.name}\`.`,
          { secret: true },
        );
      } else announce(`Created the administrator "${admin.name}" with the password from TILTH_ADMIN_PASSWORD.`);
    }
    // The due-changes timer and the tombstone pruner (host/farm.ts startTimers).
    farm.startTimers();
    let closing: Promise<void> | null = null;
    return {
      url,
      ctx,
      farm,
      server,
      api4,
      close: () =>
        (closing ??= (async () => {
          await Promise.all([server, api4?.server].filter((s) => s !== undefined).map(closeServer));
          await farm.stopTimers();
          await running?.leave();
          await farm.close();
        })()),
    };
  } catch (error) {
    // A start that failed after binding (a migration, a setting differing from running processes') lets the port go.
    for (const s of [bound, bound4]) if (s?.listening) await closeServer(s);
    await running?.leave();
    await farm.close();
    throw error;
  }
}
