import type { SkillPackage, SkillResult } from './skill.js';
import { parseSkillMarkdown } from './skill-format.js';
import { readSkillZip } from './skill-zip.js';

/** What a user uploads: the text of a SKILL.md, or a zip of a skill folder. */
export type SkillUpload =
  | { readonly kind: 'markdown'; readonly text: string }
  | { readonly kind: 'zip'; readonly data: Uint8Array };

/**
 * Checks an upload completely before anything is stored: a SKILL.md alone becomes a skill
 * without files; a zip is read as {@link readSkillZip} says. On failure, every problem found,
 * in the shape of a 400 answer's `details`.
 */
export async function parseSkillUpload(upload: SkillUpload): Promise<SkillResult<SkillPackage>> {
  if (upload.kind === 'zip') return readSkillZip(upload.data);
  const parsed = parseSkillMarkdown(upload.text);
  return parsed.ok ? { ok: true, value: { ...parsed.value, files: [] } } : parsed;
}
