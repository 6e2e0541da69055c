import type { Capability, RunInfo } from '@agent-backend/agent-runtime';
import type { Logger } from '@agent-backend/logger';
import type { Database } from '@agent-backend/store';
import { loadSharedSkills, SkillCatalog } from './catalog.js';
import { describeProblems } from './problems.js';
import { prepareRunSkills, type RunSkills } from './run-skills.js';
import { SkillRepository } from './skill-repository.js';

export interface SkillsDeps {
  readonly db: Database;
  readonly logger: Logger;
}

/** The configuration keys the capability reads (a subset of the service config). */
export interface SkillsSettings {
  /** The operator's skills, beside (or replacing) the shipped ones. */
  readonly SKILLS_DIR?: string | undefined;
}

/** The files of a run's active skills, for its sandbox (the shape `createSandboxCapability` takes). */
export interface SkillFiles {
  readonly note: string;
  current(): ReadonlyArray<{ readonly path: string; read(): Promise<Uint8Array | undefined> }>;
}

export interface SkillsCapability extends Capability {
  /** The catalog: shipped, `SKILLS_DIR`, users' own (shared with `/api/skills`). */
  readonly catalog: Promise<SkillCatalog>;
  /**
   * The resources of the run's active skills, under `dir/<skill name>/`: what code execution
   * copies into the run's sandbox. Asked per call, so a skill loaded later brings its files too.
   */
  runFiles(run: RunInfo, dir: string): Promise<SkillFiles | undefined>;
}

/**
 * Skills (docs/skills.md): the shared ones are read once, in the background; a run waits for
 * them only when it asks for skills. Invalid skills are logged, not fatal. One preparation of
 * a run's skills serves both the tool source and {@link SkillsCapability.runFiles}.
 */
export function skillsCapability(deps: SkillsDeps, settings: SkillsSettings): SkillsCapability {
  const { logger } = deps;
  const catalog = loadSharedSkills({ operatorDir: settings.SKILLS_DIR }).then((shared) => {
    for (const invalid of shared.invalid) {
      logger.warn(
        { skill: invalid.folder, problems: describeProblems(invalid.problems) },
        'invalid skill left out',
      );
    }
    if (shared.replaced.length > 0) {
      logger.info({ skills: shared.replaced }, 'SKILLS_DIR replaces shipped skills');
    }
    return new SkillCatalog(shared, new SkillRepository(deps.db));
  });
  catalog.catch((err: unknown) => logger.error({ err }, 'skills could not be loaded'));
  const prepared = new WeakMap<RunInfo, Promise<RunSkills | undefined>>();
  const skillsOf = (run: RunInfo) => {
    let skills = prepared.get(run);
    if (!skills) {
      skills = catalog.then(async (loaded) =>
        prepareRunSkills(loaded, {
          userId: run.userId,
          skills: run.request.capabilities.skills,
          message: run.request.message,
          recentTurns: run.request.capabilities.skills
            ? await (run.earlierUserTurns?.() ?? [])
            : [],
        }),
      );
      prepared.set(run, skills);
    }
    return skills;
  };
  return {
    catalog,
    source: async (run) => {
      const skills = await skillsOf(run);
      if (!skills) return [];
      return {
        tools: skills.tools,
        promptSections: skills.promptSection ? [skills.promptSection] : [],
        events: [skills.event],
      };
    },
    runFiles: async (run, dir) => {
      const skills = await skillsOf(run).catch(() => undefined);
      if (!skills) return undefined;
      const loaded = await catalog;
      return {
        note:
          `Files of active skills are in the sandbox under ${dir}/<skill name>/, ` +
          'at the paths listed for each skill.',
        current: () =>
          skills.activeSkills().flatMap((skill) =>
            skill.resources.map((resource) => ({
              path: `${dir}/${skill.name}/${resource.path}`,
              read: () => loaded.readResource(run.userId, skill, resource.path),
            })),
          ),
      };
    },
  };
}
