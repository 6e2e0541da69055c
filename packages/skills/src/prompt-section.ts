import type { Skill, SkillResource, SkillSummary } from './skill.js';

/** The tool that loads a skill; named in the prompt. */
export const LOAD_SKILL_TOOL = 'load_skill';

/**
 * Bounds of the skills section of a system prompt, in characters (about 4 per token). With
 * the defaults the section stays under about 40,000 characters, whatever the catalog holds.
 */
export const SKILL_PROMPT_LIMITS = {
  /** One active skill's instructions; longer ones are cut and can be read with `load_skill`. */
  bodyChars: 16_000,
  /** All active skills' instructions together. */
  activeChars: 32_000,
  /** Files named per active skill. */
  filesListed: 20,
  /** Other skills listed by name and description. */
  skillsListed: 50,
  /** The whole list of other skills. */
  listChars: 6_000,
  /** One listed description. */
  descriptionChars: 200,
} as const;

/** What the skills section shows. */
export interface SkillsPromptInput {
  /** Active skills, in activation order: their instructions are shown. */
  readonly active: readonly Skill[];
  /** Other skills the model may load, most relevant first: names and descriptions. */
  readonly others: readonly SkillSummary[];
  /** How many more skills `load_skill` may add; 0 leaves the list of others out. */
  readonly canLoad: number;
}

/** The section, and the active skills whose instructions it had to cut. */
export interface SkillsPrompt {
  readonly text: string;
  readonly truncated: readonly string[];
}

/** A skill's files as a list for the model, bounded. */
export function formatResources(skill: Pick<Skill, 'name' | 'resources'>): string {
  if (skill.resources.length === 0) return '';
  const shown = skill.resources.slice(0, SKILL_PROMPT_LIMITS.filesListed);
  const lines = shown.map((r: SkillResource) => `- ${r.path} (${r.size} bytes)`);
  const more = skill.resources.length - shown.length;
  if (more > 0) lines.push(`- ... and ${more} more`);
  return (
    `Files of this skill (read one with ${LOAD_SKILL_TOOL} ` +
    `{"name": "${skill.name}", "file": "<path>"}):\n${lines.join('\n')}`
  );
}

/** `text` cut to at most `max` characters, at a line break when one is near. */
function cut(text: string, max: number): string {
  if (text.length <= max) return text;
  const head = text.slice(0, max);
  const line = head.lastIndexOf('\n');
  return line > max * 0.8 ? head.slice(0, line) : head;
}

/**
 * The skills section of a run's system prompt: the instructions of each active skill (within
 * {@link SKILL_PROMPT_LIMITS}), then, when more may be loaded, the names and descriptions of
 * the other skills so the model can pull one in with `load_skill`. Empty when there is
 * nothing to show.
 */
export function skillsPromptSection(input: SkillsPromptInput): SkillsPrompt {
  const listOthers = input.canLoad > 0 && input.others.length > 0;
  if (input.active.length === 0 && !listOthers) return { text: '', truncated: [] };
  const parts = [
    '# Skills\n' +
      'Skills are instructions for particular kinds of tasks. When the task matches an active ' +
      "skill, follow that skill's instructions.",
  ];
  const truncated: string[] = [];
  let left: number = SKILL_PROMPT_LIMITS.activeChars;
  for (const skill of input.active) {
    const room = Math.min(SKILL_PROMPT_LIMITS.bodyChars, left);
    let body = cut(skill.body, room);
    if (body.length < skill.body.length) {
      truncated.push(skill.name);
      body +=
        `\n\n[The instructions are cut here for length: call ${LOAD_SKILL_TOOL} with ` +
        `{"name": "${skill.name}"} to read all of them.]`;
    }
    left -= Math.min(skill.body.length, room);
    const files = formatResources(skill);
    parts.push(
      `## Active skill: ${skill.name}\n${skill.description}\n\n${body}` +
        (files ? `\n\n${files}` : ''),
    );
  }
  if (listOthers) {
    const lines: string[] = [];
    let size = 0;
    for (const skill of input.others.slice(0, SKILL_PROMPT_LIMITS.skillsListed)) {
      const description =
        skill.description.length > SKILL_PROMPT_LIMITS.descriptionChars
          ? `${skill.description.slice(0, SKILL_PROMPT_LIMITS.descriptionChars - 3)}...`
          : skill.description;
      const line = `- ${skill.name}: ${description.replace(/\s+/g, ' ')}`;
      if (size + line.length > SKILL_PROMPT_LIMITS.listChars) break;
      lines.push(line);
      size += line.length + 1;
    }
    const more = input.others.length - lines.length;
    if (more > 0) lines.push(`- ... and ${more} more, less relevant to this conversation`);
    parts.push(
      `## Other skills\nCall ${LOAD_SKILL_TOOL} with a skill's name when the task matches ` +
        `its description (up to ${input.canLoad} more in this run):\n${lines.join('\n')}`,
    );
  }
  return { text: parts.join('\n\n'), truncated };
}
