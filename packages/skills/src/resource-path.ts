import { SKILL_LIMITS } from './limits.js';

/**
 * Why `path` may not name a file of a skill, or `null` when it may: it must be relative,
 * `/`-separated, inside the skill's folder (no `.`, `..` or empty segment), without control
 * characters or backslashes, and short. The same rule serves zip entries and folders on disk,
 * so no path that leaves the skill's folder is ever stored, listed or written to a sandbox.
 */
export function resourcePathProblem(path: string): string | null {
  if (path.length === 0) return 'the path is empty';
  if (path.length > SKILL_LIMITS.pathLength) {
    return `the path is longer than ${SKILL_LIMITS.pathLength} characters`;
  }
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f\\]/.test(path)) {
    return 'the path contains a backslash or a control character';
  }
  if (path.startsWith('/') || /^[A-Za-z]:/.test(path)) return 'the path is absolute';
  const segments = path.split('/');
  if (segments.includes('..')) return 'the path leaves the skill folder ("..")';
  if (segments.some((s) => s === '' || s === '.')) {
    return 'the path has an empty or "." segment';
  }
  return null;
}
