#!/usr/bin/env node
// The `tilth` command. Registers tsx so the TypeScript sources run as they are, then hands over:
// `generate` goes to the generator, everything else to the runtime's CLI (the runtime never
// imports the generator).
import { register } from 'tsx/esm/api';

register();
const command = process.argv[2];
if (command === 'generate') await import('../generator/cli.ts');
else await import('../runtime/cli/main.ts');
