// The deployment files (operations issue, item 6) use only settings the server knows and the
// same start command as the README and npm start, and the example env file is a valid configuration.
// Small truths of a first hour (issue 29 Part B, item 6): the Node the README asks for is the one
// package.json's engines takes, the README and the systemd unit say how to get it on Debian 12 and
// Ubuntu 24.04 (whose own Node is 18), and the image is built without node_modules/ and data/.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from '../support/project.ts';
import { loadConfig, readEnvironment } from '../../runtime/config.ts';

const read = (path: string) => readFileSync(join(ROOT, path), 'utf8');
const SETTING = /\b(TILTH_[A-Z_]+|DATABASE_URL|PORT|HOST)\b/g;
/** Settings the server reads: every name config.ts mentions. */
const known = new Set(read('runtime/config.ts').match(SETTING));
const deployFiles = readdirSync(join(ROOT, 'deploy')).map((f) => `deploy/${f}`);

test('deployment files name only settings the server knows, each documented in the README', () => {
  const readme = read('README.md');
  for (const file of deployFiles) {
    for (const name of new Set(read(file).match(SETTING))) {
      assert.ok(known.has(name), `${file} sets ${name}, which the server does not read`);
      assert.ok(readme.includes(`\`${name}\``), `${name} (used in ${file}) is documented in the README`);
    }
  }
  for (const name of known)
    assert.ok(readme.includes(`\`${name}\``), `the setting ${name} is documented in the README`);
});

