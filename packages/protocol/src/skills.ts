import { z } from 'zod';

/**
 * Body of `POST /api/skills`: a skill as a SKILL.md text (instructions only), or a zip of its
 * folder (SKILL.md plus resource files) in base64. The zip is at most 2 MiB (about 2.7 MiB of
 * base64); what is inside is checked by the skills package (docs/skills.md).
 */
export const UploadSkillRequest = z.union([
  z.strictObject({
    skill_md: z
      .string()
      .min(1)
      .max(64 * 1024),
  }),
  z.strictObject({
    zip_base64: z
      .string()
      .min(1)
      .max(Math.ceil((2 * 1024 * 1024 * 4) / 3) + 4)
      .regex(/^[A-Za-z0-9+/]+={0,2}$/, 'must be base64'),
  }),
]);
export type UploadSkillRequest = z.infer<typeof UploadSkillRequest>;

/** A skill of the catalog as `GET /api/skills` lists it. */
export const SkillListItem = z.object({
  name: z.string(),
  description: z.string(),
  /** `builtin` (shipped), `operator` (`SKILLS_DIR`) or `user` (uploaded by the caller). */
  source: z.enum(['builtin', 'operator', 'user']),
});
export type SkillListItem = z.infer<typeof SkillListItem>;

/** 200 answer of `GET /api/skills`: the caller's catalog (their own skills shadow shared ones). */
export const SkillList = z.object({ skills: z.array(SkillListItem) });
export type SkillList = z.infer<typeof SkillList>;

/** 201 (new) or 200 (replaced) answer of `POST /api/skills`. */
export const UploadSkillResponse = z.object({
  name: z.string(),
  description: z.string(),
  created: z.boolean(),
});
export type UploadSkillResponse = z.infer<typeof UploadSkillResponse>;
