import { z } from 'zod';
import { defineTool, type AgentTool, type ToolOutput } from '@agent-backend/agent-runtime';
import type { ActivatedSkill, SkillsConfig, SkillsEvent } from '@agent-backend/protocol';
import type { SkillCatalog } from './catalog.js';
import { formatResources, LOAD_SKILL_TOOL, skillsPromptSection } from './prompt-section.js';
import type { Skill } from './skill.js';
import { selectSkills } from './select-skills.js';

/** Characters of a skill file `load_skill` returns; the rest is cut with a note. */
export const MAX_FILE_CHARS = 32_000;

/** What a run's skills are prepared from; nothing of the HTTP request but these. */
export interface RunSkillsOptions {
  /** The token's user: whose skills the catalog holds. */
  readonly userId: string;
  /** The request's `skills` (spec 2.4) with defaults applied; absent: skills are off. */
  readonly skills: SkillsConfig | undefined;
  readonly message: string;
  /** Earlier user turns of the session, oldest first (the latest few are read). */
  readonly recentTurns?: readonly string[];
}

/** The skills of one run. */
export interface RunSkills {
  /** Send right after `session`. */
  readonly event: SkillsEvent;
  /** Append to the system prompt; empty when there is nothing to say. */
  readonly promptSection: string;
  /** `load_skill` when the model may load a skill or read a file of an active one. */
  readonly tools: readonly AgentTool[];
  /** The skills active now, in order (the model's loads included). */
  activated(): ActivatedSkill[];
  /** The active skills themselves (with their resource lists), the model's loads included. */
  activeSkills(): Skill[];
}

export const LoadSkillArgs = z.object({
  name: z.string().min(1).max(64).describe('The skill name, as listed in the system prompt.'),
  file: z
    .string()
    .min(1)
    .max(200)
    .optional()
    .describe('A file of an active skill to read, by the path listed for it.'),
});

/**
 * Prepares the skills of a run: selects them ({@link selectSkills}) from the user's catalog,
 * reads the active ones, builds the prompt section and the `load_skill` tool. Returns
 * undefined when the request has no `skills` (the feature is off).
 */
export async function prepareRunSkills(
  catalog: SkillCatalog,
  options: RunSkillsOptions,
): Promise<RunSkills | undefined> {
  const config = options.skills;
  if (!config) return undefined;
  const { userId } = options;
  const summaries = await catalog.list(userId);
  const selection = selectSkills({
    catalog: summaries,
    skillNames: config.skill_names,
    autoMatch: config.auto_match,
    maxSkills: config.max_skills,
    message: options.message,
    recentTurns: options.recentTurns,
  });
  const loaded = await catalog.getMany(
    userId,
    selection.activated.map((a) => a.name),
  );
  const active = new Map(loaded.map((skill) => [skill.name, skill]));
  // A skill deleted between the listing and the read is no longer active.
  const activated = selection.activated.filter((a) => active.has(a.name));

  // Most relevant first; skills that share no word with the conversation after, by name.
  const rank = new Map(selection.ranking.map((s, i) => [s.name, i]));
  const unranked = rank.size;
  const others = summaries
    .filter((s) => !active.has(s.name))
    .sort((a, b) => (rank.get(a.name) ?? unranked) - (rank.get(b.name) ?? unranked));
  const canLoad = Math.max(0, config.max_skills - active.size);
  const offerTool =
    (canLoad > 0 && others.length > 0) || loaded.some((s) => s.resources.length > 0);
  const prompt = skillsPromptSection({ active: loaded, others, canLoad: offerTool ? canLoad : 0 });
  const truncated = new Set(prompt.truncated);
  const loading = new Set<string>();

  const event = (): SkillsEvent => ({
    type: 'skills',
    activated: activated.map((a) => ({ ...a })),
    missing: [...selection.missing],
    ...(selection.overLimit.length > 0 ? { over_limit: [...selection.overLimit] } : {}),
  });

  const tool = defineTool({
    name: LOAD_SKILL_TOOL,
    description:
      'Loads the instructions of a skill listed in the system prompt, when the task matches its ' +
      'description, or with `file` reads a file of an active skill. The number of active ' +
      'skills is limited.',
    schema: LoadSkillArgs,
    writes: false,
    async run(args, context): Promise<ToolOutput> {
      const current = active.get(args.name);
      if (args.file !== undefined) {
        if (!current) {
          return error(
            `Skill "${args.name}" is not active; load it first with {"name": "${args.name}"}.`,
          );
        }
        return readSkillFile(catalog, userId, current, args.file);
      }
      if (current) {
        if (truncated.has(args.name)) {
          truncated.delete(args.name);
          return { content: formatLoaded(current, `Skill "${args.name}" in full:`) };
        }
        return { content: `Skill "${args.name}" is already active: follow its instructions.` };
      }
      if (!summaries.some((s) => s.name === args.name)) {
        const names = others.slice(0, 20).map((s) => s.name);
        return error(
          `There is no skill "${args.name}".` +
            (names.length > 0 ? ` Skills you can load: ${names.join(', ')}.` : ''),
        );
      }
      if (active.size + loading.size >= config.max_skills || loading.has(args.name)) {
        return error(
          `${active.size} skills are active, the most this run allows (max_skills ` +
            `${config.max_skills}): ${[...active.keys()].join(', ')}. No more can be loaded.`,
        );
      }
      // Holds the place while the skill is read, should calls ever run concurrently.
      loading.add(args.name);
      const skill = await catalog.get(userId, args.name).finally(() => loading.delete(args.name));
      if (!skill) return error(`Skill "${args.name}" was just deleted.`);
      active.set(skill.name, skill);
      activated.push({ name: skill.name, reason: 'loaded' });
      context.emit(event());
      return { content: formatLoaded(skill, `Skill "${skill.name}" is now active.`) };
    },
  });

  return {
    event: event(),
    promptSection: prompt.text,
    tools: offerTool ? [tool] : [],
    activated: () => activated.map((a) => ({ ...a })),
    activeSkills: () => [...active.values()],
  };
}

function formatLoaded(skill: Skill, heading: string): string {
  const files = formatResources(skill);
  return `${heading} ${skill.description}\n\n${skill.body}${files ? `\n\n${files}` : ''}`;
}

async function readSkillFile(
  catalog: SkillCatalog,
  userId: string,
  skill: Skill,
  path: string,
): Promise<ToolOutput> {
  const bytes = await catalog.readResource(userId, skill, path);
  if (!bytes) {
    const listed = skill.resources.map((r) => r.path).slice(0, 20);
    return error(
      `Skill "${skill.name}" has no file "${path}".` +
        (listed.length > 0 ? ` Its files: ${listed.join(', ')}.` : ' It has no files.'),
    );
  }
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    return error(`"${path}" is a binary file (${bytes.byteLength} bytes); it cannot be shown.`);
  }
  if (text.length > MAX_FILE_CHARS) {
    text = `${text.slice(0, MAX_FILE_CHARS)}\n\n[Cut at ${MAX_FILE_CHARS} of ${text.length} characters.]`;
  }
  return { content: text };
}

function error(content: string): ToolOutput {
  return { content, isError: true };
}
