/**
 * Golden fixtures: every wire message as a client or server sends it, and what the schema must
 * make of it. A change that breaks one of these breaks a deployed client; update a fixture only
 * together with a note on what changes for clients.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { fieldErrors } from './errors.js';
import * as protocol from './index.js';

const fixturesDir = fileURLToPath(new URL('../fixtures/', import.meta.url));

const ValidFixture = z.strictObject({
  schema: z.string(),
  input: z.unknown(),
  parsed: z.unknown(),
});
const InvalidFixture = z.strictObject({
  schema: z.string(),
  input: z.unknown(),
  errorPaths: z.array(z.string()).min(1),
});

/**
 * Pure value sets: they appear inside the messages that have fixtures, and a fixture of their
 * own would only repeat the spec's list. Everything else that is a schema needs a golden file.
 */
const EXEMPT_FROM_FIXTURES = new Set([
  'NodeType',
  'NodeStatus',
  'McpTransportType',
  'HitlDecision',
  'ChatRole',
  'ConversationMode',
  'SandboxMode',
  'TaskSyncAction',
  'OAuthProvider',
  'ScheduledTaskStatus',
  'ScheduledTaskRunStatus',
  'RunStatus',
  'AuditAction',
]);

const schemas = new Map(
  Object.entries(protocol as Record<string, unknown>).filter(
    (entry): entry is [string, z.ZodType] => {
      return entry[1] instanceof z.ZodType;
    },
  ),
);

const files = readdirSync(fixturesDir, { recursive: true, encoding: 'utf8' })
  .filter((file) => file.endsWith('.json'))
  .sort();
function load(file: string) {
  const content: unknown = JSON.parse(readFileSync(join(fixturesDir, file), 'utf8'));
  return file.startsWith('invalid/')
    ? { file, invalid: true as const, fixture: InvalidFixture.parse(content) }
    : { file, invalid: false as const, fixture: ValidFixture.parse(content) };
}
const valid = files.map(load).flatMap((f) => (f.invalid ? [] : [[f.file, f.fixture] as const]));
const invalid = files.map(load).flatMap((f) => (f.invalid ? [[f.file, f.fixture] as const] : []));

function schemaNamed(name: string): z.ZodType {
  const schema = schemas.get(name);
  if (!schema) throw new Error(`no exported schema named ${name}`);
  return schema;
}

describe('valid fixtures', () => {
  it.each(valid)('%s', (_file, fixture) => {
    const schema = schemaNamed(fixture.schema);
    expect(schema.parse(fixture.input)).toStrictEqual(fixture.parsed);
    expect(schema.parse(fixture.parsed)).toStrictEqual(fixture.parsed);
  });
});

describe('invalid fixtures', () => {
  it.each(invalid)('%s', (_file, fixture) => {
    const result = schemaNamed(fixture.schema).safeParse(fixture.input);
    expect(result.success).toBe(false);
    if (result.success) return;
    expect(fieldErrors(result.error).map((e) => e.path)).toStrictEqual(fixture.errorPaths);
  });
});

describe('fixture coverage', () => {
  const named = new Set([...valid, ...invalid].map(([, fixture]) => fixture.schema));
  const validNamed = new Set(valid.map(([, fixture]) => fixture.schema));

  it('has valid and invalid fixtures', () => {
    expect(valid.length).toBeGreaterThan(0);
    expect(invalid.length).toBeGreaterThan(0);
  });

  it('names only exported schemas', () => {
    expect([...named].filter((name) => !schemas.has(name))).toStrictEqual([]);
  });

  it('has a valid fixture for every exported schema that is not a plain enum', () => {
    const missing = [...schemas.keys()].filter(
      (name) => !EXEMPT_FROM_FIXTURES.has(name) && !validNamed.has(name),
    );
    expect(missing).toStrictEqual([]);
  });

  it('exempts only enums, and only ones that exist', () => {
    for (const name of EXEMPT_FROM_FIXTURES) {
      expect(schemas.get(name), name).toBeInstanceOf(z.ZodEnum);
    }
  });
});
