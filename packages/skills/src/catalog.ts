import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Skill, SkillSummary } from './skill.js';
import { loadSkillsDirectory, type FolderSkill, type InvalidSkill } from './skill-folder.js';
import type { SkillRepository } from './skill-repository.js';

/** The skills shipped with the service: the repository's `skills/` folder. */
export const BUILTIN_SKILLS_DIR = fileURLToPath(new URL('../../../skills/', import.meta.url));

/** Where shared skills come from. */
export interface SharedSkillsOptions {
  /** The shipped skills; `null` leaves them out. @default BUILTIN_SKILLS_DIR */
  readonly builtinDir?: string | null;
  /** The operator's folder (`SKILLS_DIR`); its skills shadow shipped ones of the same name. */
  readonly operatorDir?: string;
}

/** The skills every user sees, read once at start. */
export interface SharedSkills {
  /** By name: an operator's skill in place of a shipped one of the same name. */
  readonly skills: ReadonlyMap<string, FolderSkill>;
  /** Folders that are not valid skills, with every problem: to log at start. */
  readonly invalid: readonly InvalidSkill[];
  /** Shipped skills replaced by an operator's skill of the same name. */
  readonly replaced: readonly string[];
}

/** Reads the shipped and the operator's skills (see {@link loadSkillsDirectory}). */
export async function loadSharedSkills(options: SharedSkillsOptions = {}): Promise<SharedSkills> {
  const builtinDir = options.builtinDir === undefined ? BUILTIN_SKILLS_DIR : options.builtinDir;
  const builtin = builtinDir
    ? await loadSkillsDirectory(builtinDir, 'builtin')
    : { skills: [], invalid: [] };
  const operator = options.operatorDir
    ? await loadSkillsDirectory(options.operatorDir, 'operator')
    : { skills: [], invalid: [] };
  const skills = new Map<string, FolderSkill>();
  for (const skill of builtin.skills) skills.set(skill.name, skill);
  const replaced = operator.skills.filter((s) => skills.has(s.name)).map((s) => s.name);
  for (const skill of operator.skills) skills.set(skill.name, skill);
  return { skills, invalid: [...builtin.invalid, ...operator.invalid], replaced };
}

const byName = (a: { name: string }, b: { name: string }) =>
  a.name < b.name ? -1 : a.name > b.name ? 1 : 0;

/**
 * The skills each user may use: the shared ones and the user's own, where a user's skill
 * shadows a shared one of the same name for that user only. Every method takes the user id
 * (the token's `sub`); nothing reads a user's skills without it.
 */
export class SkillCatalog {
  /** Kept from one run to the next, so matching finds their terms cached by object. */
  private readonly sharedSummaries: readonly SkillSummary[];

  constructor(
    readonly shared: SharedSkills,
    readonly repository: SkillRepository,
  ) {
    this.sharedSummaries = [...shared.skills.values()].map((skill) =>
      Object.freeze({ name: skill.name, description: skill.description, source: skill.source }),
    );
  }

  /** Names, descriptions and sources of every skill the user may use, by name. */
  async list(userId: string): Promise<SkillSummary[]> {
    const own = await this.repository.list(userId);
    const merged = new Map<string, SkillSummary>();
    for (const skill of this.sharedSummaries) merged.set(skill.name, skill);
    for (const skill of own) {
      merged.set(skill.name, { name: skill.name, description: skill.description, source: 'user' });
    }
    return [...merged.values()].sort(byName);
  }

  /** One skill as the user sees it (their own first), with its instructions. */
  async get(userId: string, name: string): Promise<Skill | undefined> {
    return (await this.getMany(userId, [name]))[0];
  }

  /** Several skills as the user sees them, in the order of `names`; unknown names left out. */
  async getMany(userId: string, names: readonly string[]): Promise<Skill[]> {
    const own = new Map(
      (await this.repository.getMany(userId, names)).map((skill) => [skill.name, skill]),
    );
    return names.flatMap((name) => {
      const skill = own.get(name) ?? this.shared.skills.get(name);
      return skill ? [skill] : [];
    });
  }

  /**
   * The bytes of a file of `skill` (as returned by {@link get} for this user), or undefined
   * when the skill lists no such file: only listed paths are read, so no path can leave the
   * skill's folder.
   */
  async readResource(userId: string, skill: Skill, path: string): Promise<Uint8Array | undefined> {
    if (!skill.resources.some((r) => r.path === path)) return undefined;
    if (skill.source === 'user') return this.repository.readFile(userId, skill.name, path);
    const folder = this.shared.skills.get(skill.name);
    if (!folder || folder.source !== skill.source) return undefined;
    return readFile(join(folder.dir, path)).catch(() => undefined);
  }
}
