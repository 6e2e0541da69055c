import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import pg from 'pg';
import { importKeys, signAccessToken } from '@agent-backend/auth';
import { PreviewChunksResponse } from '@agent-backend/protocol';
import {
  createTestSchema,
  startServiceProcess,
  testDatabaseUrl,
  testRedisUrl,
  uniquePrefix,
  type ServiceProcess,
  type TestSchema,
} from '@agent-backend/testing';
import { badTokens, json, keyFiles, post, requireBuild } from './helpers.js';

const API = 'apps/api/dist/main.js';
const MiB = 1024 * 1024;

/**
 * `POST /api/knowledge-base/preview-chunks` (spec 4.7) on the built api role, with real tokens,
 * Redis and PostgreSQL. The split rules themselves are tested in packages/chunking.
 */
describe('chunk preview', () => {
  const keys = keyFiles();
  const redisPrefix = uniquePrefix('preview');
  let schema: TestSchema;
  let api: ServiceProcess;
  let token: string;

  /** `auth: null` sends no Authorization header. */
  const preview = (body: unknown, auth: string | null = `Bearer ${token}`) =>
    post(`${api.url}/api/knowledge-base/preview-chunks`, body, auth ? { authorization: auth } : {});
  const previewOk = async (body: unknown) => {
    const res = await json(await preview(body));
    expect(res.status).toBe(200);
    return PreviewChunksResponse.parse(res.body);
  };
  const fieldPaths = (body: unknown) =>
    (body as { error: { details: { path: string }[] } }).error.details.map((d) => d.path);

  beforeAll(async () => {
    requireBuild(API);
    schema = await createTestSchema('preview');
    api = await startServiceProcess({
      entry: API,
      env: {
        REDIS_URL: testRedisUrl(),
        DATABASE_URL: testDatabaseUrl(),
        DATABASE_SCHEMA: schema.schema,
        REDIS_KEY_PREFIX: redisPrefix,
        JWT_PUBLIC_KEY_FILE: keys.publicKeyFile,
        JWT_PRIVATE_KEY_FILE: keys.privateKeyFile,
      },
    });
    const signing = await importKeys({ publicKey: keys.publicKey, privateKey: keys.privateKey });
    token = (await signAccessToken(signing, 'alice')).accessToken;
  });
  afterAll(async () => {
    await api?.stop('SIGKILL');
    await schema?.drop();
  });

  it('answers { chunks: [{ index, content, length }], total } with the spec defaults', async () => {
    const short = 'First paragraph.\n\nSecond paragraph.';
    const whole = await json(await preview({ content: short }));
    // Exactly the spec fields: no offsets or other internals leak into the answer.
    expect(whole).toEqual({
      status: 200,
      body: { chunks: [{ index: 0, content: short, length: 35 }], total: 1 },
    });

    const paragraph = (n: number) => `Paragraph ${String(n).padStart(2, '0')} ${'x'.repeat(286)}.`;
    const text = Array.from({ length: 10 }, (_, n) => paragraph(n)).join('\n\n');
    const { chunks, total } = await previewOk({ content: text });
    expect(total).toBe(4);
    expect(chunks.map((c) => c.length)).toEqual([904, 904, 904, 300]);
    expect(chunks[1]).toEqual({
      index: 1,
      content: [3, 4, 5].map(paragraph).join('\n\n'),
      length: 904,
    });
  });

  it('honours chunk_size, chunk_overlap and delimiter, counting characters', async () => {
    expect(
      await previewOk({ content: 'a;b;c', chunk_size: 2, chunk_overlap: 0, delimiter: ';' }),
    ).toEqual({
      chunks: [
        { index: 0, content: 'a', length: 1 },
        { index: 1, content: 'b', length: 1 },
        { index: 2, content: 'c', length: 1 },
      ],
      total: 3,
    });
    const words = await previewOk({
      content: 'one two three four five six',
      chunk_size: 10,
      chunk_overlap: 4,
    });
    expect(words.chunks.map((c) => c.content)).toEqual([
      'one two',
      'two three',
      'four five',
      'five six',
    ]);
    const emoji = await previewOk({ content: '😀👍🏽😀', chunk_size: 2, chunk_overlap: 0 });
    // 👍🏽 is two code points (thumb + skin tone), four UTF-16 units.
    expect(emoji.chunks.map((c) => [c.content, c.length])).toEqual([
      ['😀👍', 2],
      ['🏽😀', 2],
    ]);
  });

  it('answers an empty list for empty or blank content', async () => {
    expect(await previewOk({ content: '' })).toEqual({ chunks: [], total: 0 });
    expect(await previewOk({ content: ' \n\n\t ' })).toEqual({ chunks: [], total: 0 });
  });

  it('rejects impossible sizes with 400 and field errors', async () => {
    const cases: Array<[unknown, string]> = [
      [{ content: 'x', chunk_size: 100, chunk_overlap: 100 }, 'chunk_overlap'],
      [{ content: 'x', chunk_size: 100, chunk_overlap: 250 }, 'chunk_overlap'],
      [{ content: 'x', chunk_size: 150 }, 'chunk_overlap'],
      [{ content: 'x', chunk_size: 0, chunk_overlap: 0 }, 'chunk_size'],
      [{ content: 'x', chunk_size: -10, chunk_overlap: 0 }, 'chunk_size'],
      [{ content: 'x', chunk_size: 10.5, chunk_overlap: 0 }, 'chunk_size'],
      [{ content: 'x', chunk_size: '100' }, 'chunk_size'],
      [{ content: 'x', chunk_overlap: -1 }, 'chunk_overlap'],
      [{ content: 'x', delimiter: '' }, 'delimiter'],
      [{ chunk_size: 100 }, 'content'],
      [{ content: 42 }, 'content'],
    ];
    for (const [body, path] of cases) {
      const res = await json(await preview(body));
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body).toMatchObject({ error: { code: 'invalid_request' } });
      expect(fieldPaths(res.body), JSON.stringify(body)).toContain(path);
    }
  });

  it('requires a valid access token, checked before the body is read', async () => {
    const body = { content: 'hello' };
    const bad = Object.values(await badTokens(keys)).map((t) => `Bearer ${t}`);
    for (const auth of [null, 'Basic abc', 'Bearer', ...bad]) {
      const res = await preview(body, auth);
      expect(res.status, String(auth)).toBe(401);
      expect(await res.json()).toMatchObject({ error: { code: 'unauthorized' } });
    }
    // An anonymous 11 MiB body is refused as unauthenticated, not read and parsed first.
    const huge = await preview({ content: 'x'.repeat(11 * MiB) }, null);
    expect(huge.status).toBe(401);
    expect(api.stdout.join('\n')).not.toContain(token);
  });

  it('accepts bodies up to 10 MiB and answers 413 above', async () => {
    // Above the service-wide 1 MiB limit, below the route's own.
    const big = 'Lorem ipsum dolor sit amet. '.repeat(Math.floor((9.5 * MiB) / 28));
    const { chunks, total } = await previewOk({ content: big });
    expect(total).toBe(chunks.length);
    expect(total).toBeGreaterThan(12_000);
    expect(chunks.every((c, i) => c.index === i && c.length <= 1000)).toBe(true);

    const tooBig = await json(await preview({ content: 'x'.repeat(10 * MiB) }));
    expect(tooBig).toMatchObject({ status: 413, body: { error: { code: 'payload_too_large' } } });
  });

  it('answers 413 rather than more than 20,000 chunks', async () => {
    const atLimit = await previewOk({
      content: 'a'.repeat(20_000),
      chunk_size: 1,
      chunk_overlap: 0,
    });
    expect(atLimit.total).toBe(20_000);
    const over = await json(
      await preview({ content: 'a'.repeat(20_001), chunk_size: 1, chunk_overlap: 0 }),
    );
    expect(over).toMatchObject({
      status: 413,
      body: { error: { code: 'payload_too_large', details: { max_chunks: 20_000 } } },
    });
    // Overlap repeats text: 2 MiB at size 100,000 / overlap 99,000 is only about 2,000 chunks,
    // but 200 million characters of JSON.
    const repeated = await json(
      await preview({ content: 'b'.repeat(2 * MiB), chunk_size: 100_000, chunk_overlap: 99_000 }),
    );
    expect(repeated).toMatchObject({
      status: 413,
      body: { error: { code: 'payload_too_large', details: { max_total_length: 20 * MiB } } },
    });
    expect((repeated.body as { error: { message: string } }).error.message).toContain('characters');
  });

  it('stores nothing: no database row and no Redis key appears', async () => {
    const snapshot = async () => {
      const client = new pg.Client({ connectionString: testDatabaseUrl() });
      await client.connect();
      const redis = new Redis(testRedisUrl());
      try {
        const tables = await client.query<{ table_name: string }>(
          `SELECT table_name FROM information_schema.tables
            WHERE table_schema = $1 AND table_type = 'BASE TABLE' ORDER BY table_name`,
          [schema.schema],
        );
        const rows: Record<string, number> = {};
        for (const { table_name } of tables.rows) {
          const counted = await client.query<{ n: string }>(
            `SELECT count(*) AS n FROM "${schema.schema}"."${table_name}"`,
          );
          rows[table_name] = Number(counted.rows[0]!.n);
        }
        const keys = (await redis.keys(`${redisPrefix}*`)).sort();
        return { rows, keys };
      } finally {
        await client.end();
        redis.disconnect();
      }
    };
    const before = await snapshot();
    expect(Object.keys(before.rows).length).toBeGreaterThan(0);
    await previewOk({
      content: 'Some text.\n\nTo preview, not to keep.',
      chunk_size: 12,
      chunk_overlap: 0,
    });
    expect(await snapshot()).toEqual(before);
  });
});
