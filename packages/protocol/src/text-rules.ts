/**
 * What text the service accepts, decided once for every route: every string of a JSON body
 * (keys included), of the path parameters and of the query must be well-formed Unicode without
 * NUL characters, and a body nests at most {@link MAX_JSON_DEPTH} levels. PostgreSQL refuses
 * `\u0000` in text and unpaired surrogates in JSON, and deep free-form values (a notification
 * config 10,000 levels deep) overflowed the stack in later recursive code; checked here, no route
 * can reach the database or its schema with either. HTTP refuses with 400 `invalid_request` and a
 * field error per offending value, the gateway a WebSocket frame with an `invalid_message` error
 * (docs/architecture.md, "Text rules and size limits").
 */
export const MAX_JSON_DEPTH = 64;

/** A high surrogate not followed by a low one, or a low one not preceded by a high one. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** Field errors reported at most, so a hostile body cannot make a huge answer. */
const MAX_PROBLEMS = 20;

export interface TextProblem {
  readonly path: string;
  readonly message: string;
}

/** The problem with one string, if any. */
export function textProblem(text: string): string | undefined {
  if (text.includes('\u0000')) return 'must not contain NUL characters';
  if (LONE_SURROGATE.test(text)) {
    return 'must be valid Unicode text (an unpaired surrogate was found)';
  }
  return undefined;
}

/**
 * Every string of `value` checked with {@link textProblem}, and its nesting bounded, without
 * recursion (a value of any depth is walked in constant stack).
 */
export function textProblems(value: unknown, root = ''): TextProblem[] {
  const problems: TextProblem[] = [];
  const stack: Array<{ value: unknown; path: string; depth: number }> = [
    { value, path: root, depth: 0 },
  ];
  const join = (path: string, key: string | number) =>
    typeof key === 'number' ? `${path}.${key}`.replace(/^\./, '') : path ? `${path}.${key}` : key;
  while (stack.length > 0 && problems.length < MAX_PROBLEMS) {
    const item = stack.pop()!;
    if (typeof item.value === 'string') {
      const message = textProblem(item.value);
      if (message) problems.push({ path: item.path || '(value)', message });
      continue;
    }
    if (item.value === null || typeof item.value !== 'object') continue;
    if (item.depth >= MAX_JSON_DEPTH) {
      problems.push({
        path: item.path || '(value)',
        message: `nests deeper than ${MAX_JSON_DEPTH} levels`,
      });
      continue;
    }
    if (Array.isArray(item.value)) {
      item.value.forEach((entry, index) =>
        stack.push({ value: entry, path: join(item.path, index), depth: item.depth + 1 }),
      );
      continue;
    }
    for (const [key, entry] of Object.entries(item.value)) {
      const keyMessage = textProblem(key);
      if (keyMessage) {
        problems.push({ path: join(item.path, '(key)'), message: keyMessage });
        continue;
      }
      stack.push({ value: entry, path: join(item.path, key), depth: item.depth + 1 });
    }
  }
  return problems.reverse();
}

/** A JSON escape that may spell a NUL or a surrogate: `\u0000`, `\uD800` to `\uDFFF`. */
const SUSPECT_ESCAPE = /\\u(?:0000|[dD][89a-fA-F])/;

/** Longer texts are walked with {@link textProblems} whatever they hold. */
const SHORT_JSON = 4_096;

/**
 * Whether the value `JSON.parse` made of `text` can break the text rules, judged from the text
 * alone: false for a short text with no escape that may spell a NUL or a surrogate and fewer
 * opening brackets than {@link MAX_JSON_DEPTH}, whose value then needs no walk. `text` must come
 * from decoding UTF-8 (`Buffer#toString`), which never yields an unpaired surrogate; a raw NUL
 * is not valid JSON. True means "walk it": most such texts are fine.
 */
export function jsonTextNeedsTextCheck(text: string): boolean {
  if (text.length > SHORT_JSON || SUSPECT_ESCAPE.test(text)) return true;
  let open = 0;
  for (const bracket of ['{', '[']) {
    for (let at = text.indexOf(bracket); at !== -1; at = text.indexOf(bracket, at + 1)) {
      if (++open >= MAX_JSON_DEPTH) return true;
    }
  }
  return false;
}
