import { lstat, readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { SKILL_LIMITS } from './limits.js';
import { resourcePathProblem } from './resource-path.js';
import type { Skill, SkillProblem, SkillResource, SkillResult } from './skill.js';
import { parseSkillMarkdown, SKILL_FILE } from './skill-format.js';

/** A skill read from a folder on disk; its resource files stay there until read. */
export interface FolderSkill extends Skill {
  readonly source: 'builtin' | 'operator';
  /** The skill's folder, absolute or as given. */
  readonly dir: string;
}

/** A folder that is not a valid skill, and why. */
export interface InvalidSkill {
  /** The folder as found (`<skills dir>/<name>`). */
  readonly folder: string;
  readonly problems: readonly SkillProblem[];
}

/** What a skills directory holds. */
export interface SkillsDirectory {
  readonly skills: FolderSkill[];
  readonly invalid: InvalidSkill[];
}

/** Names that are never part of a skill: hidden files and folders (`.git`, `.DS_Store`). */
const isHidden = (name: string) => name.startsWith('.');

/**
 * Reads every skill of a directory: each sub-folder (a symbolic link to one counts) must hold
 * a valid SKILL.md whose `name` is the folder's name. Files at the top level and hidden entries
 * are ignored. Invalid skills are returned with every problem found, never thrown, so one bad
 * skill does not hide the others; a missing directory is one invalid entry.
 */
export async function loadSkillsDirectory(
  root: string,
  source: FolderSkill['source'],
): Promise<SkillsDirectory> {
  let names: string[];
  try {
    names = (await readdir(root)).sort();
  } catch (error) {
    const message = `cannot read the skills directory (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`;
    return { skills: [], invalid: [{ folder: root, problems: [{ path: '', message }] }] };
  }
  const skills: FolderSkill[] = [];
  const invalid: InvalidSkill[] = [];
  for (const name of names) {
    if (isHidden(name)) continue;
    const dir = join(root, name);
    const info = await stat(dir).catch(() => undefined);
    if (!info?.isDirectory()) continue;
    const result = await loadSkillFolder(dir, name, source);
    if (result.ok) skills.push(result.value);
    else invalid.push({ folder: dir, problems: result.problems });
  }
  return { skills, invalid };
}

/**
 * Reads one skill folder: SKILL.md parsed and checked (its `name` must be `folderName`), every
 * other file listed as a resource within {@link SKILL_LIMITS}. Symbolic links inside the folder
 * are refused, like in uploads: a resource is always a file of the folder itself.
 */
export async function loadSkillFolder(
  dir: string,
  folderName: string,
  source: FolderSkill['source'],
): Promise<SkillResult<FolderSkill>> {
  const problems: SkillProblem[] = [];
  const resources: SkillResource[] = [];
  let total = 0;
  let skillMd: Buffer | undefined;

  const walk = async (relative: string): Promise<void> => {
    const entries = (await readdir(join(dir, relative))).sort();
    for (const entry of entries) {
      // Past the limit the skill is invalid anyway: stop walking (an operator's typo could
      // point at a huge tree).
      if (resources.length > SKILL_LIMITS.resourceFiles) return;
      if (isHidden(entry)) continue;
      const path = relative ? `${relative}/${entry}` : entry;
      const info = await lstat(join(dir, path));
      const unsafe = resourcePathProblem(path);
      if (unsafe) problems.push({ path, message: unsafe });
      else if (info.isSymbolicLink()) {
        problems.push({ path, message: 'symbolic links are not accepted' });
      } else if (info.isDirectory()) await walk(path);
      else if (info.isFile()) {
        total += info.size;
        if (path === SKILL_FILE) {
          if (info.size > SKILL_LIMITS.skillMdBytes) {
            problems.push({ path, message: `is larger than ${SKILL_LIMITS.skillMdBytes} bytes` });
          } else skillMd = await readFile(join(dir, path));
        } else resources.push({ path, size: info.size });
      }
    }
  };
  try {
    await walk('');
  } catch (error) {
    return fail('', `cannot read the folder (${(error as Error).message})`);
  }
  if (resources.length > SKILL_LIMITS.resourceFiles) {
    problems.push({
      path: '',
      message: `has more than ${SKILL_LIMITS.resourceFiles} files besides ${SKILL_FILE}`,
    });
  }
  if (total > SKILL_LIMITS.totalBytes) {
    problems.push({
      path: '',
      message: `holds ${total} bytes; at most ${SKILL_LIMITS.totalBytes}`,
    });
  }
  if (!skillMd) {
    if (!problems.some((p) => p.path === SKILL_FILE)) {
      problems.push({ path: SKILL_FILE, message: 'is missing: every skill folder needs one' });
    }
    return { ok: false, problems };
  }
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(skillMd);
  } catch {
    return {
      ok: false,
      problems: [...problems, { path: SKILL_FILE, message: 'is not UTF-8 text' }],
    };
  }
  const parsed = parseSkillMarkdown(text, folderName);
  if (!parsed.ok) return { ok: false, problems: [...problems, ...parsed.problems] };
  if (problems.length > 0) return { ok: false, problems };
  const { frontMatter, body } = parsed.value;
  return {
    ok: true,
    value: {
      name: frontMatter.name,
      description: frontMatter.description,
      source,
      frontMatter,
      body,
      resources,
      dir,
    },
  };
}

function fail<T>(path: string, message: string): SkillResult<T> {
  return { ok: false, problems: [{ path, message }] };
}
