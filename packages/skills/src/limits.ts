/**
 * Bounds on one skill, the same for every source (shipped, `SKILLS_DIR`, uploads), so a skill
 * that loads from a folder also uploads, and the other way round. docs/skills.md.
 */
export const SKILL_LIMITS = {
  /** SKILL.md, front matter and instructions: about 16k tokens, far above the advised 5k. */
  skillMdBytes: 64 * 1024,
  /**
   * The YAML front matter of SKILL.md, its part of `skillMdBytes`. The fields a skill has take
   * under 5 KiB; the `yaml` package spends a few microseconds per token on the event loop, so
   * the front matter is bounded apart from the instructions (front-matter-bounds.ts).
   */
  frontMatterBytes: 16 * 1024,
  /** YAML tokens of the front matter (keys, values, indicators, comments, line ends). */
  frontMatterTokens: 2000,
  /** Nesting of the front matter, counted generously (see `front-matter-bounds.ts`). */
  frontMatterDepth: 16,
  /** Alias expansion of the front matter, as the `yaml` package counts it (`maxAliasCount`). */
  frontMatterAliases: 50,
  /** Resource files besides SKILL.md. */
  resourceFiles: 100,
  /** Every file of the skill together, SKILL.md included, uncompressed. */
  totalBytes: 2 * 1024 * 1024,
  /** Length of a resource's relative path. */
  pathLength: 200,
  /** An uploaded zip, compressed. */
  zipBytes: 2 * 1024 * 1024,
  /** Entries of an uploaded zip, directories and ignored files included. */
  zipEntries: 400,
} as const;

/** Skills one user may upload (shared skills do not count). */
export const MAX_USER_SKILLS = 100;
