import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrate, type Database } from '@agent-backend/store';
import { loadSharedSkills, SkillCatalog } from './catalog.js';
import { MAX_USER_SKILLS } from './limits.js';
import type { SkillPackage } from './skill.js';
import { SkillRepository, TooManySkillsError } from './skill-repository.js';

function skillPackage(
  name: string,
  description = `Does ${name} things.`,
  files: Record<string, string | Uint8Array> = {},
): SkillPackage {
  return {
    frontMatter: { name, description, metadata: { owner: 'test' } },
    body: `# ${name}\n\nDo it well.`,
    files: Object.entries(files).map(([path, content]) => ({
      path,
      content: typeof content === 'string' ? Buffer.from(content) : content,
    })),
  };
}

const text = (bytes: Uint8Array | undefined) =>
  bytes === undefined ? undefined : Buffer.from(bytes).toString('utf8');

/**
 * Users' skills in the durable store and the catalog that merges them with the shared ones,
 * against a real database; run by one test file per engine so that both behave the same.
 */
export function describeSkillsContract(name: string, open: () => Promise<Database>): void {
  describe(`skills on ${name}`, () => {
    let db: Database;
    let repo: SkillRepository;
    let catalog: SkillCatalog;
    beforeAll(async () => {
      db = await open();
      await migrate(db);
      repo = new SkillRepository(db);
      catalog = new SkillCatalog(await loadSharedSkills(), repo);
    });
    afterAll(async () => {
      await db?.close();
    });

    it("stores, lists, reads and deletes a user's skills, for that user only", async () => {
      const binary = Uint8Array.from([0, 255, 1, 254]);
      expect(
        await repo.put(
          'alice',
          skillPackage('notes', 'Takes notes.', { 'a/b.md': 'B', 'x.bin': binary }),
        ),
      ).toEqual({ created: true });
      expect(await repo.list('alice')).toEqual([
        {
          name: 'notes',
          description: 'Takes notes.',
          created_at: expect.any(String),
          updated_at: expect.any(String),
        },
      ]);
      expect(await repo.get('alice', 'notes')).toEqual({
        name: 'notes',
        description: 'Takes notes.',
        source: 'user',
        frontMatter: { name: 'notes', description: 'Takes notes.', metadata: { owner: 'test' } },
        body: '# notes\n\nDo it well.',
        resources: [
          { path: 'a/b.md', size: 1 },
          { path: 'x.bin', size: 4 },
        ],
      });
      expect(text(await repo.readFile('alice', 'notes', 'a/b.md'))).toBe('B');
      expect(await repo.readFile('alice', 'notes', 'x.bin')).toEqual(Buffer.from(binary));

      // Another user: the name does not exist for them.
      expect(await repo.list('bob')).toEqual([]);
      expect(await repo.get('bob', 'notes')).toBeUndefined();
      expect(await repo.readFile('bob', 'notes', 'a/b.md')).toBeUndefined();
      expect(await repo.delete('bob', 'notes')).toBe(false);
      expect(await repo.get('alice', 'notes')).toBeDefined();

      expect(await repo.delete('alice', 'notes')).toBe(true);
      expect(await repo.list('alice')).toEqual([]);
      expect(await repo.readFile('alice', 'notes', 'a/b.md')).toBeUndefined();
      expect(await repo.delete('alice', 'notes')).toBe(false);
    });

    it('replaces a skill uploaded again under the same name, files included', async () => {
      await repo.put('carol', skillPackage('report', 'First.', { 'old.md': 'old' }));
      const [before] = await repo.list('carol');
      expect(
        await repo.put('carol', skillPackage('report', 'Second.', { 'new.md': 'new' })),
      ).toEqual({ created: false });
      const [after] = await repo.list('carol');
      expect(after).toMatchObject({ description: 'Second.', created_at: before!.created_at });
      expect((await repo.get('carol', 'report'))!.resources).toEqual([{ path: 'new.md', size: 3 }]);
      expect(await repo.readFile('carol', 'report', 'old.md')).toBeUndefined();
    });

    it('two users may use the same name without seeing each other', async () => {
      await repo.put('dave', skillPackage('shared-name', "Dave's."));
      await repo.put('erin', skillPackage('shared-name', "Erin's."));
      expect((await repo.get('dave', 'shared-name'))!.description).toBe("Dave's.");
      expect((await repo.get('erin', 'shared-name'))!.description).toBe("Erin's.");
      await repo.delete('dave', 'shared-name');
      expect((await repo.get('erin', 'shared-name'))!.description).toBe("Erin's.");
    });

    it(`holds at most ${MAX_USER_SKILLS} skills per user, under concurrent uploads too`, async () => {
      const uploads = Array.from({ length: MAX_USER_SKILLS + 3 }, (_, i) =>
        repo.put('frank', skillPackage(`skill-${i}`)),
      );
      const results = await Promise.allSettled(uploads);
      const refused = results.filter((r) => r.status === 'rejected');
      expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(MAX_USER_SKILLS);
      expect(refused).toHaveLength(3);
      for (const r of refused) expect(r.reason).toBeInstanceOf(TooManySkillsError);
      expect(await repo.list('frank')).toHaveLength(MAX_USER_SKILLS);
      // Replacing one at the limit is fine; another user is not affected.
      const kept = (await repo.list('frank'))[0]!.name;
      expect(await repo.put('frank', skillPackage(kept, 'Updated.'))).toEqual({ created: false });
      expect(await repo.put('grace', skillPackage('one'))).toEqual({ created: true });
    });

    it("shadows a shared skill with the user's own of the same name, for that user only", async () => {
      await repo.put(
        'heidi',
        skillPackage('writing-plans', "Heidi's planning rules.", {
          'templates/plan-template.md': 'mine',
        }),
      );
      const heidi = await catalog.list('heidi');
      const ivan = await catalog.list('ivan');
      expect(heidi.find((s) => s.name === 'writing-plans')).toEqual({
        name: 'writing-plans',
        description: "Heidi's planning rules.",
        source: 'user',
      });
      expect(ivan.find((s) => s.name === 'writing-plans')).toMatchObject({ source: 'builtin' });
      expect(heidi.map((s) => s.name)).toEqual(ivan.map((s) => s.name));

      const own = (await catalog.get('heidi', 'writing-plans'))!;
      const builtin = (await catalog.get('ivan', 'writing-plans'))!;
      expect(own.body).toBe('# writing-plans\n\nDo it well.');
      expect(builtin.body).toMatch(/^# Writing plans/);
      const path = 'templates/plan-template.md';
      expect(text(await catalog.readResource('heidi', own, path))).toBe('mine');
      expect(text(await catalog.readResource('ivan', builtin, path))).toMatch(/^# Plan:/);
      // Only listed files are read: no path leaves the skill's folder.
      expect(
        await catalog.readResource('ivan', builtin, '../drafting-emails/SKILL.md'),
      ).toBeUndefined();

      await repo.delete('heidi', 'writing-plans');
      expect((await catalog.get('heidi', 'writing-plans'))!.source).toBe('builtin');
    });

    it('reads several skills at once in the order asked, leaving unknown names out', async () => {
      await repo.put('judy', skillPackage('zeta'));
      const skills = await catalog.getMany('judy', ['zeta', 'nope', 'drafting-emails']);
      expect(skills.map((s) => [s.name, s.source])).toEqual([
        ['zeta', 'user'],
        ['drafting-emails', 'builtin'],
      ]);
      expect(await catalog.getMany('mallory', ['zeta'])).toEqual([]);
    });
  });
}
