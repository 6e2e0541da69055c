import type { FieldError } from '@agent-backend/protocol';

/**
 * A problem that makes a skill invalid: `path` names the field of the front matter (`name`,
 * `description`, ...), `SKILL.md`, or a file of the skill; the same shape as the `details` of
 * a 400 answer, so an upload can report the list as it is.
 */
export type SkillProblem = FieldError;

/** Either the value or every problem found (not only the first). */
export type SkillResult<T> =
  | { readonly ok: true; readonly value: T }
  | { readonly ok: false; readonly problems: readonly SkillProblem[] };

/** One line per problem, for a log: `name: must equal the folder name "x"`. */
export function describeProblems(problems: readonly SkillProblem[]): string {
  return problems.map((p) => (p.path ? `${p.path}: ${p.message}` : p.message)).join('; ');
}
