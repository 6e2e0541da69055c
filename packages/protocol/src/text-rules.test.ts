import { describe, expect, it } from 'vitest';
import { jsonTextNeedsTextCheck, MAX_JSON_DEPTH, textProblems } from './text-rules.js';

/**
 * The shortcut before the text rules' walk: a JSON text it lets through (false) has no problem
 * the walk would find.
 */
describe('jsonTextNeedsTextCheck', () => {
  const nested = (depth: number) => '['.repeat(depth) + ']'.repeat(depth);
  it.each([
    ['a NUL escape', '{"a":"x\\u0000y"}'],
    ['a lone high surrogate', '{"a":"\\ud800"}'],
    ['a lone low surrogate, upper case', '["\\uDC00"]'],
    ['a NUL in a key', '{"\\u0000":1}'],
    ['too deep', nested(MAX_JSON_DEPTH + 1)],
  ])('walks %s, which breaks the rules', (_, text) => {
    expect(jsonTextNeedsTextCheck(text)).toBe(true);
    expect(textProblems(JSON.parse(text))).not.toEqual([]);
  });

  it.each([
    ['a heartbeat', '{"type":"heartbeat","status":"online","current_tasks":0}'],
    [
      'a tool result',
      '{"jsonrpc":"2.0","id":"c1","result":{"content":[{"type":"text","text":"ok \\u00e9 \\n"}]}}',
    ],
    ['a paired surrogate as text', '{"a":"\u{1F600}"}'],
    ['nesting within the bound', nested(MAX_JSON_DEPTH - 1)],
  ])('lets %s through', (_, text) => {
    expect(jsonTextNeedsTextCheck(text)).toBe(false);
    expect(textProblems(JSON.parse(text))).toEqual([]);
  });

  it('walks a long text and a paired surrogate escape whatever they hold', () => {
    expect(jsonTextNeedsTextCheck(JSON.stringify({ a: 'x'.repeat(5_000) }))).toBe(true);
    expect(jsonTextNeedsTextCheck('{"a":"\\ud83d\\ude00"}')).toBe(true);
  });
});
