/** `tilth fieldkit add-module|remove-module|list-modules`: Field Kit's field modules (storage/field-modules.ts). */
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import type { Command } from './command.ts';
import { reportingMistakes, requireOption, UsageError } from './command.ts';
import { withExistingDatabase } from './database.ts';
import {
  FIELD_MODULE_MAX_BYTES,
  FieldModuleError,
  listFieldModules,
  putFieldModule,
  removeFieldModule,
} from '../storage/field-modules.ts';

/**
 * The module's script: a regular file of at most FIELD_MODULE_MAX_BYTES, read no further than
 * that (a device such as /dev/zero says it is empty and never ends; a folder cannot be read).
 */
function readScript(file: string): Buffer {
  let fd: number;
  try {
    fd = openSync(file, 'r');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new UsageError(
      code === 'ENOENT' ? `--file ${file}: there is no such file.` : `--file ${file} cannot be read (${code}).`,
    );
  }
  try {
    if (!fstatSync(fd).isFile())
      throw new UsageError(`--file ${file} is not a regular file: give the module's built index.js.`);
    const buffer = Buffer.alloc(FIELD_MODULE_MAX_BYTES + 1);
    let length = 0;
    for (let n; length < buffer.length && (n = readSync(fd, buffer, length, buffer.length - length, null)) > 0;)
      length += n;
    if (length > FIELD_MODULE_MAX_BYTES)
      throw new UsageError(
        `--file ${file} is more than ${FIELD_MODULE_MAX_BYTES} bytes; a field module is at most ${FIELD_MODULE_MAX_BYTES}.`,
      );
    return buffer.subarray(0, length);
  } finally {
    closeSync(fd);
  }
}

/** Run a command body; a FieldModuleError is the user's mistake: its message and exit code 1. */
const reporting = (fn: () => Promise<void>) => reportingMistakes([FieldModuleError], fn);

export const fieldKitCommands: Command[] = [
  {
    name: ['fieldkit', 'add-module'],
    summary: 'Install a built field module (its index.js) for Field Kit; a module of the same name is replaced.',
    usage: 'tilth fieldkit add-module --name NAME --label LABEL --file path/to/index.js [--description TEXT]',
    options: {
      name: { type: 'string', description: 'its machine name, the URL segment: /fieldkit/js/NAME/index.js' },
      label: { type: 'string', description: 'the name Field Kit shows' },
      file: { type: 'string', description: "the module's built script (one file)" },
      description: { type: 'string', description: 'a sentence about it' },
    } as Command['options'],
    async run(values) {
      const name = requireOption(values, 'name');
      const label = requireOption(values, 'label');
      const file = requireOption(values, 'file');
      const script = readScript(file);
      return reporting(async () => {
        const replaced = await withExistingDatabase((knex) =>
          putFieldModule(knex, {
            name,
            label,
            description: typeof values.description === 'string' ? values.description : '',
            script,
          }),
        );
        process.stdout.write(
          `${replaced ? 'Replaced' : 'Added'} the field module "${name}" (${label}): Field Kit lists it at its next sign-in or sync, from /fieldkit/js/${name}/index.js.\n`,
        );
      });
    },
  },
  {
    name: ['fieldkit', 'remove-module'],
    summary: 'Remove a field module.',
    usage: 'tilth fieldkit remove-module --name NAME',
    options: { name: { type: 'string', description: 'its machine name' } } as Command['options'],
    async run(values) {
      const name = requireOption(values, 'name');
      return reporting(async () => {
        await withExistingDatabase((knex) => removeFieldModule(knex, name));
        process.stdout.write(`Removed the field module "${name}".\n`);
      });
    },
  },
  {
    name: ['fieldkit', 'list-modules'],
    summary: 'List the field modules Field Kit is offered.',
    usage: 'tilth fieldkit list-modules',
    options: {} as Command['options'],
    async run() {
      const modules = await withExistingDatabase((knex) => listFieldModules(knex));
      for (const m of modules)
        process.stdout.write(`${m.name}\t${m.label}\t${m.description || '-'}\tsha256=${m.hash}\n`);
      return 0;
    },
  },
];
