// The deployment files (operations issue, item 6) use only settings the server knows and the
// same start command as the README and npm start, and the example env file is a valid configuration.
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
  for (const name of known) assert.ok(readme.includes(`\`${name}\``), `the setting ${name} is documented in the README`);
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
  assert.ok(read('README.md').includes('docker compose -f deploy/compose.yaml up -d'), 'the README shows the same command as compose.yaml');
});

test('the example env file is a valid configuration', () => {
  const config = loadConfig(readEnvironment({ TILTH_ENV_FILE: join(ROOT, 'deploy/tilth.env.example') }));
  assert.equal(config.baseUrl, 'https://farm.example.com');
  assert.equal(config.trustProxy, 1);
  assert.equal(config.dataDir, '/var/lib/tilth');
});
