import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCluster, type Cluster } from './cluster.js';
import { json, post } from './helpers.js';
import { eventually, ofType, openSocket, type TestSocket } from './ws-client.js';

const PNG = 'iVBORw0KGgoAAAANSUhEUg==';

/**
 * Two gateway and two API replicas sharing Redis: calls, listings and workflows cross replicas;
 * a gateway killed with SIGKILL leaves no ghosts and fails its in-flight calls.
 */
describe('gateway cluster', () => {
  let cluster: Cluster;
  const sockets: TestSocket[] = [];
  const connect = async (gateway: number, path: string, query: Record<string, string>) => {
    const socket = await openSocket(cluster.wsUrl(gateway, path, query));
    sockets.push(socket);
    return socket;
  };
  /** A node that answers every tools/call with `answer(params)` (or never, for `undefined`). */
  const serveTools = (node: TestSocket, answer: (call: Record<string, unknown>) => unknown) => {
    node.ws.on('message', (data) => {
      const frame = JSON.parse(data.toString()) as Record<string, unknown>;
      if (frame.method !== 'tools/call') return;
      const reply = answer(frame);
      if (reply !== undefined) node.send({ jsonrpc: '2.0', id: frame.id, ...(reply as object) });
    });
  };
  const callTool = async (api: number, userId: string, body: Record<string, unknown>) =>
    json(
      await post(`${cluster.apis[api]!.url}/node/tools/call`, body, {
        authorization: `Bearer ${await cluster.token(userId)}`,
      }),
    );
  const listNodes = async (api: number, userId: string, asUser = userId) => {
    const res = await fetch(`${cluster.apis[api]!.url}/node/devices?user_id=${userId}`, {
      headers: { authorization: `Bearer ${await cluster.token(asUser)}` },
    });
    return json(res);
  };

  beforeAll(async () => {
    cluster = await startCluster({
      gateways: 2,
      apis: 2,
      env: {
        GATEWAY_REPLICA_TTL_MS: '1500',
        WORKFLOW_TIMEOUT_MS: '1500',
        GATEWAY_PING_INTERVAL_MS: '1000',
      },
    });
  });
  afterAll(async () => {
    for (const socket of sockets) socket.ws.terminate();
    await cluster?.stop();
  });

  it('a tool call from either API replica reaches a node on either gateway and returns its answer', async () => {
    const token = await cluster.token('ann');
    const desktop = await connect(1, '/ws/desktop', {
      client_id: 'desktop_ann',
      node_id: 'pc',
      token,
    });
    const extension = await connect(0, '/ws/extension', { client_id: 'user_ann', token });
    desktop.send({
      type: 'register',
      node_id: 'pc',
      node_type: 'desktop',
      available_tools: ['screenshot', 'fail', 'soft_fail'],
    });
    extension.send({
      type: 'register',
      node_id: 'ext_ann',
      node_type: 'extension',
      available_tools: ['legacy'],
    });
    await Promise.all([desktop.next(ofType('registered')), extension.next(ofType('registered'))]);
    serveTools(desktop, (call) => {
      const params = call.params as {
        name: string;
        arguments: Record<string, unknown>;
        session_id?: string;
      };
      if (params.name === 'fail') return { error: { code: -32603, message: 'disk full' } };
      if (params.name === 'soft_fail')
        return { result: { content: [{ type: 'text', text: 'nope' }], isError: true } };
      return {
        result: {
          content: [
            {
              type: 'text',
              text: `shot of ${String(params.arguments.screen)} in ${params.session_id}`,
            },
            { type: 'image', data: PNG, mimeType: 'image/png' },
          ],
          isError: false,
          _screenshot: PNG,
        },
      };
    });
    // The deprecated mcp_response is still matched, by request_id.
    extension.ws.on('message', (data) => {
      const frame = JSON.parse(data.toString()) as { method?: string; id?: string };
      if (frame.method === 'tools/call') {
        extension.send({
          type: 'mcp_response',
          request_id: frame.id,
          result: { content: [{ type: 'text', text: 'old style' }] },
          error: null,
        });
      }
    });

    for (const api of [0, 1]) {
      const shot = await callTool(api, 'ann', {
        node_type: 'desktop',
        tool_name: 'screenshot',
        arguments: { screen: 2 },
        session_id: 's-1',
      });
      expect(shot).toEqual({
        status: 200,
        body: {
          success: true,
          text: 'shot of 2 in s-1',
          images: [{ data: PNG, mimeType: 'image/png' }],
          screenshot: PNG,
        },
      });
    }
    expect(
      await callTool(1, 'ann', { node_type: 'desktop', node_id: 'pc', tool_name: 'fail' }),
    ).toEqual({
      status: 200,
      body: { success: false, text: '', images: [], error: { code: -32603, message: 'disk full' } },
    });
    expect(await callTool(0, 'ann', { node_type: 'desktop', tool_name: 'soft_fail' })).toEqual({
      status: 200,
      body: { success: false, text: 'nope', images: [] },
    });
    expect(await callTool(1, 'ann', { node_type: 'extension', tool_name: 'legacy' })).toEqual({
      status: 200,
      body: { success: true, text: 'old style', images: [] },
    });
  });

  it('tells an unknown node, a timeout and a node that drops mid-call apart', async () => {
    const token = await cluster.token('ben');
    expect(await callTool(0, 'ben', { node_type: 'desktop', tool_name: 'x' })).toMatchObject({
      status: 404,
      body: { error: { code: 'node_not_found' } },
    });
    const silent = await connect(0, '/ws/desktop', {
      client_id: 'desktop_ben',
      node_id: 'silent',
      token,
    });
    const dropping = await connect(1, '/ws/desktop', {
      client_id: 'desktop_ben',
      node_id: 'dropping',
      token,
    });
    for (const n of [silent, dropping]) n.send({ type: 'ping' });
    await Promise.all([silent.next(ofType('pong')), dropping.next(ofType('pong'))]);
    expect(
      await callTool(0, 'ben', { node_type: 'desktop', node_id: 'nope', tool_name: 'x' }),
    ).toMatchObject({
      status: 404,
      body: { error: { code: 'node_not_found' } },
    });
    expect(
      await callTool(1, 'ben', {
        node_type: 'desktop',
        node_id: 'silent',
        tool_name: 'x',
        timeout_ms: 500,
      }),
    ).toMatchObject({
      status: 504,
      body: { error: { code: 'node_timeout' } },
    });
    serveTools(dropping, () => {
      setTimeout(() => dropping.ws.close(), 100);
      return undefined;
    });
    // A 30 s deadline, but the node is gone after 100 ms: the caller learns it at once.
    expect(
      await callTool(0, 'ben', {
        node_type: 'desktop',
        node_id: 'dropping',
        tool_name: 'x',
        timeout_ms: 30_000,
      }),
    ).toMatchObject({
      status: 502,
      body: { error: { code: 'node_disconnected' } },
    });
  });

  it('lists the same nodes from either API replica and keeps users apart', async () => {
    const token = await cluster.token('cid');
    const a = await connect(0, '/ws/desktop', { client_id: 'desktop_cid', node_id: 'a', token });
    const b = await connect(1, '/ws/extension', { client_id: 'user_cid', node_id: 'b', token });
    for (const n of [a, b]) n.send({ type: 'ping' });
    await Promise.all([a.next(ofType('pong')), b.next(ofType('pong'))]);
    const one = await listNodes(0, 'cid');
    const two = await listNodes(1, 'cid');
    expect(one.status).toBe(200);
    expect(two).toEqual(one);
    expect((one.body as { total: number }).total).toBe(2);

    // Another user can neither list nor call cid's nodes.
    expect(await listNodes(0, 'cid', 'eve')).toMatchObject({
      status: 403,
      body: { error: { code: 'forbidden' } },
    });
    expect((await fetch(`${cluster.apis[1]!.url}/node/devices?user_id=cid`)).status).toBe(401);
    expect(
      await callTool(1, 'eve', { node_type: 'desktop', node_id: 'a', tool_name: 'x' }),
    ).toMatchObject({ status: 404 });
    expect(await listNodes(0, 'cid', 'cid').then((r) => r.status)).toBe(200);
    const bad = await fetch(`${cluster.apis[0]!.url}/node/devices?user_id=cid&online_only=yes`, {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(bad.status).toBe(400);
  });

  it('relays workflows between a web client and the extension across replicas, to every web client', async () => {
    const token = await cluster.token('dee');
    const webA = await connect(0, '/ws/web', { user_id: 'dee', token });
    const webB = await connect(1, '/ws/web', { user_id: 'dee', token });
    for (const w of [webA, webB]) w.send({ type: 'ping' });
    await Promise.all([webA.next(ofType('pong')), webB.next(ofType('pong'))]);

    webA.send({ type: 'get_workflows' });
    expect(await webA.next(ofType('workflows_list'))).toEqual({
      type: 'workflows_list',
      success: false,
      error: 'Extension not connected',
    });
    webA.send({ type: 'execute_workflow', workflow_id: 'wf-1' });
    // Completions go to every web client of the user, this failure included.
    for (const web of [webA, webB]) {
      expect(await web.next(ofType('workflow_complete'))).toMatchObject({
        success: false,
        error: 'Extension not connected',
      });
    }

    const ext = await connect(1, '/ws/extension', { client_id: 'user_dee', token });
    ext.send({ type: 'ping' });
    await ext.next(ofType('pong'));

    webA.send({ type: 'get_workflows' });
    expect(await ext.next(ofType('get_workflows'))).toEqual({ type: 'get_workflows' });
    ext.send({
      type: 'workflows_list',
      success: true,
      workflows: [{ id: 'wf-1', name: 'Fill form' }],
    });
    for (const web of [webA, webB]) {
      expect(await web.next(ofType('workflows_list'))).toEqual({
        type: 'workflows_list',
        success: true,
        workflows: [{ id: 'wf-1', name: 'Fill form' }],
      });
    }

    webA.send({ type: 'execute_workflow', workflow_id: 'wf-1', variables: { name: 'Dee' } });
    const started = await webA.next(ofType('workflow_started'));
    const relayed = await ext.next(ofType('execute_workflow'));
    expect(relayed).toEqual({
      type: 'execute_workflow',
      workflow_id: 'wf-1',
      variables: { name: 'Dee' },
      task_id: started.task_id,
    });
    ext.send({
      type: 'task_complete',
      task_id: started.task_id,
      result: { rows: 3 },
      output: 'done',
    });
    for (const web of [webA, webB]) {
      expect(await web.next(ofType('workflow_complete'))).toEqual({
        type: 'workflow_complete',
        task_id: started.task_id,
        success: true,
        result: { rows: 3 },
        output: 'done',
      });
    }

    // A run the extension never finishes ends with a documented failure, once, everywhere.
    webB.send({ type: 'execute_workflow', workflow_id: 'wf-slow' });
    const slow = await webB.next(ofType('workflow_started'));
    for (const web of [webA, webB]) {
      expect(await web.next(ofType('workflow_complete'), 5_000)).toEqual({
        type: 'workflow_complete',
        task_id: slow.task_id,
        success: false,
        result: {},
        output: '',
        error: 'Workflow timed out after 1.5 s',
      });
    }
  });

  it("refuses another user's task_complete and leaves the owner's workflow run to its owner", async () => {
    const ownerToken = await cluster.token('hal');
    const web = await connect(0, '/ws/web', { user_id: 'hal', token: ownerToken });
    const ext = await connect(0, '/ws/extension', { client_id: 'user_hal', token: ownerToken });
    ext.send({ type: 'ping' });
    await ext.next(ofType('pong'));
    const intruder = await connect(1, '/ws/extension', {
      client_id: 'user_gus',
      token: await cluster.token('gus'),
    });
    intruder.send({ type: 'ping' });
    await intruder.next(ofType('pong'));

    web.send({ type: 'execute_workflow', workflow_id: 'wf-owned' });
    const started = await web.next(ofType('workflow_started'));
    await ext.next(ofType('execute_workflow'));
    intruder.send({
      type: 'task_complete',
      task_id: started.task_id,
      success: true,
      result: { forged: true },
      output: 'forged',
    });
    expect(await intruder.next(ofType('error'))).toEqual({
      type: 'error',
      code: 'task_forbidden',
      message: `task_complete: task ${String(started.task_id)} is a workflow run of another user`,
    });
    // The owner's run is untouched: its record and timeout are still there, so it ends the way
    // its own extension (here: silence) ends it, not with the intruder's result.
    expect(await web.next(ofType('workflow_complete'), 5_000)).toEqual({
      type: 'workflow_complete',
      task_id: started.task_id,
      success: false,
      result: {},
      output: '',
      error: 'Workflow timed out after 1.5 s',
    });
  });

  it('tells web clients that watch nodes when a node of their user connects or drops, across replicas', async () => {
    const token = await cluster.token('eve');
    const watcher = await connect(1, '/ws/web', { user_id: 'eve', token });
    const other = await connect(1, '/ws/web', { user_id: 'eve', token });
    const stranger = await connect(1, '/ws/web', {
      user_id: 'fay',
      token: await cluster.token('fay'),
    });
    for (const web of [watcher, stranger]) web.send({ type: 'watch_nodes' });
    // watch_nodes has no reply: a ping behind it is answered once it was handled.
    for (const web of [watcher, other, stranger]) web.send({ type: 'ping' });
    await Promise.all([watcher, other, stranger].map((web) => web.next(ofType('pong'))));

    const desktop = await connect(0, '/ws/desktop', {
      client_id: 'desktop_eve',
      node_id: 'laptop',
      token,
    });
    desktop.send({
      type: 'register',
      node_id: 'laptop',
      node_type: 'desktop',
      available_tools: [],
    });
    await desktop.next(ofType('registered'));
    const status = (value: string) => ({
      type: 'node_status',
      node_type: 'desktop',
      node_id: 'laptop',
      status: value,
    });
    expect(await watcher.next(ofType('node_status'))).toEqual(status('online'));
    desktop.ws.close();
    expect(
      await watcher.next((frame) => frame.type === 'node_status' && frame.status === 'offline'),
    ).toEqual(status('offline'));
    // Delivered by the same replica as the watcher's: had they been sent, they would be here.
    expect(other.received.filter(ofType('node_status'))).toEqual([]);
    expect(stranger.received.filter(ofType('node_status'))).toEqual([]);
  });

  it('a gateway killed with SIGKILL loses its nodes within the replica TTL and fails its calls', async () => {
    const token = await cluster.token('fay');
    const doomed = await connect(1, '/ws/desktop', {
      client_id: 'desktop_fay',
      node_id: 'doomed',
      token,
    });
    const survivor = await connect(0, '/ws/desktop', {
      client_id: 'desktop_fay',
      node_id: 'survivor',
      token,
    });
    for (const n of [doomed, survivor]) n.send({ type: 'ping' });
    await Promise.all([doomed.next(ofType('pong')), survivor.next(ofType('pong'))]);
    serveTools(doomed, () => undefined);

    const inflight = callTool(0, 'fay', {
      node_type: 'desktop',
      node_id: 'doomed',
      tool_name: 'x',
      timeout_ms: 30_000,
    });
    await doomed.next((f) => f.method === 'tools/call');
    await cluster.gateways[1]!.stop('SIGKILL');

    expect(await inflight).toMatchObject({
      status: 502,
      body: { error: { code: 'node_disconnected' } },
    });
    await eventually(async () => {
      const { body } = await listNodes(1, 'fay');
      const ids = (body as { nodes: Array<{ node_id: string }> }).nodes.map((n) => n.node_id);
      return ids.length === 1 && ids[0] === 'survivor';
      // Generous for a loaded machine; the documented bound is the replica TTL (1.5 s here).
    }, 10_000);
    expect(
      await callTool(1, 'fay', { node_type: 'desktop', node_id: 'doomed', tool_name: 'x' }),
    ).toMatchObject({ status: 404 });
  });
});
