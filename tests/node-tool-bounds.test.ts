import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startScriptedModel, textReply, type ScriptedModel } from '@agent-backend/testing';
import { invoke } from './agent-helpers.js';
import { startCluster, type Cluster } from './cluster.js';
import { ofType, openSocket, type TestSocket } from './ws-client.js';

/**
 * Bounds on what nodes offer: tools per node registration (the gateway refuses
 * more), a user's nodes offered to a run, and the tools of one run. Real WebSockets to a
 * gateway, a real run on an API replica, a scripted model that records what it was offered.
 */
describe('node tool bounds', () => {
  let cluster: Cluster;
  let model: ScriptedModel;
  const sockets: TestSocket[] = [];

  const toolNames = (node: string, n: number) =>
    Array.from({ length: n }, (_, i) => `${node}_t${i}`);
  const connect = async (user: string, nodeId: string) => {
    const socket = await openSocket(
      cluster.wsUrl(0, '/ws/desktop', {
        client_id: `desktop_${user}`,
        node_id: nodeId,
        token: await cluster.token(user),
      }),
    );
    sockets.push(socket);
    return socket;
  };
  const register = (socket: TestSocket, nodeId: string, tools: string[]) => {
    socket.send({
      type: 'register',
      node_id: nodeId,
      node_type: 'desktop',
      available_tools: tools,
    });
    return socket.next(ofType('registered'));
  };
  const devices = async (user: string) => {
    const res = await fetch(`${cluster.apis[0]!.url}/node/devices?user_id=${user}`, {
      headers: { authorization: `Bearer ${await cluster.token(user)}` },
    });
    return (await res.json()) as {
      nodes: Array<{ node_id: string; available_tools: string[] }>;
    };
  };

  beforeAll(async () => {
    model = await startScriptedModel();
    cluster = await startCluster({
      gateways: 1,
      apis: 1,
      // Defaults for tools per node (128) and per run (128); two nodes per run, to show that
      // bound without connecting 33 nodes.
      env: { MCP_ALLOW_PRIVATE_NETWORKS: 'true', AGENT_MAX_TOOL_NODES: '2' },
    });
  });
  afterAll(async () => {
    for (const socket of sockets) socket.ws.terminate();
    await cluster?.stop();
    await model?.close();
  });

  it('refuses a registration of more than 128 tools with too_many_tools, keeping the connection and its earlier tools', async () => {
    const socket = await connect('rita', 'big');
    expect(await register(socket, 'big', ['small_tool'])).toMatchObject({ success: true });

    const refused = register(socket, 'big', toolNames('big', 129));
    expect(await socket.next(ofType('error'))).toEqual({
      type: 'error',
      code: 'too_many_tools',
      message: 'register offers 129 tools; a node may register at most 128',
    });
    expect(await refused).toEqual({ type: 'registered', node_id: 'big', success: false });
    // Descriptors count too, once per name.
    socket.send({
      type: 'register',
      node_id: 'big',
      node_type: 'desktop',
      available_tools: toolNames('big', 100),
      tools: toolNames('extra', 29).map((name) => ({ name })),
    });
    expect(await socket.next(ofType('error'))).toMatchObject({ code: 'too_many_tools' });
    expect(await socket.next(ofType('registered'))).toMatchObject({ success: false });

    // Still connected, with what it registered before.
    expect((await devices('rita')).nodes).toMatchObject([
      { node_id: 'big', available_tools: ['small_tool'] },
    ]);
    const fits = await register(socket, 'big', toolNames('big', 128));
    expect(fits).toMatchObject({ success: true });
    expect((await devices('rita')).nodes[0]!.available_tools).toHaveLength(128);
  });

  it("offers one run at most 128 tools from the user's first two nodes, and says what it left out", async () => {
    // Three nodes of 100 tools, connected one after the other: n1 is the longest connected.
    for (const node of ['n1', 'n2', 'n3']) {
      const socket = await connect('sam', node);
      expect(await register(socket, node, toolNames(node, 100))).toMatchObject({ success: true });
    }
    model.script('bounded', [textReply('ok')]);
    const stream = await invoke(cluster.apis[0]!.url, await cluster.token('sam'), {
      message: 'hello',
      llm_config: { baseUrl: model.baseUrl, apiKey: 'sk-test', modelName: 'bounded' },
      mode: 'agent',
    });
    const events = (await stream.ended).map((e) => e.data);
    expect(events.at(-1)).toMatchObject({ type: 'done' });

    const offered = model.requests('bounded')[0]!.body.tools!.map((t) => t.function.name);
    // The run holds 128 tools; the model is offered those its mode allows (no propose_plan).
    expect(offered.length).toBeGreaterThan(120);
    expect(offered.length).toBeLessThanOrEqual(128);
    expect(new Set(offered).size).toBe(offered.length);
    expect(offered).toEqual(expect.arrayContaining(['write_todos', ...toolNames('n1', 100)]));
    // The third node is past the two-node bound; the second fills what the tool bound leaves.
    expect(offered.some((name) => name.startsWith('n3_'))).toBe(false);
    const fromN2 = offered.filter((name) => name.startsWith('n2_'));
    expect(fromN2.length).toBeGreaterThan(0);
    expect(fromN2).toEqual(toolNames('n2', fromN2.length));

    const notice = events.find((e) => e.type === 'notice' && e.code === 'tools_limited');
    expect(notice).toBeDefined();
    expect(notice!.message).toContain('1 more of your devices');
    expect(notice!.message).toContain(`${100 - fromN2.length} tools were left out`);
  });
});
