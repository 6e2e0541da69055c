import { describe, expect, it } from 'vitest';
import { GatewayCommand, toolCallCommandOf } from './gateway-commands.js';

const valid = {
  kind: 'tool_call',
  userId: 'u1',
  nodeId: 'pc',
  request: {
    jsonrpc: '2.0',
    id: 'c1',
    method: 'tools/call',
    params: { name: 'echo', arguments: { i: 1 } },
  },
  timeoutMs: 5_000,
};

/** `valid` with `path` (dot-separated) set to `value`, or deleted when `value` is undefined. */
function variant(path: string, value: unknown): Record<string, unknown> {
  const copy = structuredClone(valid) as Record<string, unknown>;
  const keys = path.split('.');
  let at = copy;
  for (const key of keys.slice(0, -1)) at = at[key] as Record<string, unknown>;
  if (value === undefined) delete at[keys.at(-1)!];
  else at[keys.at(-1)!] = value;
  return copy;
}

/**
 * The hand check of a tool call command returns what the schema returns for every command it
 * takes, and takes none the schema refuses (those go to the schema, which refuses them as
 * before).
 */
describe('toolCallCommandOf', () => {
  const cases: Array<[string, unknown]> = [
    ['a valid command', valid],
    ['notHereOk', variant('notHereOk', true)],
    ['notHereOk false', variant('notHereOk', false)],
    ['a session id', variant('request.params.session_id', 's1')],
    ['a numeric session id', variant('request.params.session_id', 7)],
    ['no arguments', variant('request.params.arguments', undefined)],
    ['array arguments', variant('request.params.arguments', [1])],
    ['null arguments', variant('request.params.arguments', null)],
    ['unknown keys', { ...variant('request.extra', 1), extra: true }],
    ['unknown params keys', variant('request.params.extra', 1)],
    ['an empty user id', variant('userId', '')],
    ['a numeric node id', variant('nodeId', 3)],
    ['an empty tool name', variant('request.params.name', '')],
    ['another method', variant('request.method', 'tools/list')],
    ['another JSON-RPC version', variant('request.jsonrpc', '1.0')],
    ['a numeric id', variant('request.id', 1)],
    ['no params', variant('request.params', undefined)],
    ['a fractional timeout', variant('timeoutMs', 1.5)],
    ['a zero timeout', variant('timeoutMs', 0)],
    ['a string timeout', variant('timeoutMs', '5')],
    ['another kind', variant('kind', 'deliver')],
    ['null', null],
    ['an array', [valid]],
  ];
  it.each(cases)('%s: the same as the schema', (_, raw) => {
    const parsed = GatewayCommand.safeParse(raw);
    const fast = toolCallCommandOf(raw);
    if (fast) {
      expect(parsed.success).toBe(true);
      expect(fast).toEqual(parsed.data);
    } else if (parsed.success) {
      // Left to the schema: only commands that are no tool call.
      expect(parsed.data.kind).not.toBe('tool_call');
    }
  });

  it('takes the valid ones itself', () => {
    for (const raw of [
      valid,
      variant('notHereOk', true),
      variant('request.params.session_id', 's'),
    ])
      expect(toolCallCommandOf(raw)).toBeDefined();
  });
});
