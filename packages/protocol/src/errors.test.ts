import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { fieldErrors } from './errors.js';

function errorsOf(schema: z.ZodType, input: unknown) {
  const result = schema.safeParse(input);
  if (result.success) throw new Error('expected a parse failure');
  return fieldErrors(result.error);
}

describe('fieldErrors', () => {
  it('joins nested paths with dots and keeps array indexes as numbers', () => {
    const schema = z.object({ tools: z.array(z.object({ base_url: z.string() })) });
    expect(errorsOf(schema, { tools: [{ base_url: 'x' }, {}] })).toStrictEqual([
      { path: 'tools.1.base_url', message: 'Invalid input: expected string, received undefined' },
    ]);
  });

  it('uses an empty path for the root', () => {
    expect(errorsOf(z.object({}), 'text')).toStrictEqual([
      { path: '', message: 'Invalid input: expected object, received string' },
    ]);
  });

  it('lists every problem, in order', () => {
    const schema = z.object({ a: z.string(), b: z.number() });
    expect(errorsOf(schema, {}).map((e) => e.path)).toStrictEqual(['a', 'b']);
  });

  it('keeps custom messages from refinements', () => {
    const schema = z.object({ a: z.string() }).refine(() => false, { path: ['a'], message: 'no' });
    expect(errorsOf(schema, { a: 'x' })).toStrictEqual([{ path: 'a', message: 'no' }]);
  });

  it('reports a failed plain union through its closest branch, under the union path', () => {
    const schema = z.object({
      x: z.union([z.object({ a: z.string() }), z.object({ b: z.number(), c: z.number() })]),
    });
    expect(errorsOf(schema, { x: { a: 1 } })).toStrictEqual([
      { path: 'x.a', message: 'Invalid input: expected string, received number' },
    ]);
  });

  it('reports the discriminator of a discriminated union', () => {
    const schema = z.discriminatedUnion('type', [z.object({ type: z.literal('a') })]);
    expect(errorsOf(schema, { type: 'b' }).map((e) => e.path)).toStrictEqual(['type']);
  });

  it('never echoes the rejected value', () => {
    const schema = z.object({ apiKey: z.string().min(1), n: z.number() });
    const errors = errorsOf(schema, { apiKey: '', n: 'sk-secret-value' });
    expect(JSON.stringify(errors)).not.toContain('sk-secret-value');
  });
});
