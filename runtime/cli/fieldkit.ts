/** `tilth fieldkit add-module|remove-module|list-modules`: Field Kit's field modules (storage/field-modules.ts). */
import { readFileSync, statSync } from 'node:fs';
import type { Command } from './command.ts';
import { reportingMistakes, requireOption, UsageError } from './command.ts';
import { withExistingDatabase } from './database.ts';
import { FIELD_MODULE_MAX_BYTES, FieldModuleError, listFieldModules, putFieldModule, removeFieldModule } from '../storage/field-modules.ts';

/** Run a command body; a FieldModuleError is the user's mistake: its message and exit code 1. */
const reporting = (fn: () => Promise<void>) => reportingMistakes([FieldModuleError], fn);

export const fieldKitCommands: Command[] = [
  {
    name: ['fieldkit', 'add-module'],
    summary: "Install a built field module (its index.js) for Field Kit; a module of the same name is replaced.",
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
      let size: number;
      try {
        size = statSync(file).size;
      } catch {
        throw new UsageError(`--file ${file}: there is no such file.`);
      }
      if (size > FIELD_MODULE_MAX_BYTES) throw new UsageError(`--file ${file} is ${size} bytes; a field module is at most ${FIELD_MODULE_MAX_BYTES}.`);
      const script = readFileSync(file);
      return reporting(async () => {
        const replaced = await withExistingDatabase((knex) => putFieldModule(knex, { name, label, description: typeof values.description === 'string' ? values.description : '', script }));
        process.stdout.write(`${replaced ? 'Replaced' : 'Added'} the field module "${name}" (${label}): Field Kit lists it at its next sign-in or sync, from /fieldkit/js/${name}/index.js.\n`);
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
      for (const m of modules) process.stdout.write(`${m.name}\t${m.label}\t${m.description || '-'}\tsha256=${m.hash}\n`);
      return 0;
    },
  },
];
