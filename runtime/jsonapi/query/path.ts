/**
 * Dotted field paths (`asset.location.name`) as filters, sorts and includes carry them. Only
 * their syntax is checked here; resolving them against the data model happens elsewhere.
 */

/**
 * The most segments a path may have. Each relationship on a path is a join (and, in `include`, a
 * query); farmOS's clients use three at most (`asset.location.name`).
 */
export const MAX_PATH_SEGMENTS = 8;

/** Why a path is malformed, or null when it is fine. */
export function pathProblem(path: string): string | null {
  if (path === '') return 'is empty';
  const segments = path.split('.');
  if (segments.some((segment) => segment === '')) return `'${path}' has an empty segment`;
  if (segments.length > MAX_PATH_SEGMENTS)
    return `'${path.slice(0, 200)}' has ${segments.length} segments; at most ${MAX_PATH_SEGMENTS} are allowed`;
  return null;
}
