import { performance } from 'node:perf_hooks';
import type { NodeToolMetrics } from '@agent-backend/metrics';
import { NodeCallError, type NodeToolCaller } from './node-tool-caller.js';

/**
 * `caller` (and its `close`) with each tool call counted and timed by outcome: `ok`, `tool_error` (the node
 * answered with `isError`), or the {@link NodeCallError} code. Tool names are not labels: nodes
 * name their own tools.
 */
export function instrumentNodeToolCaller(
  caller: NodeToolCaller,
  metrics: NodeToolMetrics,
): NodeToolCaller {
  return {
    listTools: (userId) => caller.listTools(userId),
    close: async () => caller.close?.(),
    async callTool(call) {
      const started = performance.now();
      try {
        const result = await caller.callTool(call);
        metrics.call(result.success ? 'ok' : 'tool_error', (performance.now() - started) / 1000);
        return result;
      } catch (error) {
        const outcome = error instanceof NodeCallError ? error.code : 'tool_failed';
        metrics.call(outcome, (performance.now() - started) / 1000);
        throw error;
      }
    },
  };
}
