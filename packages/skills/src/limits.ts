/**
 * Bounds on one skill, the same for every source (shipped, `SKILLS_DIR`, uploads), so a skill
 * that loads from a folder also uploads, and the other way round. docs/skills.md.
 */
export const SKILL_LIMITS = {
  /** SKILL.md, front matter and instructions: about 16k tokens, far above the advised 5k. */
  skillMdBytes: 64 * 1024,
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
