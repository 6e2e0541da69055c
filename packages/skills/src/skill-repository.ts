import type { Database } from '@agent-backend/store';
import { MAX_USER_SKILLS } from './limits.js';
import type { Skill, SkillPackage, SkillResource } from './skill.js';
import { SkillFrontMatter } from './skill-format.js';

/** A user's skill as listed: no instructions, no files. */
export interface StoredSkillSummary {
  readonly name: string;
  readonly description: string;
  /** ISO 8601. */
  readonly created_at: string;
  /** ISO 8601: the last upload under this name. */
  readonly updated_at: string;
}

/** Raised by {@link SkillRepository.put} when the user has {@link MAX_USER_SKILLS} skills. */
export class TooManySkillsError extends Error {
  constructor(readonly limit: number) {
    super(`at most ${limit} skills per user; delete one first`);
    this.name = 'TooManySkillsError';
  }
}

interface SummaryRow extends Record<string, unknown> {
  name: string;
  description: string;
  created_at: Date;
  updated_at: Date;
}

interface SkillRow extends Record<string, unknown> {
  name: string;
  description: string;
  front_matter: unknown;
  body: string;
}

const toSummary = (row: SummaryRow): StoredSkillSummary => ({
  name: row.name,
  description: row.description,
  created_at: row.created_at.toISOString(),
  updated_at: row.updated_at.toISOString(),
});

/**
 * The skills users uploaded, in the durable store. Every statement has the owner's user id
 * (the token's `sub`) in its WHERE clause or key, so a name another user chose behaves exactly
 * like a name nobody chose. Shared skills (shipped, `SKILLS_DIR`) are not here.
 */
export class SkillRepository {
  constructor(private readonly db: Database) {}

  /** The user's skills, by name. */
  async list(userId: string): Promise<StoredSkillSummary[]> {
    const { rows } = await this.db.query<SummaryRow>(
      `SELECT name, description, created_at, updated_at FROM user_skills
       WHERE user_id = $1 ORDER BY name`,
      [userId],
    );
    return rows.map(toSummary);
  }

  /** One of the user's skills with its instructions and the list of its files. */
  async get(userId: string, name: string): Promise<Skill | undefined> {
    return (await this.getMany(userId, [name]))[0];
  }

  /** Several of the user's skills at once (unknown names are left out), by name. */
  async getMany(userId: string, names: readonly string[]): Promise<Skill[]> {
    if (names.length === 0) return [];
    const { rows } = await this.db.query<SkillRow>(
      `SELECT name, description, front_matter, body FROM user_skills
       WHERE user_id = $1 AND name = ANY($2::text[]) ORDER BY name`,
      [userId, [...names]],
    );
    if (rows.length === 0) return [];
    const files = await this.db.query<{ name: string; path: string; size: number }>(
      `SELECT name, path, size FROM user_skill_files
       WHERE user_id = $1 AND name = ANY($2::text[]) ORDER BY name, path`,
      [userId, rows.map((r) => r.name)],
    );
    const resources = new Map<string, SkillResource[]>();
    for (const file of files.rows) {
      const list = resources.get(file.name) ?? [];
      list.push({ path: file.path, size: file.size });
      resources.set(file.name, list);
    }
    return rows.map((row) => ({
      name: row.name,
      description: row.description,
      source: 'user' as const,
      frontMatter: SkillFrontMatter.parse(row.front_matter),
      body: row.body,
      resources: resources.get(row.name) ?? [],
    }));
  }

  /** The bytes of one file of one of the user's skills. */
  async readFile(userId: string, name: string, path: string): Promise<Uint8Array | undefined> {
    const { rows } = await this.db.query<{ content: string }>(
      `SELECT content FROM user_skill_files WHERE user_id = $1 AND name = $2 AND path = $3`,
      [userId, name, path],
    );
    return rows[0] ? Buffer.from(rows[0].content, 'base64') : undefined;
  }

  /**
   * Stores a skill under its name, replacing the user's skill of that name (and all of its
   * files) in one transaction. Uploads of one user are serialized (an advisory lock on the
   * user), so {@link MAX_USER_SKILLS} holds under concurrent uploads on several replicas.
   * @returns whether the name was new for the user.
   * @throws {@link TooManySkillsError} when a new name would pass the limit.
   */
  async put(userId: string, skill: SkillPackage): Promise<{ created: boolean }> {
    const { name, description } = skill.frontMatter;
    return this.db.transaction(async (tx) => {
      await tx.query(`SELECT pg_advisory_xact_lock(hashtext('agent-backend:skills:' || $1))`, [
        userId,
      ]);
      const { rows } = await tx.query<{ count: number; exists: boolean }>(
        `SELECT count(*)::integer AS count, coalesce(bool_or(name = $2), false) AS exists
         FROM user_skills WHERE user_id = $1`,
        [userId, name],
      );
      const { count, exists } = rows[0]!;
      if (!exists && count >= MAX_USER_SKILLS) throw new TooManySkillsError(MAX_USER_SKILLS);
      await tx.query(
        `INSERT INTO user_skills (user_id, name, description, front_matter, body)
         VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT (user_id, name) DO UPDATE SET description = EXCLUDED.description,
           front_matter = EXCLUDED.front_matter, body = EXCLUDED.body, updated_at = now()`,
        [userId, name, description, JSON.stringify(skill.frontMatter), skill.body],
      );
      await tx.query('DELETE FROM user_skill_files WHERE user_id = $1 AND name = $2', [
        userId,
        name,
      ]);
      if (skill.files.length > 0) {
        await tx.query(
          `INSERT INTO user_skill_files (user_id, name, path, size, content)
           SELECT $1, $2, t.path, t.size, t.content
           FROM unnest($3::text[], $4::integer[], $5::text[]) AS t(path, size, content)`,
          [
            userId,
            name,
            skill.files.map((f) => f.path),
            skill.files.map((f) => f.content.byteLength),
            skill.files.map((f) => Buffer.from(f.content).toString('base64')),
          ],
        );
      }
      return { created: !exists };
    });
  }

  /** Deletes one of the user's skills with its files. @returns whether the user had it. */
  async delete(userId: string, name: string): Promise<boolean> {
    const { rowCount } = await this.db.query(
      'DELETE FROM user_skills WHERE user_id = $1 AND name = $2',
      [userId, name],
    );
    return rowCount > 0;
  }
}
