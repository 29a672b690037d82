/**
 * Dotted field paths (`asset.location.name`) as filters, sorts and includes carry them. Only
 * their syntax is checked here; resolving them against the data model happens elsewhere.
 */

/** Why a path is malformed, or null when it is fine. */
export function pathProblem(path: string): string | null {
  if (path === '') return 'is empty';
  if (path.split('.').some((segment) => segment === '')) return `'${path}' has an empty segment`;
  return null;
}
