import { describe, expect, it } from 'vitest';
import { ApprovalDecisionRequest } from './agent-events.js';
import { HitlConfig } from './invoke.js';
import { exceedsJsonBounds } from './json-bounds.js';
import { JsonRpcError } from './json-rpc.js';
import { ScheduledTask } from './scheduled-task.js';
import { RegisterMessage, WorkflowsListMessage } from './ws-messages.js';
import { McpValidateRequest } from './mcp.js';

/** `levels` nested objects, built without recursion. */
function nested(levels: number): Record<string, unknown> {
  const root: Record<string, unknown> = {};
  let at = root;
  for (let i = 1; i < levels; i++) at = (at.a = {}) as Record<string, unknown>;
  return root;
}

const task = { id: 't1', user_id: 'u1', title: 'T', prompt: 'P' };

describe('free-form values in the schemas', () => {
  it('measures JSON size like JSON.stringify, and depth, without recursion', () => {
    const samples: unknown[] = [
      { a: [1, 'two', null, true, { b: -3.5 }], c: {}, d: [] },
      [],
      'x',
      { key: [[['deep']]] },
    ];
    for (const value of samples) {
      const length = JSON.stringify(value).length;
      expect(exceedsJsonBounds(value, { maxChars: length, maxDepth: 10 })).toBeUndefined();
      expect(exceedsJsonBounds(value, { maxChars: length - 1, maxDepth: 10 })).toBe('size');
    }
    expect(exceedsJsonBounds(nested(10_000), { maxChars: 1e9, maxDepth: 64 })).toBe('depth');
    expect(exceedsJsonBounds(nested(64), { maxChars: 1e9, maxDepth: 64 })).toBeUndefined();
    expect(exceedsJsonBounds(nested(65), { maxChars: 1e9, maxDepth: 64 })).toBe('depth');
  });

  it('refuses an oversized or deep notification_config with a field error, keeps a normal one', () => {
    const ok = ScheduledTask.safeParse({
      ...task,
      notification_config: { email: { to: 'a@example.com' }, inApp: true, custom: { x: 1 } },
    });
    expect(ok.success).toBe(true);
    for (const [config, message] of [
      [{ email: { note: 'n'.repeat(17_000) } }, 'must be at most 16 KiB as JSON'],
      [{ lark: nested(10_000) }, 'nests deeper than 16 levels'],
      [{ other: 'o'.repeat(20_000) }, 'must be at most 16 KiB as JSON'],
    ] as const) {
      const result = ScheduledTask.safeParse({ ...task, notification_config: config });
      expect(result.success).toBe(false);
      expect(result.error!.issues).toEqual([
        expect.objectContaining({ path: ['notification_config'], message }),
      ]);
    }
  });

  it('bounds edited tool arguments, HITL tool maps and MCP headers', () => {
    expect(
      ApprovalDecisionRequest.safeParse({ decision: 'edit', tool_args: { q: 'fine' } }).success,
    ).toBe(true);
    const edit = ApprovalDecisionRequest.safeParse({
      decision: 'edit',
      tool_args: { q: 'q'.repeat(300_000) },
    });
    expect(edit.error!.issues).toEqual([
      expect.objectContaining({ path: ['tool_args'], message: 'must be at most 256 KiB as JSON' }),
    ]);
    const deep = ApprovalDecisionRequest.safeParse({ decision: 'edit', tool_args: nested(100) });
    expect(deep.error!.issues[0]!.message).toBe('nests deeper than 64 levels');
    const tools = Object.fromEntries(
      Array.from({ length: 20_000 }, (_, i) => [`tool_${i}`, { requires_interrupt: true }]),
    );
    expect(HitlConfig.safeParse({ tools }).error!.issues[0]).toMatchObject({
      path: ['tools'],
      message: 'must be at most 256 KiB as JSON',
    });
    const headers = McpValidateRequest.safeParse({
      name: 'm',
      base_url: 'https://mcp.example.com/mcp',
      headers: { 'x-big': 'h'.repeat(17_000) },
    });
    expect(headers.error!.issues[0]).toMatchObject({
      path: ['headers'],
      message: 'must be at most 16 KiB as JSON',
    });
  });

  it('bounds free-form values in WebSocket messages', () => {
    const workflows = WorkflowsListMessage.safeParse({
      type: 'workflows_list',
      success: true,
      workflows: [nested(100)],
    });
    expect(workflows.error!.issues[0]).toMatchObject({
      path: ['workflows'],
      message: 'nests deeper than 64 levels',
    });
    const rpc = JsonRpcError.safeParse({
      jsonrpc: '2.0',
      id: '1',
      error: { code: -32000, message: 'm', data: 'd'.repeat(1_100_000) },
    });
    expect(rpc.error!.issues[0]).toMatchObject({
      path: ['error', 'data'],
      message: 'must be at most 1 MiB as JSON',
    });
    const register = (inputSchema: unknown) =>
      RegisterMessage.safeParse({
        type: 'register',
        node_id: 'n1',
        node_type: 'desktop',
        tools: [{ name: 't', inputSchema }],
      });
    expect(register({ type: 'object' }).success).toBe(true);
    expect(register(nested(70)).error!.issues[0]).toMatchObject({
      path: ['tools', 0, 'inputSchema'],
      message: 'nests deeper than 64 levels',
    });
  });
});
