import { describe, expect, it } from 'vitest';
import { SKILL_LIMITS } from './limits.js';
import type { SkillPackage, SkillProblem, SkillResult } from './skill.js';
import { readSkillZip } from './skill-zip.js';
import { parseSkillUpload } from './upload.js';
import { skillMarkdown, writeZip, type ZipEntrySpec } from '@agent-backend/testing';

function valueOf(result: SkillResult<SkillPackage>): SkillPackage {
  if (!result.ok) throw new Error(`expected a valid skill: ${JSON.stringify(result.problems)}`);
  return result.value;
}

function problemsOf(result: SkillResult<SkillPackage>): readonly SkillProblem[] {
  if (result.ok) throw new Error('expected the upload to be refused');
  return result.problems;
}

const zip = (...entries: ZipEntrySpec[]) => readSkillZip(writeZip(entries));
const text = (bytes: Uint8Array) => Buffer.from(bytes).toString('utf8');

describe('readSkillZip', () => {
  it('reads a zipped skill folder: SKILL.md and its files, paths relative to the folder', async () => {
    const skill = valueOf(
      await zip(
        { name: 'plans/' },
        { name: 'plans/SKILL.md', data: skillMarkdown('plans') },
        { name: 'plans/templates/', method: 'store' },
        { name: 'plans/templates/plan.md', data: '# Plan\n' },
        { name: 'plans/scripts/count.py', data: 'print(1)\n', method: 'store' },
        { name: '__MACOSX/plans/._SKILL.md', data: 'junk' },
        { name: 'plans/.DS_Store', data: 'junk' },
      ),
    );
    expect(skill.frontMatter.name).toBe('plans');
    expect(skill.body).toBe('# plans\n\nStep one, then two.');
    expect(skill.files.map((f) => [f.path, text(f.content)])).toEqual([
      ['scripts/count.py', 'print(1)\n'],
      ['templates/plan.md', '# Plan\n'],
    ]);
  });

  it('reads a skill whose SKILL.md is at the root of the archive', async () => {
    const skill = valueOf(
      await zip(
        { name: 'SKILL.md', data: skillMarkdown('any-name') },
        { name: 'a.txt', data: 'a' },
      ),
    );
    expect(skill.frontMatter.name).toBe('any-name');
    expect(skill.files.map((f) => f.path)).toEqual(['a.txt']);
  });

  it('requires the folder name to equal the skill name', async () => {
    expect(
      problemsOf(await zip({ name: 'folder/SKILL.md', data: skillMarkdown('plans') })),
    ).toEqual([{ path: 'name', message: 'must equal the folder name "folder"' }]);
  });

  it('reports the SKILL.md problems of a zipped skill', async () => {
    const problems = problemsOf(
      await zip({ name: 'x/SKILL.md', data: '---\nname: x\n---\nbody\n' }),
    );
    expect(problems).toEqual([{ path: 'description', message: 'is required' }]);
  });

  it.each([
    ['zip-slip with ..', 'x/../../etc/cron.d/evil', 'the path leaves the skill folder ("..")'],
    ['a leading ..', '../evil.sh', 'the path leaves the skill folder ("..")'],
    ['an absolute path', '/etc/passwd', 'the path is absolute'],
    ['a drive letter', 'C:/Windows/evil.dll', 'the path is absolute'],
    ['backslashes', 'x\\..\\..\\evil', 'the path leaves the skill folder ("..")'],
    ['a control character', 'x/a\u0001b', 'the path contains a backslash or a control character'],
    ['an empty segment', 'x//a', 'the path has an empty or "." segment'],
  ])('refuses an entry with %s', async (_label, name, message) => {
    const problems = problemsOf(
      await zip({ name: 'x/SKILL.md', data: skillMarkdown('x') }, { name, data: 'owned' }),
    );
    expect(problems).toEqual([{ path: expect.any(String), message }]);
  });

  it('reports every unsafe entry at once', async () => {
    const problems = problemsOf(
      await zip(
        { name: 'x/SKILL.md', data: skillMarkdown('x') },
        { name: '../a', data: '1' },
        { name: '/b', data: '2' },
      ),
    );
    expect(problems.map((p) => p.path)).toEqual(['../a', '/b']);
  });

  it('refuses symbolic links, encrypted entries, unknown compression and duplicates', async () => {
    const problems = problemsOf(
      await zip(
        { name: 'x/SKILL.md', data: skillMarkdown('x') },
        { name: 'x/link', data: '/etc/passwd', mode: 0o120777, method: 'store' },
        { name: 'x/secret', data: 'data', encrypted: true },
        { name: 'x/bzip2.bin', data: 'data', methodCode: 12 },
        { name: 'x/a.txt', data: 'a' },
        { name: 'x/a.txt', data: 'b' },
      ),
    );
    expect(problems).toEqual([
      { path: 'x/link', message: 'symbolic links are not accepted' },
      { path: 'x/secret', message: 'encrypted entries are not accepted' },
      { path: 'x/bzip2.bin', message: 'compression method 12 is not supported (use deflate)' },
      { path: 'x/a.txt', message: 'appears twice in the archive' },
    ]);
  });

  it('shows every refused name unambiguously, control characters escaped in full', async () => {
    // A NUL before a digit printed as "\x01", the same as the control character 1.
    const problems = problemsOf(
      await zip(
        { name: 'x/SKILL.md', data: skillMarkdown('x') },
        { name: 'x/\u00001', data: '1' },
        { name: 'x/\u0001', data: '2' },
        { name: `x/${'\u0000'.repeat(40)}`, data: '5' },
      ),
    );
    expect(problems.map((p) => p.path)).toEqual([
      'x/\\x001',
      'x/\\x01',
      `x/${'\\x00'.repeat(28)}...`,
    ]);
    expect(new Set(problems.map((p) => p.message))).toEqual(
      new Set(['the path contains a backslash or a control character']),
    );
  });

  it.each([
    ['a file and a file inside it', ['x/a', 'x/a/b'], 'x/a', 'x/a/b'],
    ['the file inside first', ['x/a/b', 'x/a'], 'x/a', 'x/a/b'],
    ['deeper', ['x/r/s/t/u', 'x/r/s'], 'x/r/s', 'x/r/s/t/u'],
    ['a folder entry and a file', ['x/a/', 'x/a'], 'x/a', 'x/a/'],
    ['a file and a folder entry', ['x/d/a', 'x/d/a/b/'], 'x/d/a', 'x/d/a/b/'],
    ['SKILL.md as a folder', ['x/SKILL.md/b'], 'x/SKILL.md', 'x/SKILL.md/b'],
  ])('refuses a name used as a file and as a folder: %s', async (_label, names, path, inside) => {
    // Such a skill was stored, then copying its files into the sandbox failed every
    // code call of the runs using it.
    const problems = problemsOf(
      await zip(
        { name: 'x/SKILL.md', data: skillMarkdown('x') },
        ...names.map((name) =>
          name.endsWith('/') ? { name, method: 'store' as const } : { name, data: name },
        ),
      ),
    );
    expect(problems).toEqual([{ path, message: `is a file, but "${inside}" uses it as a folder` }]);
  });

  it('refuses an archive with too many entries before reading them', async () => {
    const entries = Array.from({ length: SKILL_LIMITS.zipEntries + 1 }, (_, i) => ({
      name: `x/d${i}/`,
      method: 'store' as const,
    }));
    expect(problemsOf(await zip(...entries))).toEqual([
      {
        path: 'zip',
        message: `has ${SKILL_LIMITS.zipEntries + 1} entries; at most ${SKILL_LIMITS.zipEntries}`,
      },
    ]);
  });

  it('refuses more files than a skill may have', async () => {
    const files = Array.from({ length: SKILL_LIMITS.resourceFiles + 1 }, (_, i) => ({
      name: `x/f${i}.txt`,
      data: 'f',
    }));
    const problems = problemsOf(
      await zip({ name: 'x/SKILL.md', data: skillMarkdown('x') }, ...files),
    );
    expect(problems).toEqual([
      {
        path: 'zip',
        message: `has ${SKILL_LIMITS.resourceFiles + 2} files; at most ${SKILL_LIMITS.resourceFiles} besides SKILL.md`,
      },
    ]);
  });

  it('refuses a zip bomb by its declared size, before inflating it', async () => {
    const zeros = Buffer.alloc(SKILL_LIMITS.totalBytes + 1);
    const archive = writeZip([
      { name: 'x/SKILL.md', data: skillMarkdown('x') },
      { name: 'x/zeros.bin', data: zeros },
    ]);
    expect(archive.length).toBeLessThan(10_000);
    expect(problemsOf(await readSkillZip(archive))).toEqual([
      { path: 'zip', message: expect.stringMatching(/^unpacks to \d+ bytes; at most 2097152$/) },
    ]);
  });

  it('refuses an entry that inflates past the size its headers declare', async () => {
    const archive = writeZip([
      { name: 'x/SKILL.md', data: skillMarkdown('x') },
      { name: 'x/liar.bin', data: Buffer.alloc(50 * 1024 * 1024), declaredSize: 100 },
    ]);
    const problems = problemsOf(await readSkillZip(archive));
    expect(problems).toEqual([
      { path: 'x/liar.bin', message: expect.stringMatching(/too many bytes/) },
    ]);
  });

  it('refuses an archive over the upload size, and bytes that are not a zip', async () => {
    const big = Buffer.alloc(SKILL_LIMITS.zipBytes + 1);
    expect(problemsOf(await readSkillZip(big))).toEqual([
      { path: 'zip', message: `is larger than ${SKILL_LIMITS.zipBytes} bytes` },
    ]);
    const problems = problemsOf(await readSkillZip(Buffer.from('this is not a zip')));
    expect(problems).toEqual([
      { path: 'zip', message: expect.stringMatching(/^is not a readable zip archive \(/) },
    ]);
  });

  it('needs SKILL.md at the root or in one top-level folder', async () => {
    const message =
      "must hold SKILL.md at its root or in a single top-level folder (the skill's folder)";
    expect(problemsOf(await zip({ name: 'x/readme.md', data: 'hi' }))).toEqual([
      { path: 'zip', message },
    ]);
    expect(
      problemsOf(
        await zip({ name: 'x/SKILL.md', data: skillMarkdown('x') }, { name: 'y/a', data: 'a' }),
      ),
    ).toEqual([{ path: 'zip', message }]);
  });

  it('refuses a SKILL.md that is too large or not UTF-8', async () => {
    const large = `${skillMarkdown('x')}${'x'.repeat(SKILL_LIMITS.skillMdBytes)}`;
    expect(problemsOf(await zip({ name: 'x/SKILL.md', data: large }))).toEqual([
      { path: 'SKILL.md', message: `is larger than ${SKILL_LIMITS.skillMdBytes} bytes` },
    ]);
    const latin1 = Buffer.from(skillMarkdown('x', 'Caf\u00e9 skill'), 'latin1');
    expect(problemsOf(await zip({ name: 'x/SKILL.md', data: latin1 }))).toEqual([
      { path: 'SKILL.md', message: 'is not UTF-8 text' },
    ]);
  });
});

describe('parseSkillUpload', () => {
  it('takes a SKILL.md text as a skill without files', async () => {
    const result = await parseSkillUpload({ kind: 'markdown', text: skillMarkdown('notes') });
    expect(valueOf(result)).toMatchObject({ frontMatter: { name: 'notes' }, files: [] });
  });

  it('reports the problems of a SKILL.md text', async () => {
    const result = await parseSkillUpload({ kind: 'markdown', text: 'no front matter' });
    expect(problemsOf(result)).toHaveLength(1);
  });

  it('takes a zip', async () => {
    const data = writeZip([{ name: 'SKILL.md', data: skillMarkdown('zipped') }]);
    expect(valueOf(await parseSkillUpload({ kind: 'zip', data })).frontMatter.name).toBe('zipped');
  });
});
