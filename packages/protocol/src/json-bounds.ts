import type { z } from 'zod';

/** How large and how deep a free-form JSON value may be. */
export interface JsonBounds {
  /** Most characters of its JSON text (strings counted by length, escapes not counted). */
  readonly maxChars: number;
  /** Most levels of objects and arrays, the value itself being level 1. @default 32 */
  readonly maxDepth?: number;
}

/**
 * Measures a parsed JSON value against `bounds` without recursion (a 10,000-level value costs no
 * stack) and stops as soon as it is over: the first bound broken, or undefined when within both.
 */
export function exceedsJsonBounds(
  value: unknown,
  { maxChars, maxDepth = 32 }: JsonBounds,
): 'size' | 'depth' | undefined {
  let chars = 0;
  const stack: Array<{ value: unknown; depth: number }> = [{ value, depth: 1 }];
  while (stack.length > 0) {
    const item = stack.pop()!;
    const v = item.value;
    if (typeof v === 'string') chars += v.length + 2;
    else if (typeof v === 'number' || typeof v === 'boolean' || typeof v === 'bigint')
      chars += String(v).length;
    else if (v === null || v === undefined) chars += 4;
    else if (typeof v === 'object') {
      if (item.depth > maxDepth) return 'depth';
      if (Array.isArray(v)) {
        chars += 2 + Math.max(0, v.length - 1);
        for (const element of v) stack.push({ value: element, depth: item.depth + 1 });
      } else {
        const entries = Object.entries(v);
        chars += 2 + Math.max(0, entries.length - 1);
        for (const [key, element] of entries) {
          chars += key.length + 3;
          stack.push({ value: element, depth: item.depth + 1 });
        }
      }
    }
    if (chars > maxChars) return 'size';
  }
  return undefined;
}

/** `1 MiB`, `16 KiB`: a limit as the error message names it. */
function describeChars(chars: number): string {
  if (chars % (1024 * 1024) === 0) return `${chars / (1024 * 1024)} MiB`;
  if (chars % 1024 === 0) return `${chars / 1024} KiB`;
  return `${chars} characters`;
}

/**
 * `schema` with its JSON size and depth bounded: a free-form value (a record of unknowns, a loose
 * object) that breaks a bound fails validation with a field error naming the limit, e.g.
 * `must be at most 16 KiB as JSON` or `nests deeper than 32 levels`.
 */
export function boundedJson<T extends z.ZodType>(schema: T, bounds: JsonBounds): T {
  return schema.superRefine((value, ctx) => {
    const broken = exceedsJsonBounds(value, bounds);
    if (broken === 'size') {
      ctx.addIssue({
        code: 'custom',
        message: `must be at most ${describeChars(bounds.maxChars)} as JSON`,
      });
    } else if (broken === 'depth') {
      ctx.addIssue({
        code: 'custom',
        message: `nests deeper than ${bounds.maxDepth ?? 32} levels`,
      });
    }
  }) as unknown as T;
}

/** Free-form values sent by clients over WebSocket (workflows, tool schemas, error data). */
export const WS_JSON_BOUNDS: JsonBounds = { maxChars: 1024 * 1024, maxDepth: 64 };
