import { LineCounter, parseDocument } from 'yaml';
import { z } from 'zod';
import { fieldErrors } from '@agent-backend/protocol';
import { frontMatterBoundsProblem } from './front-matter-bounds.js';
import { SKILL_LIMITS } from './limits.js';
import type { SkillProblem, SkillResult } from './problems.js';

/** The file that makes a folder a skill. */
export const SKILL_FILE = 'SKILL.md';

function requiredString(issue: { input: unknown }): string {
  return issue.input === undefined ? 'is required' : 'must be a string';
}

/**
 * A skill's name (Agent Skills specification): 1-64 lower-case letters, digits and hyphens, not
 * starting or ending with a hyphen, no two hyphens in a row. It is also its folder's name.
 */
export const SkillName = z
  .string({ error: requiredString })
  .min(1, { error: 'must not be empty', abort: true })
  .max(64, { error: 'must be at most 64 characters', abort: true })
  .regex(
    /^[a-z0-9]+(?:-[a-z0-9]+)*$/,
    'must be lower-case letters, digits and single hyphens (a-z, 0-9, -), not starting or ending with a hyphen',
  );

/** A scalar YAML value read as text (`version: 1.0` is meant as the string "1.0"). */
const MetadataValue = z
  .unknown()
  .refine((v) => ['string', 'number', 'boolean'].includes(typeof v), {
    error: 'metadata values must be strings, numbers or booleans',
  })
  .transform(String);

/**
 * The YAML front matter of a SKILL.md. `name` and `description` are required; `license`,
 * `compatibility`, `metadata` and `allowed-tools` are the specification's optional fields.
 * Other keys (some agents add their own) are accepted and ignored, so skills written for them
 * still load.
 */
export const SkillFrontMatter = z.object({
  name: SkillName,
  /** What the skill does and when to use it: the text matching and the model read. */
  description: z
    .string({ error: requiredString })
    .trim()
    .min(1, 'must not be empty')
    .max(1024, 'must be at most 1024 characters'),
  license: z.string().trim().min(1).max(500).optional(),
  /** Environment requirements. */
  compatibility: z.string().trim().min(1).max(500).optional(),
  metadata: z.record(z.string(), MetadataValue).optional(),
  /** Space-separated tool names the skill expects (experimental in the specification). */
  'allowed-tools': z.string().max(2000).optional(),
});
export type SkillFrontMatter = z.output<typeof SkillFrontMatter>;

/** A SKILL.md split and validated. */
export interface ParsedSkillMarkdown {
  readonly frontMatter: SkillFrontMatter;
  readonly body: string;
}

const DELIMITER = /^---[ \t]*$/;

/**
 * Parses a SKILL.md: `---`, YAML front matter, `---`, then the Markdown instructions. The YAML
 * is bounded in size, tokens and nesting before it is parsed ({@link frontMatterBoundsProblem}),
 * read by the `yaml` package (YAML 1.2 core schema: no custom tags, duplicate keys refused,
 * aliases bounded) and checked with {@link SkillFrontMatter}. `folderName`, when the skill has
 * a folder, must equal `name`. Every problem is reported, each with the field it concerns.
 */
export function parseSkillMarkdown(
  text: string,
  folderName?: string,
): SkillResult<ParsedSkillMarkdown> {
  const problems: SkillProblem[] = [];
  if (Buffer.byteLength(text) > SKILL_LIMITS.skillMdBytes) {
    return fail(SKILL_FILE, `is larger than ${SKILL_LIMITS.skillMdBytes} bytes`);
  }
  const lines = text.replace(/^\uFEFF/, '').split(/\r?\n/);
  if (!DELIMITER.test(lines[0] ?? '')) {
    return fail(SKILL_FILE, 'must start with a YAML front matter block: a line "---" first');
  }
  const end = lines.findIndex((line, i) => i > 0 && DELIMITER.test(line));
  if (end < 0) return fail(SKILL_FILE, 'the front matter has no closing "---" line');
  const yamlSource = lines.slice(1, end).join('\n');
  const body = lines
    .slice(end + 1)
    .join('\n')
    .trim();

  const bounds = frontMatterBoundsProblem(yamlSource);
  if (bounds) return fail(SKILL_FILE, bounds);
  const lineCounter = new LineCounter();
  const doc = parseDocument(yamlSource, { lineCounter, prettyErrors: false, uniqueKeys: true });
  if (doc.errors.length > 0) {
    return {
      ok: false,
      problems: doc.errors.map((error) => {
        // The YAML starts on the file's second line.
        const line = lineCounter.linePos(error.pos[0]).line + 1;
        return { path: SKILL_FILE, message: `front matter line ${line}: ${error.message}` };
      }),
    };
  }
  let data: unknown;
  try {
    data = doc.toJS({ maxAliasCount: SKILL_LIMITS.frontMatterAliases });
  } catch (error) {
    return fail(SKILL_FILE, `front matter: ${(error as Error).message}`);
  }
  if (data === null || typeof data !== 'object' || Array.isArray(data)) {
    return fail(
      SKILL_FILE,
      'the front matter must be a YAML mapping (name: ..., description: ...)',
    );
  }
  const parsed = SkillFrontMatter.safeParse(data);
  if (!parsed.success) {
    for (const error of fieldErrors(parsed.error)) {
      problems.push(error);
    }
  } else if (folderName !== undefined && parsed.data.name !== folderName) {
    problems.push({ path: 'name', message: `must equal the folder name "${folderName}"` });
  }
  if (!body) {
    problems.push({
      path: SKILL_FILE,
      message: 'has no instructions: the Markdown after the front matter is empty',
    });
  }
  if (problems.length > 0 || !parsed.success) return { ok: false, problems };
  return { ok: true, value: { frontMatter: parsed.data, body } };
}

function fail<T>(path: string, message: string): SkillResult<T> {
  return { ok: false, problems: [{ path, message }] };
}
