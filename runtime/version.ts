/** Versions: Tilth's own (package.json), and the farmOS API major version it speaks (meta.farm.version). */
import { readFileSync } from 'node:fs';

export const TILTH_API_VERSION = '2.x';

export const TILTH_VERSION: string = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')).version;
