import {
  ListNodesQuery,
  ListNodesResponse,
  NodeToolCallRequest,
  NodeToolCallResponse,
  type NodeInfo,
} from '@agent-backend/protocol';
import { listNodeRecords, NodeCallError, type NodeToolCaller } from '@agent-backend/node-rpc';
import { AppError, type ErrorCode } from '@agent-backend/http-server';
import type { ServiceContext } from '@agent-backend/runtime';

/**
 * `GET /node/devices` (spec 4.8), answered by any API replica from shared presence. Beyond the
 * spec: it requires an access token whose `sub` is the `user_id` asked for (403 otherwise), so
 * nobody can enumerate another user's devices.
 */
export function registerNodeRoutes(
  { app, engines, requireUser, limits }: ServiceContext,
  nodeTools: NodeToolCaller,
): void {
  app.get(
    '/node/devices',
    {
      query: ListNodesQuery,
      preHandler: requireUser,
      doc: {
        tag: 'nodes',
        summary: "List the user's nodes",
        description: "`user_id` must be the access token's user (403 otherwise).",
        responses: { 200: { description: 'The nodes.', json: ListNodesResponse } },
        errors: ['forbidden'],
      },
    },
    async (request) => {
      const { query } = request;
      if (query.user_id !== request.userId) {
        throw new AppError('forbidden', 'the access token does not belong to this user_id');
      }
      const nodes: NodeInfo[] = [];
      for (const { record } of await listNodeRecords(engines.presence, query.user_id)) {
        if (query.node_type && record.node_type !== query.node_type) continue;
        if (query.online_only && record.status !== 'online') continue;
        const { tools: _tools, ...node } = record;
        nodes.push(node);
      }
      return { nodes, total: nodes.length } satisfies ListNodesResponse;
    },
  );

  /**
   * `POST /node/tools/call` (beyond the spec): one tool call on one of the caller's nodes. The
   * node's own failures are results (200, `success: false`); not reaching the node is an error:
   * 404 `node_not_found`, 502 `node_disconnected` (dropped mid-call), 504 `node_timeout`.
   */
  app.post(
    '/node/tools/call',
    {
      body: NodeToolCallRequest,
      preHandler: requireUser,
      limit: limits.rate('node_tool_calls'),
      doc: {
        tag: 'nodes',
        summary: "Call a tool on one of the caller's nodes",
        description:
          "The node's own failures are 200 with `success: false`; not reaching the node is an " +
          'error: 404 `node_not_found`, 502 `node_disconnected` (dropped mid-call), 504 ' +
          '`node_timeout`.',
        responses: {
          200: { description: 'The tool ran (or failed on the node).', json: NodeToolCallResponse },
        },
        errors: ['node_not_found', 'node_disconnected', 'node_timeout'],
      },
    },
    async (request) => {
      const body = request.body;
      try {
        const result = await nodeTools.callTool({
          userId: request.userId,
          nodeType: body.node_type,
          nodeId: body.node_id,
          toolName: body.tool_name,
          arguments: body.arguments,
          sessionId: body.session_id,
          timeoutMs: body.timeout_ms,
        });
        return { ...result } satisfies NodeToolCallResponse;
      } catch (error) {
        if (!(error instanceof NodeCallError)) throw error;
        if (error.code === 'tool_failed') {
          const rpc = { code: error.rpcCode ?? -32603, message: error.message };
          return {
            success: false,
            text: '',
            images: [],
            error: rpc,
          } satisfies NodeToolCallResponse;
        }
        throw new AppError(CALL_ERRORS[error.code], error.message);
      }
    },
  );
}

const CALL_ERRORS: Record<Exclude<NodeCallError['code'], 'tool_failed'>, ErrorCode> = {
  node_not_found: 'node_not_found',
  node_disconnected: 'node_disconnected',
  timeout: 'node_timeout',
  aborted: 'unavailable',
};
