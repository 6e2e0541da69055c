/**
 * Agent Skills: folders with a SKILL.md (YAML front matter + instructions) from the
 * repository's `skills/`, the operator's `SKILLS_DIR` and users' uploads; selected per run by
 * name or by matching the conversation, shown in the system prompt, and loaded on demand with
 * the `load_skill` tool. Design and limits: docs/skills.md.
 */
export {
  describeProblems,
  type Skill,
  type SkillFile,
  type SkillPackage,
  type SkillProblem,
  type SkillResource,
  type SkillResult,
  type SkillSource,
  type SkillSummary,
} from './skill.js';
export { MAX_USER_SKILLS, SKILL_LIMITS } from './limits.js';
export {
  parseSkillMarkdown,
  SKILL_FILE,
  SkillFrontMatter,
  SkillName,
  type ParsedSkillMarkdown,
} from './skill-format.js';
export { resourcePathProblem } from './resource-path.js';
export { readSkillZip } from './skill-zip.js';
export { parseSkillUpload, type SkillUpload } from './upload.js';
export {
  loadSkillFolder,
  loadSkillsDirectory,
  type FolderSkill,
  type InvalidSkill,
  type SkillsDirectory,
} from './skill-folder.js';
export {
  SkillRepository,
  TooManySkillsError,
  type StoredSkillSummary,
} from './skill-repository.js';
export {
  BUILTIN_SKILLS_DIR,
  loadSharedSkills,
  SkillCatalog,
  type SharedSkills,
  type SharedSkillsOptions,
} from './catalog.js';
export { tokenize } from './text-index.js';
export {
  Bm25Index,
  BM25_B,
  BM25_K1,
  countTerms,
  type DocumentScore,
  type QueryTerm,
  type TermCounts,
} from './bm25.js';
export {
  isMatch,
  MATCH_MIN_SCORE,
  MATCH_MIN_TERMS,
  MAX_QUERY_CHARS,
  MAX_QUERY_TERMS,
  NAME_WEIGHT,
  queryTerms,
  RECENT_TURN_WEIGHT,
  RECENT_TURNS_USED,
  rankSkills,
  selectSkills,
  skillTerms,
  type SelectSkillsInput,
  type SkillScore,
  type SkillSelection,
} from './select-skills.js';
export {
  formatResources,
  LOAD_SKILL_TOOL,
  SKILL_PROMPT_LIMITS,
  skillsPromptSection,
  type SkillsPrompt,
  type SkillsPromptInput,
} from './prompt-section.js';
export {
  LoadSkillArgs,
  MAX_FILE_CHARS,
  prepareRunSkills,
  type RunSkills,
  type RunSkillsOptions,
} from './run-skills.js';
export {
  skillsCapability,
  type SkillFiles,
  type SkillsCapability,
  type SkillsDeps,
  type SkillsSettings,
} from './capability.js';
