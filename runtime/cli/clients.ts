/** `tilth client create|list|delete`: registering OAuth clients. */
import type { Command } from './command.ts';
import { reportingMistakes, requireOption, UsageError } from './command.ts';
import { withExistingDatabase } from './database.ts';
import { SCOPES } from '../access/roles.ts';
import { ClientError, createClient, deleteClient, GRANT_TYPES, listClients, updateClient } from '../oauth/clients.ts';

/** A repeatable option's values, each of which may also be a comma-separated list. */
const list = (v: unknown): string[] =>
  (Array.isArray(v) ? v : typeof v === 'string' ? [v] : [])
    .flatMap((s: string) => s.split(','))
    .map((s) => s.trim())
    .filter(Boolean);

/** Run a command body; a ClientError is the user's mistake: its message and exit code 1. */
const reporting = (fn: () => Promise<void>) => reportingMistakes([ClientError], fn);

export const clientCommands: Command[] = [
  {
    name: ['client', 'create'],
    summary: 'Register an OAuth client. A confidential client’s secret is printed once.',
    usage:
      'tilth client create --id CLIENT_ID [--label LABEL] (--confidential | --public) --grant GRANT … [--redirect-uri URI …] [--scope SCOPE …] [--origin ORIGIN …] [--user NAME]',
    options: {
      id: { type: 'string', description: 'the client_id' },
      label: { type: 'string', description: 'the name shown on the consent page' },
      confidential: { type: 'boolean', description: 'the client keeps a secret (a server-side application)' },
      public: {
        type: 'boolean',
        description: 'the client cannot keep a secret (browser or native app; must use PKCE)',
      },
      grant: {
        type: 'string',
        multiple: true,
        description: `allowed grant; repeat or separate with commas: ${GRANT_TYPES.join(', ')}`,
      },
      'redirect-uri': {
        type: 'string',
        multiple: true,
        description: 'a redirect URI (exact match; loopback IP URIs match any port)',
      },
      scope: {
        type: 'string',
        multiple: true,
        description: `default scope when a request names none (default user_access): ${SCOPES.join(', ')}`,
      },
      origin: { type: 'string', multiple: true, description: 'an allowed CORS origin, e.g. https://app.example.com' },
      user: { type: 'string', description: 'the user client_credentials tokens act as' },
    } as Command['options'],
    async run(values) {
      const clientId = requireOption(values, 'id');
      if (Boolean(values.confidential) === Boolean(values.public))
        throw new UsageError('Say whether the client is --confidential or --public.');
      const grants = list(values.grant);
      if (!grants.length) throw new UsageError(`--grant is required: ${GRANT_TYPES.join(', ')}.`);
      return reporting(async () => {
        const { client, secret, warnings } = await withExistingDatabase((knex) =>
          createClient(knex, {
            clientId,
            label: typeof values.label === 'string' ? values.label : undefined,
            confidential: Boolean(values.confidential),
            grantTypes: grants,
            redirectUris: list(values['redirect-uri']),
            defaultScopes: list(values.scope),
            allowedOrigins: list(values.origin),
            userName: typeof values.user === 'string' ? values.user : null,
          }),
        );
        for (const w of warnings) process.stderr.write(`Warning: ${w}\n`);
        process.stdout.write(
          `Created the ${client.confidential ? 'confidential' : 'public'} client "${client.clientId}" (${client.label}) with grant(s): ${client.grantTypes.join(', ')}.\n`,
        );
        if (secret) process.stdout.write(`Client secret (shown once, only its hash is kept): ${secret}\n`);
      });
    },
  },
  {
    name: ['client', 'list'],
    summary: 'List OAuth clients.',
    usage: 'tilth client list',
    options: {} as Command['options'],
    async run() {
      const { clients, userNames } = await withExistingDatabase(async (knex) => {
        const clients = await listClients(knex);
        const ids = clients.map((c) => c.userId).filter((id): id is number => id !== null);
        const rows: Array<{ id: number; name: string }> = ids.length
          ? await knex('users').whereIn('id', ids).select('id', 'name')
          : [];
        return { clients, userNames: new Map(rows.map((r) => [r.id, r.name])) };
      });
      for (const c of clients) {
        process.stdout.write(
          [
            c.clientId,
            c.label,
            c.confidential ? 'confidential' : 'public',
            `grants=${c.grantTypes.join(',')}`,
            `scopes=${c.defaultScopes.join(',')}`,
            `redirect_uris=${c.redirectUris.join(' ') || '-'}`,
            `origins=${c.allowedOrigins.join(' ') || '-'}`,
            `user=${c.userId === null ? '-' : (userNames.get(c.userId) ?? c.userId)}`,
          ].join('\t') + '\n',
        );
      }
      return 0;
    },
  },
  {
    name: ['client', 'update'],
    summary: 'Change a client in place (its tokens stay valid): each option given replaces that list.',
    usage:
      'tilth client update --id CLIENT_ID [--label LABEL] [--origin ORIGIN …] [--scope SCOPE …] [--redirect-uri URI …]',
    options: {
      id: { type: 'string', description: 'the client_id' },
      label: { type: 'string', description: 'the name shown on the consent page' },
      origin: {
        type: 'string',
        multiple: true,
        description: 'the allowed CORS origins, e.g. https://farmos.app (--origin "" allows none)',
      },
      scope: { type: 'string', multiple: true, description: `the default scopes: ${SCOPES.join(', ')}` },
      'redirect-uri': { type: 'string', multiple: true, description: 'the redirect URIs' },
    } as Command['options'],
    async run(values) {
      const clientId = requireOption(values, 'id');
      const given = (name: string) => (values[name] === undefined ? undefined : list(values[name]));
      const changes = {
        label: typeof values.label === 'string' ? values.label : undefined,
        allowedOrigins: given('origin'),
        defaultScopes: given('scope'),
        redirectUris: given('redirect-uri'),
      };
      if (Object.values(changes).every((v) => v === undefined))
        throw new UsageError('Say what to change: --label, --origin, --scope or --redirect-uri.');
      return reporting(async () => {
        const { client, warnings } = await withExistingDatabase((knex) => updateClient(knex, clientId, changes));
        for (const w of warnings) process.stderr.write(`Warning: ${w}\n`);
        process.stdout.write(
          `Updated the client "${client.clientId}": scopes=${client.defaultScopes.join(',')} redirect_uris=${client.redirectUris.join(' ') || '-'} origins=${client.allowedOrigins.join(' ') || '-'}\n`,
        );
      });
    },
  },
  {
    name: ['client', 'delete'],
    summary: 'Delete an OAuth client and every token it holds.',
    usage: 'tilth client delete --id CLIENT_ID',
    options: {
      id: { type: 'string', description: 'the client_id' },
    } as Command['options'],
    async run(values) {
      const clientId = requireOption(values, 'id');
      return reporting(async () => {
        await withExistingDatabase((knex) => deleteClient(knex, clientId));
        process.stdout.write(`Deleted the client "${clientId}" and its tokens.\n`);
      });
    },
  },
];
