/** Emits the web interface's description of each bundle (runtime/model/ui.ts) as ui/<type>.json: pure data the pages render. */
import type { BundleUi } from '../../runtime/model/ui.ts';
import type { FileMap } from './descriptors.ts';

export function emitUi(bundles: readonly BundleUi[], stamp: string): FileMap {
  const files: FileMap = new Map();
  for (const ui of bundles) files.set(`ui/${ui.type}.json`, JSON.stringify({ $comment: stamp, ...ui }, null, 2) + '\n');
  return files;
}
