// The generator refuses what cannot work, in one line naming the files (issue 29 Part A): two
// migrations with one number, an index that does not match the migration files, a module bundle
// that shadows a core one.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { scratchProject, ROOT, type ScratchProject } from '../support/project.ts';
import { migrationChecksum, MigrationFilesError } from '../../generator/emit/migrations.ts';
import { generate } from '../../generator/index.ts';

const projects: ScratchProject[] = [];
after(() => projects.forEach((p) => p.remove()));

function project(): {
  p: ScratchProject;
  generate: (...args: string[]) => ReturnType<typeof spawnSync> & { stdout: string; stderr: string };
} {
  const p = scratchProject({ withGenerated: true });
  projects.push(p);
  const generate = (...args: string[]) =>
    spawnSync(process.execPath, [join(ROOT, 'bin', 'tilth.js'), 'generate', '--root', p.root, ...args], {
      encoding: 'utf8',
    });
  return { p, generate };
}

const CORE_0002 = 'generated/migrations/0002_create_data_stream_and_more.ts';
const LOCAL_0002 = 'generated/migrations/0002_create_log__grazed_animals.ts';

test("two migrations with one number (a local one beside core's after a merge) are refused, naming both files", () => {
  const { p, generate } = project();
  // A branch generated its own 0002 for a new side table; the merge kept both files and both index lines.
  const local = p
    .read(CORE_0002)
    .replace(
      /export const ops: SchemaOp\[\] = [\s\S]*?\n\];\n/,
      'export const ops: SchemaOp[] = [\n  { "op": "createTable", "table": { "name": "log__grazed_animals", "columns": [ { "name": "entity_id", "type": "integer", "nullable": false }, { "name": "delta", "type": "integer", "nullable": false } ], "primaryKey": ["entity_id", "delta"], "indexes": [] } }\n];\n',
    );
  assert.notEqual(local, p.read(CORE_0002));
  p.write(LOCAL_0002, local);
  const index = p.read('generated/migrations/index.ts');
  p.write(
    'generated/migrations/index.ts',
    index
      .replace(
        "import * as m0002 from './0002_create_data_stream_and_more.ts';",
        "$&\nimport * as m0002 from './0002_create_log__grazed_animals.ts';",
      )
      .replace(
        /(  \{ name: '0002_create_data_stream_and_more'[^\n]*\n)/,
        `$1  { name: '0002_create_log__grazed_animals', up: m0002.up, down: m0002.down, checksum: '${migrationChecksum(local)}' },\n`,
      ),
  );
  for (const run of [generate('--check'), generate()]) {
    assert.equal(run.status, 1, run.stdout);
    const lines = run.stderr.trim().split('\n');
    assert.equal(lines.length, 1, run.stderr);
    assert.ok(lines[0]!.includes(CORE_0002) && lines[0]!.includes(LOCAL_0002), run.stderr);
    assert.match(lines[0]!, /number 0002/);
    assert.match(lines[0]!, /npm run generate/);
  }
  assert.equal(p.read(LOCAL_0002), local, 'nothing was rewritten');
});

