// Migrations are checked, not trusted (layers issue, item 3): a hand edit of an applied migration
// is named, with the command that undoes it, by `generate --check` and by a server starting on a
// database that applied the original.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { scratchProject, ROOT, type ScratchProject } from '../support/project.ts';
import { startTestServer, createTestDatabase } from '../support/server.ts';
import { MigrationChecksumError } from '../../runtime/storage/migrations.ts';

const projects: ScratchProject[] = [];
after(() => projects.forEach((p) => p.remove()));

const MIGRATION = 'generated/migrations/0001_initial.ts';

test('generate --check names a hand-edited migration and how to restore it', () => {
  const project = scratchProject({ withGenerated: true });
  projects.push(project);
  const generate = (...args: string[]) =>
    spawnSync(process.execPath, [join(ROOT, 'bin', 'tilth.js'), 'generate', '--root', project.root, ...args], {
      encoding: 'utf8',
    });
  assert.equal(generate('--check').status, 0, 'a fresh copy is current');
  project.write(MIGRATION, project.read(MIGRATION).replace('"nullable": true', '"nullable": false'));
  for (const result of [generate('--check'), generate()]) {
    assert.equal(result.status, 1, result.stdout);
    assert.ok(result.stderr.includes(`git checkout -- ${MIGRATION}`), result.stderr);
  }
});

test('a server refuses a database whose applied migration has since been edited', async () => {
  const project = scratchProject({ withGenerated: true });
  projects.push(project);
  const database = await createTestDatabase();
  try {
    const generatedDir = join(project.root, 'generated');
    const first = await startTestServer({ database, generatedDir });
    await first.close();
    // The edit is made after the database applied it (a comment is enough to change the file).
    project.write(MIGRATION, `${project.read(MIGRATION)}// tweaked by hand\n`);
    await assert.rejects(
      () => startTestServer({ database, generatedDir, migrate: false }),
      (error: Error) =>
        error instanceof MigrationChecksumError &&
        error.message.includes('0001_initial.ts') &&
        error.message.includes('git checkout --'),
    );
    await assert.rejects(
      () => startTestServer({ database, generatedDir, migrate: true }),
      MigrationChecksumError,
      'nor migrates it further',
    );
  } finally {
    await database.drop();
  }
});
