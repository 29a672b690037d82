/** The farmOS API major version Tilth speaks, reported as meta.farm.version. */
export const TILTH_API_VERSION = '2.x';