test('generate --check names a migration file that index.ts does not list, and one it lists that has no file', () => {
  const { p, generate } = project();
  const index = p.read('generated/migrations/index.ts');
  // A merge that kept "ours" of index.ts: the file from the other side is there, its line is not.
  p.write('generated/migrations/index.ts', index.replace(/\n  \{ name: '0002_create_data_stream_and_more'[^\n]*/, ''));
  let run = generate('--check');
  assert.equal(run.status, 1, run.stdout);
  assert.match(
    run.stderr,
    /generated\/migrations\/index\.ts does not list generated\/migrations\/0002_create_data_stream_and_more\.ts/,
  );
  // An index line whose file is gone.
  p.write(
    'generated/migrations/index.ts',
    index.replace(
      /(  \{ name: '0002_create_data_stream_and_more'[^\n]*\n)/,
      "$1  { name: '0003_create_log__grazed_animals', up: m0002.up, down: m0002.down, checksum: '" +
        '0'.repeat(64) +
        "' },\n",
    ),
  );
  run = generate('--check');
  assert.equal(run.status, 1, run.stdout);
  assert.match(
    run.stderr,
    /generated\/migrations\/index\.ts lists 0003_create_log__grazed_animals, but generated\/migrations\/0003_create_log__grazed_animals\.ts does not exist/,
  );
});

test("a module bundle that shadows a core bundle is refused at the module's file, naming the core one", () => {
  const { p, generate } = project();
  for (const [dir, core] of [
    ['log', 'activity'],
    ['taxonomy_term', 'plant_type'],
  ] as const) {
    mkdirSync(join(p.root, 'definitions/modules/orchard', dir), { recursive: true });
    p.write(
      'definitions/modules/orchard/module.yaml',
      'module: orchard\nlabel: Orchard\ndescription: Orchard records.\n',
    );
    p.write(`definitions/modules/orchard/${dir}/${core}.yaml`, p.read(`definitions/${dir}/${core}.yaml`));
    const run = generate('--check');
    assert.equal(run.status, 1, run.stdout);
    const errors = run.stderr.trim().split('\n').slice(1);
    assert.equal(errors.length, 1, run.stderr);
    assert.ok(errors[0]!.startsWith(`definitions/modules/orchard/${dir}/${core}.yaml:`), run.stderr);
    assert.ok(errors[0]!.includes(`a core bundle, defined in definitions/${dir}/${core}.yaml`), run.stderr);
    p.write(
      `definitions/modules/orchard/${dir}/${core}.yaml`,
      `entity_type: ${dir}\nbundle: ${core}_extra\nlabel: Extra\n`,
    );
    spawnSync('mv', [
      join(p.root, `definitions/modules/orchard/${dir}/${core}.yaml`),
      join(p.root, `definitions/modules/orchard/${dir}/${core}_extra.yaml`),
    ]);
  }
});

test('a generated/ that cannot be loaded (index.ts imports a file that is gone) is named, with the command that says why', async () => {
  const { p } = project();
  p.write(
    'generated/migrations/index.ts',
    p
      .read('generated/migrations/index.ts')
      .replace("from './0002_create_data_stream_and_more.ts'", "from './0002_create_log__grazed_animals.ts'"),
  );
  const { loadGenerated, GeneratedLoadError } = await import('../../runtime/generated.ts');
  await assert.rejects(loadGenerated(join(p.root, 'generated')), (error: Error) => {
    assert.ok(error instanceof GeneratedLoadError, String(error));
    assert.match(error.message, /0002_create_log__grazed_animals/);
    assert.match(error.message, /npm run generate -- --check/);
    assert.equal(error.message.includes('\n    at '), false);
    return true;
  });
});

test('an upgrade that gives Tilth a field a site bundle stored first is refused in one line naming both migrations, before anything is migrated', async () => {
  const { p } = project();
  const site = join(p.root, 'site');
  mkdirSync(join(site, 'definitions/log'), { recursive: true });
  writeFileSync(
    join(site, 'definitions/log/watering.yaml'),
    'entity_type: log\nbundle: watering\nlabel: Watering\nfields:\n  litres_applied:\n    type: integer\n    label: Litres\n',
  );
  assert.equal(
    (await generate({ root: p.root, siteDir: site })).siteMigrationAdded,
    'site/generated/migrations/0001_add_log_litres_applied_and_more.json',
  );
  // Upstream, without the farm's site folder, gives one of its own bundles a field of that name.
  p.write(
    'definitions/log/irrigation.yaml',
    'entity_type: log\nbundle: irrigation\nlabel: Irrigation\nfields:\n  litres_applied:\n    type: integer\n    label: Litres\n',
  );
  // Numbered after Tilth's own migrations so far, whatever their count.
  const next = `${String(readdirSync(join(p.root, 'generated', 'migrations')).filter((f) => /^\d{4}_.*\.ts$/.test(f)).length + 1).padStart(4, '0')}_add_log_litres_applied_and_more`;
  assert.equal((await generate({ root: p.root, siteDir: join(p.root, 'upstream') })).migrationAdded, next);
  await assert.rejects(
    generate({ root: p.root, siteDir: site, check: true }),
    (error: Error) =>
      error instanceof MigrationFilesError &&
      !error.message.includes('\n') &&
      error.message.startsWith(
        `generated/migrations/${next}.ts (Tilth's own) and site/generated/migrations/0001_add_log_litres_applied_and_more.json (the site's) both create log.litres_applied`,
      ),
  );
});
