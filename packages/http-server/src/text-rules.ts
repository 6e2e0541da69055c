import {
  MAX_JSON_DEPTH,
  textProblem,
  textProblems,
  type TextProblem,
} from '@agent-backend/protocol';
import { AppError } from './errors.js';

/*
 * The text rules themselves (`textProblem`, `textProblems`, `MAX_JSON_DEPTH`) live in
 * `@agent-backend/protocol`, so the gateway applies the same ones to WebSocket frames; here they
 * become HTTP answers (docs/architecture.md, "Text rules and size limits").
 */
export { MAX_JSON_DEPTH, textProblem, textProblems, type TextProblem };

/** Throws 400 `invalid_request` listing the problems of `value`, if any. */
export function assertText(value: unknown, what: 'body' | 'path' | 'query'): void {
  refuseText(textProblems(value), what);
}

/** Throws 400 `invalid_request` listing `problems`, when there are any. */
export function refuseText(
  problems: readonly TextProblem[],
  what: 'body' | 'path' | 'query',
): void {
  if (problems.length > 0) {
    throw new AppError('invalid_request', `invalid request ${what}`, [...problems]);
  }
}
