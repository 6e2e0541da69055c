import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { BUILTIN_SKILLS_DIR, loadSharedSkills } from './catalog.js';
import { SKILL_LIMITS } from './limits.js';
import { loadSkillsDirectory } from './skill-folder.js';
import { skillMarkdown } from '@agent-backend/testing';

let root: string;
beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'skills-'));
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

async function put(path: string, content: string): Promise<void> {
  await mkdir(dirname(join(root, path)), { recursive: true });
  await writeFile(join(root, path), content);
}

describe('the shipped skills', () => {
  it('are all valid, with their files listed', async () => {
    const { skills, invalid } = await loadSkillsDirectory(BUILTIN_SKILLS_DIR, 'builtin');
    expect(invalid).toEqual([]);
    expect(skills.map((s) => s.name)).toEqual([
      'drafting-emails',
      'reviewing-code',
      'summarizing-documents',
      'writing-plans',
    ]);
    const plans = skills.find((s) => s.name === 'writing-plans')!;
    expect(plans.resources).toEqual([
      { path: 'templates/plan-template.md', size: expect.any(Number) },
    ]);
    for (const skill of skills) {
      expect(skill.source).toBe('builtin');
      expect(skill.body.length).toBeGreaterThan(500);
      // Every file a body names is shipped with it.
      for (const [, path] of skill.body.matchAll(/`((?:templates|references)\/[^`]+)`/g)) {
        expect(skill.resources.map((r) => r.path)).toContain(path);
      }
    }
  });
});

describe('loadSkillsDirectory', () => {
  it('reads valid skills and reports each invalid one with its reasons', async () => {
    await put('good/SKILL.md', skillMarkdown('good'));
    await put('good/refs/guide.md', 'guide');
    await put('good/.hidden', 'ignored');
    await put('renamed/SKILL.md', skillMarkdown('other-name'));
    await put('empty/README.md', 'no skill here');
    await put('Bad_Name/SKILL.md', skillMarkdown('Bad_Name'));
    await put('notes.txt', 'files at the top level are ignored');
    await put('.git/SKILL.md', 'hidden folders are ignored');

    const { skills, invalid } = await loadSkillsDirectory(root, 'operator');
    expect(skills).toEqual([
      expect.objectContaining({
        name: 'good',
        source: 'operator',
        dir: join(root, 'good'),
        resources: [{ path: 'refs/guide.md', size: 5 }],
      }),
    ]);
    expect(invalid).toEqual([
      {
        folder: join(root, 'Bad_Name'),
        problems: [{ path: 'name', message: expect.stringMatching(/lower-case/) }],
      },
      {
        folder: join(root, 'empty'),
        problems: [{ path: 'SKILL.md', message: 'is missing: every skill folder needs one' }],
      },
      {
        folder: join(root, 'renamed'),
        problems: [{ path: 'name', message: 'must equal the folder name "renamed"' }],
      },
    ]);
  });

  it('refuses symbolic links inside a skill, so no file outside it is ever read', async () => {
    await put('linked/SKILL.md', skillMarkdown('linked'));
    await symlink('/etc/passwd', join(root, 'linked', 'passwd'));
    const { invalid } = await loadSkillsDirectory(root, 'operator');
    expect(invalid).toEqual([
      {
        folder: join(root, 'linked'),
        problems: [{ path: 'passwd', message: 'symbolic links are not accepted' }],
      },
    ]);
  });

  it('applies the same size limits as uploads', async () => {
    await put('big/SKILL.md', skillMarkdown('big'));
    await put('big/blob.bin', 'x'.repeat(SKILL_LIMITS.totalBytes));
    await put('many/SKILL.md', skillMarkdown('many'));
    for (let i = 0; i <= SKILL_LIMITS.resourceFiles; i++) await put(`many/f${i}.txt`, 'f');
    const { skills, invalid } = await loadSkillsDirectory(root, 'operator');
    expect(skills).toEqual([]);
    expect(invalid.map((i) => i.problems[0]!.message)).toEqual([
      expect.stringMatching(/^holds \d+ bytes; at most 2097152$/),
      `has more than ${SKILL_LIMITS.resourceFiles} files besides SKILL.md`,
    ]);
  });

  it('reports a missing directory as one problem instead of failing', async () => {
    const missing = join(root, 'nope');
    expect(await loadSkillsDirectory(missing, 'operator')).toEqual({
      skills: [],
      invalid: [
        { folder: missing, problems: [{ path: '', message: expect.stringMatching(/ENOENT/) }] },
      ],
    });
  });
});

describe('loadSharedSkills', () => {
  it("adds the operator's skills to the shipped ones, replacing those of the same name", async () => {
    await put('writing-plans/SKILL.md', skillMarkdown('writing-plans', 'Our house style.'));
    await put('expenses/SKILL.md', skillMarkdown('expenses'));
    const shared = await loadSharedSkills({ operatorDir: root });
    expect(shared.invalid).toEqual([]);
    expect(shared.replaced).toEqual(['writing-plans']);
    expect([...shared.skills.keys()].sort()).toEqual([
      'drafting-emails',
      'expenses',
      'reviewing-code',
      'summarizing-documents',
      'writing-plans',
    ]);
    expect(shared.skills.get('writing-plans')).toMatchObject({
      source: 'operator',
      description: 'Our house style.',
    });
  });

  it('can leave the shipped skills out', async () => {
    const shared = await loadSharedSkills({ builtinDir: null });
    expect(shared.skills.size).toBe(0);
  });
});
