import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  startScriptedModel,
  textReply,
  toolCallsReply,
  type ScriptedModel,
} from '@agent-backend/testing';
import { invoke } from './agent-helpers.js';
import { startCluster, type Cluster } from './cluster.js';
import { ofType, openSocket, type TestSocket } from './ws-client.js';

/**
 * The agent calls a tool on the user's device: the invoke runs on one API replica, the device
 * is connected to a gateway replica, the call crosses Redis both ways (spec 4.3 rule 3).
 */
const IMAGE = '/9j/4AAQSkZJRg==';
const SHOT = 'iVBORw0KGgoAAAANSUhEUg==';

describe('agent with device tools', () => {
  let cluster: Cluster;
  let model: ScriptedModel;
  let device: TestSocket;
  const calls: Array<Record<string, unknown>> = [];

  beforeAll(async () => {
    model = await startScriptedModel();
    cluster = await startCluster({
      gateways: 2,
      apis: 2,
      env: { MCP_ALLOW_PRIVATE_NETWORKS: 'true' },
    });
    const token = await cluster.token('nora');
    device = await openSocket(
      cluster.wsUrl(1, '/ws/desktop', { client_id: 'desktop_nora', node_id: 'laptop', token }),
    );
    device.ws.on('message', (data) => {
      const frame = JSON.parse(data.toString()) as {
        id?: string;
        method?: string;
        params?: Record<string, unknown>;
      };
      if (frame.method !== 'tools/call') return;
      calls.push(frame.params!);
      const result =
        frame.params!.name === 'take_screenshot'
          ? {
              content: [
                { type: 'text', text: 'captured' },
                { type: 'image', data: IMAGE, mimeType: 'image/jpeg' },
              ],
              _screenshot: SHOT,
            }
          : { content: [{ type: 'text', text: '14:05 Europe/Paris' }], isError: false };
      device.send({ jsonrpc: '2.0', id: frame.id, result });
    });
    device.send({
      type: 'register',
      node_id: 'laptop',
      node_type: 'desktop',
      available_tools: ['delete_file'],
      tools: [
        { name: 'take_screenshot', description: 'Capture the screen', writes: false },
        {
          name: 'read_clock',
          description: 'Read the device clock',
          inputSchema: {
            type: 'object',
            properties: { zone: { type: 'string' } },
            required: ['zone'],
          },
          writes: false,
        },
      ],
    });
    await device.next(ofType('registered'));
  });
  afterAll(async () => {
    device?.ws.terminate();
    await cluster?.stop();
    await model?.close();
  });

  it('offers the device tools with their schemas, calls them across replicas, and feeds the result back', async () => {
    model.script('dev', [
      toolCallsReply([{ id: 'call_clock', name: 'read_clock', args: { zone: 'Europe/Paris' } }]),
      textReply('It is 14:05.'),
    ]);
    const stream = await invoke(cluster.apis[1]!.url, await cluster.token('nora'), {
      message: 'What time is it on my laptop?',
      llm_config: { baseUrl: model.baseUrl, apiKey: 'sk-dev', modelName: 'dev' },
      mode: 'ask',
    });
    const events = (await stream.ended).map((e) => e.data);
    expect(events.find((e) => e.type === 'tool_call')).toMatchObject({
      tool_name: 'read_clock',
      tool_args: { zone: 'Europe/Paris' },
    });
    expect(events.find((e) => e.type === 'tool_result')).toMatchObject({
      tool_name: 'read_clock',
      result: expect.stringContaining('14:05'),
    });
    expect(events.at(-1)).toMatchObject({ type: 'done' });

    // The device got the call with the run's session id.
    const sessionId = events.find((e) => e.type === 'session')!.session_id;
    expect(calls).toEqual([
      { name: 'read_clock', arguments: { zone: 'Europe/Paris' }, session_id: sessionId },
    ]);

    const [first, second] = model.requests('dev');
    const offered = first!.body.tools!.map((t) => t.function);
    // `ask` mode: the read-only tool is offered with its schema; the write tool is not.
    expect(offered.find((f) => f.name === 'read_clock')).toMatchObject({
      description: expect.stringContaining('Read the device clock'),
      parameters: { type: 'object', required: ['zone'] },
    });
    expect(offered.some((f) => f.name.includes('delete_file'))).toBe(false);
    const toolMessage = second!.body.messages!.find((m) => m.role === 'tool');
    expect(toolMessage).toMatchObject({
      tool_call_id: 'call_clock',
      content: expect.stringContaining('14:05'),
    });
  });

  it('offers write tools in agent mode, and another user never sees this device', async () => {
    model.script('dev2', [textReply('ok')]);
    const mine = await invoke(cluster.apis[0]!.url, await cluster.token('nora'), {
      message: 'hi',
      llm_config: { baseUrl: model.baseUrl, apiKey: 'sk-dev', modelName: 'dev2' },
    });
    await mine.ended;
    const names = model.requests('dev2')[0]!.body.tools!.map((t) => t.function.name);
    expect(names).toEqual(expect.arrayContaining(['read_clock', 'delete_file']));

    model.script('dev3', [textReply('ok')]);
    const other = await invoke(cluster.apis[0]!.url, await cluster.token('otto'), {
      message: 'hi',
      llm_config: { baseUrl: model.baseUrl, apiKey: 'sk-dev', modelName: 'dev3' },
    });
    await other.ended;
    const otherNames = (model.requests('dev3')[0]!.body.tools ?? []).map((t) => t.function.name);
    expect(otherNames.some((n) => n.includes('read_clock') || n.includes('delete_file'))).toBe(
      false,
    );
  });

  it("a run's tools follow a device that connects, registers other tools, and leaves (the listing cached between them)", async () => {
    const token = await cluster.token('rita');
    let n = 0;
    /** The tool names the model was offered by a run on API replica 0, started now. */
    const offered = async () => {
      const name = `rita-${++n}`;
      model.script(name, [textReply('ok')]);
      const stream = await invoke(cluster.apis[0]!.url, token, {
        message: 'hi',
        llm_config: { baseUrl: model.baseUrl, apiKey: 'sk-dev', modelName: name },
      });
      expect((await stream.ended).at(-1)!.data.type).toBe('done');
      return (model.requests(name)[0]!.body.tools ?? []).map((t) => t.function.name);
    };
    const register = async (socket: TestSocket, tools: string[]) => {
      socket.send({
        type: 'register',
        node_id: 'tablet',
        node_type: 'desktop',
        available_tools: tools,
      });
      await socket.next(ofType('registered'));
    };
    // Each run below starts right after the one before it, within the listing's route age:
    // only the gateways' announcements can tell the API replica what changed.
    expect((await offered()).some((name) => name.startsWith('rita_'))).toBe(false);
    const tablet = await openSocket(
      cluster.wsUrl(0, '/ws/desktop', { client_id: 'desktop_rita', node_id: 'tablet', token }),
    );
    await register(tablet, ['rita_alpha']);
    expect(await offered()).toContain('rita_alpha');
    await register(tablet, ['rita_alpha', 'rita_beta']);
    expect(await offered()).toEqual(expect.arrayContaining(['rita_alpha', 'rita_beta']));
    await tablet.close();
    // The gateway removes the node from presence once it saw the socket close.
    const devices = async () =>
      (await (
        await fetch(`${cluster.apis[1]!.url}/node/devices?user_id=rita`, {
          headers: { authorization: `Bearer ${token}` },
        })
      ).json()) as { total: number };
    await vi.waitFor(async () => expect((await devices()).total).toBe(0), {
      timeout: 5_000,
    });
    expect((await offered()).some((name) => name.startsWith('rita_'))).toBe(false);
  });

  it('returns a device screenshot to the client in tool_result, and tells the model about it', async () => {
    model.script('shot', [
      toolCallsReply([{ id: 'call_shot', name: 'take_screenshot', args: {} }]),
      textReply('Done.'),
    ]);
    const stream = await invoke(cluster.apis[0]!.url, await cluster.token('nora'), {
      message: 'Screenshot please',
      llm_config: { baseUrl: model.baseUrl, apiKey: 'sk-dev', modelName: 'shot' },
    });
    const events = (await stream.ended).map((e) => e.data);
    expect(events.find((e) => e.type === 'tool_result')).toMatchObject({
      tool_name: 'take_screenshot',
      result: 'captured\n[2 image(s) returned to the user]',
      images: [
        { data: IMAGE, mimeType: 'image/jpeg' },
        { data: SHOT, mimeType: 'image/png' },
      ],
    });
    const toolMessage = model.requests('shot')[1]!.body.messages!.find((m) => m.role === 'tool');
    expect(toolMessage).toMatchObject({ content: 'captured\n[2 image(s) returned to the user]' });
  });
});
