import { closeRedis, createRedis } from '@agent-backend/redis';
import { createRedisPresence } from '@agent-backend/presence';
import { listNodeRecords, toolsOf } from '@agent-backend/node-rpc';
import type { NodeInfo } from '@agent-backend/protocol';
import { testRedisUrl } from '@agent-backend/testing';
import {
  describeClientContract,
  type GatewayHarness,
  type HarnessToolOutcome,
} from '../packages/node-client/src/client.contract.js';
import { startCluster } from './cluster.js';
import { request } from 'node:http';

/** One HTTP exchange on a fresh connection (no keep-alive socket left behind for the handle checks). */
function httpJson(
  url: string,
  options: { method?: string; body?: unknown; headers?: Record<string, string> } = {},
): Promise<{ status: number; body: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        method: options.method ?? 'GET',
        agent: false,
        headers: {
          ...options.headers,
          ...(options.body ? { 'content-type': 'application/json' } : {}),
        },
      },
      (res) => {
        let raw = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (raw += chunk));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            body: JSON.parse(raw) as Record<string, unknown>,
          }),
        );
      },
    );
    req.on('error', reject);
    req.end(options.body ? JSON.stringify(options.body) : undefined);
  });
}

/**
 * The client library's contract suite, against the real gateway and API processes (the same
 * suite runs against a protocol double inside packages/node-client).
 */
describeClientContract('the real gateway', async (): Promise<GatewayHarness> => {
  const cluster = await startCluster({
    gateways: 1,
    apis: 1,
    env: { GATEWAY_PING_INTERVAL_MS: '1000' },
  });
  const redis = createRedis(testRedisUrl(), { name: 'client-contract' });
  const presence = createRedisPresence({ redis, prefix: cluster.prefix });
  const api = () => cluster.apis[0]!.url;
  const auth = async (userId: string) => ({
    authorization: `Bearer ${await cluster.token(userId)}`,
  });
  let gatewayPort = cluster.gateways[0]!.port;

  return {
    get url() {
      return `ws://127.0.0.1:${gatewayPort}`;
    },
    token: (userId) => cluster.token(userId),
    invalidToken: () => 'not-a-token',
    async listNodes(userId) {
      const res = await httpJson(`${api()}/node/devices?user_id=${userId}`, {
        headers: await auth(userId),
      });
      return (res.body as { nodes: NodeInfo[] }).nodes;
    },
    async listTools(userId) {
      return (await listNodeRecords(presence, userId)).map(({ record }) => ({
        nodeId: record.node_id,
        nodeType: record.node_type,
        tools: toolsOf(record),
      }));
    },
    async callTool(call): Promise<HarnessToolOutcome> {
      const res = await httpJson(`${api()}/node/tools/call`, {
        method: 'POST',
        headers: await auth(call.userId),
        body: {
          node_type: call.nodeType,
          node_id: call.nodeId,
          tool_name: call.name,
          arguments: call.arguments,
          session_id: call.sessionId,
        },
      });
      const body = res.body;
      if (res.status !== 200) {
        const error = body.error as { code: string; message: string };
        return { ok: false, code: res.status, message: error.message };
      }
      if (body.error) {
        const error = body.error as { code: number; message: string };
        return { ok: false, code: error.code, message: error.message };
      }
      return {
        ok: true,
        result: {
          success: body.success as boolean,
          text: body.text as string,
          images: body.images as Array<{ data: string; mimeType: string }>,
          ...(body.screenshot ? { screenshot: body.screenshot as string } : {}),
        },
      };
    },
    async dropConnections() {
      // A crash and restart of the gateway on the same port: every socket ends without a close frame.
      const old = cluster.gateways.shift()!;
      await old.stop('SIGKILL');
      const restarted = await cluster.startReplica('gateway', `gateway-r${Date.now()}`, {
        PORT: String(gatewayPort),
      });
      gatewayPort = restarted.port;
    },
    async close() {
      await presence.close();
      await closeRedis(redis);
      await cluster.stop();
    },
  };
});
