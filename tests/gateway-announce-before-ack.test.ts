import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  startScriptedModel,
  startTcpProxy,
  testRedisUrl,
  textReply,
  type ScriptedModel,
  type TcpProxy,
} from '@agent-backend/testing';
import { invoke } from './agent-helpers.js';
import { startCluster, type Cluster } from './cluster.js';
import { ofType, openSocket, type TestSocket } from './ws-client.js';

/**
 * An API replica keeps a user's node list between runs and forgets it when a gateway announces a
 * change of one of the user's nodes. The gateway tells the node `registered` (and acknowledges a
 * heartbeat that changed its status) only once that announcement went out, so a run started right
 * after sees the change. Here the gateway's Redis traffic passes a proxy that holds it for a
 * while whenever an announcement passes: a gateway that answered before its announcement was
 * out would let the run use the list cached before the change.
 */
describe('a node change is announced before the node is answered', () => {
  const HOLD_MS = 400;
  let model: ScriptedModel;
  let proxy: TcpProxy;
  let cluster: Cluster;
  let tablet: TestSocket | undefined;
  let runs = 0;
  /** Whether the next announcement the gateway sends is held (once). */
  let holdNext = false;

  beforeAll(async () => {
    model = await startScriptedModel();
    const redis = new URL(testRedisUrl());
    proxy = await startTcpProxy(
      { host: redis.hostname, port: Number(redis.port || 6379) },
      {
        observe: () => ({
          up(chunk) {
            // The bus's channels carry the key prefix; the name of this one is enough here.
            if (!holdNext || !chunk.includes('presence:changes')) return;
            holdNext = false;
            proxy.setMode('stall');
            setTimeout(() => proxy.setMode('forward'), HOLD_MS).unref();
          },
        }),
      },
    );
    cluster = await startCluster({
      gateways: 0,
      apis: 1,
      env: { MCP_ALLOW_PRIVATE_NETWORKS: 'true' },
    });
    const viaProxy = new URL(testRedisUrl());
    viaProxy.hostname = '127.0.0.1';
    viaProxy.port = String(proxy.port);
    await cluster.startReplica('gateway', 'gateway-1', { REDIS_URL: viaProxy.toString() });
  });
  afterAll(async () => {
    tablet?.ws.terminate();
    await cluster?.stop();
    await proxy?.close();
    await model?.close();
  });

  /** The tool names the model was offered by a run started now. */
  const offered = async (): Promise<string[]> => {
    const name = `mia-${++runs}`;
    model.script(name, [textReply('ok')]);
    const stream = await invoke(cluster.apis[0]!.url, await cluster.token('mia'), {
      message: 'hi',
      llm_config: { baseUrl: model.baseUrl, apiKey: 'sk-dev', modelName: name },
    });
    expect((await stream.ended).at(-1)!.data.type).toBe('done');
    return (model.requests(name)[0]!.body.tools ?? []).map((t) => t.function.name);
  };
  /** Lets the announcements sent so far reach the API replica, before it caches a list. */
  const settled = async () => {
    while (proxy.mode !== 'forward') await new Promise((resolve) => setTimeout(resolve, 20));
    await new Promise((resolve) => setTimeout(resolve, 100));
  };
  const register = async (tools: string[]) => {
    tablet!.send({
      type: 'register',
      node_id: 'tablet',
      node_type: 'desktop',
      available_tools: tools,
    });
    expect(await tablet!.next(ofType('registered'))).toMatchObject({ success: true });
  };

  it('a run right after `registered` is offered the tools just registered', async () => {
    // Each run below starts right after the step before it, within the list's cache age.
    tablet = await openSocket(
      cluster.wsUrl(0, '/ws/desktop', {
        client_id: 'desktop_mia',
        node_id: 'tablet',
        token: await cluster.token('mia'),
      }),
    );
    await register(['mia_alpha']);
    await settled();
    // Cached now: the list the next run starts with unless an announcement dropped it.
    expect(await offered()).toContain('mia_alpha');
    holdNext = true;
    await register(['mia_alpha', 'mia_beta']);
    expect(await offered()).toEqual(expect.arrayContaining(['mia_alpha', 'mia_beta']));
  });

  it('a run right after the `heartbeat_ack` of a node gone offline is not offered its tools', async () => {
    await settled();
    expect(await offered()).toContain('mia_beta');
    holdNext = true;
    tablet!.send({ type: 'heartbeat', status: 'offline', current_tasks: 0 });
    await tablet!.next(ofType('heartbeat_ack'));
    expect((await offered()).some((name) => name.startsWith('mia_'))).toBe(false);
  });
});
