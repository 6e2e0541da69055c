import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPostgresDatabase, migrate, prepareVectorSearch } from '@agent-backend/store';
import { createTestSchema, testDatabaseUrl, type TestSchema } from '@agent-backend/testing';
import { MemoryRepository } from './memory-repository.js';
import { describeMemoryContract } from './memory.contract.js';

/** Whether this server has pgvector (CI builds it; a server without it takes the plain-SQL path). */
async function serverHasPgvector(): Promise<boolean> {
  const client = new pg.Client({ connectionString: testDatabaseUrl() });
  await client.connect();
  try {
    const { rows } = await client.query(`SELECT 1 FROM pg_extension WHERE extname = 'vector'`);
    return rows.length > 0;
  } finally {
    await client.end();
  }
}

const schemas: TestSchema[] = [];
let hasPgvector = false;
beforeAll(async () => {
  hasPgvector = await serverHasPgvector();
  schemas.push(
    await createTestSchema('memory'),
    await createTestSchema('memory_off'),
    await createTestSchema('memory_race'),
  );
});
afterAll(async () => {
  await Promise.all(schemas.map((s) => s.drop()));
});

describeMemoryContract(
  'PostgreSQL',
  () => createPostgresDatabase({ url: testDatabaseUrl(), schema: schemas[0]!.schema, max: 4 }),
  {
    get expectVector() {
      return hasPgvector ? ('pgvector' as const) : ('array' as const);
    },
  },
);
describeMemoryContract(
  'PostgreSQL with KNOWLEDGE_PGVECTOR=off',
  () => createPostgresDatabase({ url: testDatabaseUrl(), schema: schemas[1]!.schema, max: 4 }),
  { vectorMode: 'off', expectVector: 'array' },
);

/** A word no other call returns (so two texts share no word by chance). */
const word = () => `w${randomBytes(5).toString('hex')}`;

describe('concurrent saves of one user on two replicas', () => {
  // Two pools on one schema: what two API replicas are. Each has connections to spare, so the
  // saves really run at the same time.
  const replicas: MemoryRepository[] = [];
  const closers: Array<() => Promise<void>> = [];
  beforeAll(async () => {
    for (let i = 0; i < 2; i++) {
      const db = await createPostgresDatabase({
        url: testDatabaseUrl(),
        schema: schemas[2]!.schema,
        max: 5,
      });
      closers.push(() => db.close());
      await migrate(db);
      await prepareVectorSearch(db);
      replicas.push(new MemoryRepository(db));
    }
  });
  afterAll(async () => {
    await Promise.all(closers.map((close) => close()));
  });

  it('keeps every distinct memory', async () => {
    const texts = replicas.map(() =>
      Array.from({ length: 15 }, () => `Note ${word()} ${word()} ${word()}`),
    );
    const outcomes = await Promise.all(
      replicas.flatMap((repo, r) => texts[r]!.map((text) => repo.save('ursula', { text }))),
    );
    expect(outcomes.every((o) => o.status === 'created')).toBe(true);
    const listed = await replicas[0]!.list('ursula', { limit: 100 });
    expect(listed.memories.map((m) => m.text).sort()).toEqual(texts.flat().sort());
  });

  it('merges saves of the same memory into one row without losing any of their tags', async () => {
    const tags = Array.from({ length: 10 }, (_, i) => `tag${i}`);
    const outcomes = await Promise.all(
      tags.map((tag, i) =>
        replicas[i % 2]!.save('viktor', { text: 'Viktor works night shifts.', tags: [tag] }),
      ),
    );
    expect(outcomes.filter((o) => o.status === 'created')).toHaveLength(1);
    const { memories } = await replicas[1]!.list('viktor');
    expect(memories).toHaveLength(1);
    expect([...memories[0]!.tags].sort()).toEqual([...tags].sort());
  });

  it('merges near-duplicates saved at once into one row', async () => {
    const outcomes = await Promise.all([
      replicas[0]!.save('wanda', { text: 'Wanda drives a green Skoda estate car' }),
      replicas[1]!.save('wanda', { text: 'Wanda drives a green Skoda estate car today' }),
    ]);
    expect(outcomes.map((o) => o.status).sort()).toEqual(['created', 'updated']);
    expect((await replicas[0]!.list('wanda')).memories).toHaveLength(1);
  });
});
