import type { z } from 'zod';
import { fieldErrors } from '@agent-backend/protocol';
import { AppError } from './errors.js';

/**
 * Parses an inbound value with a shared schema. On failure throws a 400 `invalid_request`
 * whose `details` lists every field error (`[{ path, message }]`), before any work starts.
 */
export function parseInput<S extends z.ZodType>(
  schema: S,
  value: unknown,
  what = 'body',
): z.output<S> {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  throw new AppError('invalid_request', `invalid request ${what}`, fieldErrors(result.error));
}
