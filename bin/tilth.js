#!/usr/bin/env node
// The `tilth` command. `generate` goes to the generator, everything else to the runtime's CLI (the
// runtime never imports the generator). The runtime runs from a bundle of its sources, made again
// whenever one of them changes (runtime-bundle.js), which starts in a fraction of the time that
// loading them one by one through tsx takes; the generator, or the runtime when no bundle can be
// made (or TILTH_RUNTIME_BUNDLE=off), runs through tsx as the sources are.
const command = process.argv[2];
const bundle =
  command === 'generate' || process.env.TILTH_RUNTIME_BUNDLE === 'off'
    ? null
    : await (await import('./runtime-bundle.js')).runtimeBundle();
if (bundle) {
  // Stack traces name the sources, as under tsx.
  process.setSourceMapsEnabled(true);
  await import(bundle);
} else {
  const { register } = await import('tsx/esm/api');
  register();
  if (command === 'generate') await import('../generator/cli.ts');
  else await import('../runtime/cli/main.ts');
}
