import type { SkillFrontMatter } from './skill-format.js';

export { describeProblems, type SkillProblem, type SkillResult } from './problems.js';

/**
 * Where a skill comes from. Shared skills (`builtin`: the repository's `skills/` folder,
 * `operator`: `SKILLS_DIR`) are seen by every user; `user` skills only by their owner.
 */
export type SkillSource = 'builtin' | 'operator' | 'user';

/** What matching and the catalog listing need of a skill. */
export interface SkillSummary {
  readonly name: string;
  readonly description: string;
  readonly source: SkillSource;
}

/** A file of a skill besides SKILL.md, by its path relative to the skill's folder. */
export interface SkillResource {
  /** `/`-separated, relative, without `.` or `..` segments. */
  readonly path: string;
  readonly size: number;
}

/** A skill as a run uses it: its front matter, its instructions and the list of its files. */
export interface Skill extends SkillSummary {
  readonly frontMatter: SkillFrontMatter;
  /** The Markdown after the front matter: the instructions. */
  readonly body: string;
  readonly resources: readonly SkillResource[];
}

/** A resource with its bytes, as an upload carries it. */
export interface SkillFile {
  readonly path: string;
  readonly content: Uint8Array;
}

/** A valid skill read from an upload, ready to store. */
export interface SkillPackage {
  readonly frontMatter: SkillFrontMatter;
  readonly body: string;
  readonly files: readonly SkillFile[];
}