test('they start the server as npm start does, check /health, and keep data on one volume', () => {
  const start = JSON.parse(read('package.json')).scripts.start as string;
  assert.equal(start, 'node bin/tilth.js serve --migrate');
  const dockerfile = read('deploy/Dockerfile');
  assert.match(dockerfile, /CMD \["node", "bin\/tilth\.js", "serve", "--migrate"\]/);
  assert.match(dockerfile, /^FROM node:20/m, 'Node 20, as engines says');
  assert.match(dockerfile, /^USER (?!root)\w+/m, 'not root');
  assert.match(dockerfile, /HEALTHCHECK[\s\S]*\/health/);
  assert.match(dockerfile, /TILTH_DATA_DIR=\/data/);
  assert.match(dockerfile, /^VOLUME \/data$/m);
  assert.match(read('deploy/tilth.service'), /ExecStart=\/usr\/bin\/node bin\/tilth\.js serve --migrate/);
  const compose = read('deploy/compose.yaml');
  assert.match(compose, /TILTH_BASE_URL: https:\/\//, 'the public URL is the HTTPS one');
  assert.match(compose, /TILTH_TRUST_PROXY: "1"/, 'one proxy in front');
  assert.match(read('deploy/Caddyfile'), /reverse_proxy tilth:8080/);
  assert.ok(
    read('README.md').includes('docker compose -f deploy/compose.yaml up -d'),
    'the README shows the same command as compose.yaml',
  );
});

test('the example env file is a valid configuration', () => {
  const config = loadConfig(readEnvironment({ TILTH_ENV_FILE: join(ROOT, 'deploy/tilth.env.example') }));
  assert.equal(config.baseUrl, 'https://farm.example.com');
  assert.equal(config.trustProxy, 1);
  assert.equal(config.dataDir, '/var/lib/tilth');
});

test('compose runs Tilth as a role that owns only its database, not as PostgreSQL’s superuser', () => {
  const compose = read('deploy/compose.yaml');
  const tilthUrl = /DATABASE_URL: postgres:\/\/(\w+):([^@]+)@/.exec(compose)!;
  const superuser = /POSTGRES_USER: (\w+)/.exec(compose)![1];
  assert.notEqual(tilthUrl[1], superuser, "Tilth's role is not the image's superuser");
  assert.match(
    compose,
    new RegExp(`POSTGRES_TILTH_PASSWORD: ${tilthUrl[2]}\\n`),
    'the init script sets the password DATABASE_URL uses',
  );
  assert.match(compose, /\.\/postgres-init\.sh:\/docker-entrypoint-initdb\.d\//);
  const init = read('deploy/postgres-init.sh');
  assert.match(init, new RegExp(`CREATE ROLE ${tilthUrl[1]} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE`));
  assert.match(init, new RegExp(`CREATE DATABASE tilth OWNER ${tilthUrl[1]}`));
});

test(
  'on PostgreSQL, Tilth migrates and serves as the role postgres-init.sh creates',
  { skip: !process.env.DATABASE_URL && 'PostgreSQL only' },
  async () => {
    const { default: knexFactory } = await import('knex');
    const { startChildServer } = await import('../support/child-server.ts');
    const { passwordToken, request } = await import('../support/http.ts');
    const { ADMIN } = await import('../support/server.ts');
    const { mkdtempSync, rmSync } = await import('node:fs');
    const { tmpdir } = await import('node:os');
    const { randomBytes } = await import('node:crypto');
    // The script's own statements, with a role and database named for this test.
    const suffix = randomBytes(4).toString('hex');
    const role = `tilth_role_${suffix}`;
    const dbName = `tilth_owned_${suffix}`;
    const sql = /<<'SQL'\n([\s\S]*?)\nSQL/
      .exec(read('deploy/postgres-init.sh'))![1]!
      .replace(/\btilth\b/g, (_m, offset: number, all: string) =>
        all.slice(offset - 9, offset) === 'DATABASE ' ? dbName : role,
      )
      .replace(":'password'", "'role-password'");
    const admin = knexFactory({ client: 'pg', connection: process.env.DATABASE_URL, pool: { min: 0, max: 1 } });
    const dataDir = mkdtempSync(join(tmpdir(), 'tilth-role-'));
    let server: Awaited<ReturnType<typeof startChildServer>> | undefined;
    try {
      for (const statement of sql
        .split(';')
        .map((s) => s.trim())
        .filter(Boolean))
        await admin.raw(statement);
      const url = new URL(process.env.DATABASE_URL!);
      url.username = role;
      url.password = 'role-password';
      url.pathname = `/${dbName}`;
      server = await startChildServer({ DATABASE_URL: url.toString(), TILTH_DATA_DIR: dataDir });
      const token = await passwordToken(server.url, ADMIN.name, ADMIN.password);
      const created = await request(`${server.url}/api/log/activity`, {
        method: 'POST',
        token,
        json: { data: { type: 'log--activity', attributes: { name: 'As its own role' } } },
      });
      assert.equal(created.status, 201, created.text);
      const owned = knexFactory({ client: 'pg', connection: url.toString(), pool: { min: 0, max: 1 } });
      try {
        const { rows } = await owned.raw('SELECT rolsuper, rolcreatedb FROM pg_roles WHERE rolname = current_user');
        assert.deepEqual(rows, [{ rolsuper: false, rolcreatedb: false }]);
      } finally {
        await owned.destroy();
      }
    } finally {
      await server?.stop();
      await admin.raw(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
      await admin.raw(`DROP ROLE IF EXISTS ${role}`);
      await admin.destroy();
      rmSync(dataDir, { recursive: true, force: true });
    }
  },
);

test('the README asks for the Node that package.json engines takes, and says how to get it where the packaged Node is 18', () => {
  const engines = JSON.parse(read('package.json')).engines.node as string;
  assert.equal(engines, '>=20.11 <21 || >=22');
  const readme = read('README.md');
  assert.ok(readme.includes(`\`${engines}\``), `the README quotes engines (${engines})`);
  assert.match(readme, /Node 20\.11 or a later 20, or Node 22 or later/);
  assert.doesNotMatch(readme, /Node 20 is required/, 'not only Node 20');
  const service = read('deploy/tilth.service');
  for (const [name, text] of [
    ['README.md', readme],
    ['deploy/tilth.service', service],
  ] as const) {
    assert.match(text, /Debian 12/, `${name} names Debian 12`);
    assert.match(text, /Ubuntu 24\.04/, `${name} names Ubuntu 24.04`);
    assert.match(
      text,
      /https:\/\/deb\.nodesource\.com\/setup_22\.x/,
      `${name} gives a real route to Node 22 (NodeSource)`,
    );
  }
  assert.match(read('deploy/Dockerfile'), /^FROM node:(20|22)\b/m);
});

test('.dockerignore, at the root the image is built from, keeps node_modules/ and data/ out of it', () => {
  assert.match(read('deploy/compose.yaml'), /context: \.\.\n/, 'compose builds from the repository root');
  assert.match(
    read('deploy/Dockerfile'),
    /docker build -f deploy\/Dockerfile -t tilth \./,
    'and so does the documented docker build',
  );
  const patterns = read('.dockerignore')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line && !line.startsWith('#'))
    .map((line) => line.replace(/^\/|^\*\*\//, '').replace(/\/$/, ''));
  for (const dir of ['node_modules', 'data', '.git'])
    assert.ok(patterns.includes(dir), `.dockerignore leaves out ${dir}/ (it has: ${patterns.join(', ')})`);
});

test('the systemd unit installs as the README asks (the runtime bundle made by `node bin/tilth.js version`), and the README says where a service keeps the first password', () => {
  // Issue 41 Part E, item 6: the unit skipped the version step, and the README said the password
  // is never logged while the unit and compose.yaml sent the reader to their logs for it.
  const unit = read('deploy/tilth.service');
  const install = unit.split('\n').filter((line) => line.startsWith('#'));
  const npmCi = install.findIndex((line) => line.includes('npm ci'));
  const version = install.findIndex((line) => /sudo node bin\/tilth\.js version/.test(line));
  assert.ok(
    npmCi >= 0 && version > npmCi,
    `the unit's steps run node bin/tilth.js version after npm ci:\n${install.join('\n')}`,
  );
  const readme = read('README.md');
  assert.doesNotMatch(readme, /printed on the terminal only, never logged/);
  assert.match(unit, /journalctl -u tilth/);
  assert.match(read('deploy/compose.yaml'), /compose\.yaml logs tilth/);
  assert.match(readme, /journalctl -u tilth/, 'the README names where systemd keeps it');
  assert.match(readme, /compose\.yaml logs tilth/, 'and where Docker keeps it');
});
