import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { textReply, toolCallsReply } from '@agent-backend/testing';
import { startToolServer, type ToolServer } from '../packages/mcp-tools/src/testing/tool-server.js';
import { invoke, startAgentCluster, type AgentCluster } from './agent-helpers.js';

const MCP_KEY = 'sk-mcp-agent-5d1c0b9e77';

/**
 * MCP servers as agent tools, end to end: built API replicas, a scripted model, and real MCP
 * servers built with the SDK on loopback (private networks are allowed in this cluster; the
 * refusal without them is covered by packages/mcp-tools, because the scripted model itself
 * lives on loopback and would be refused too).
 */
describe('agent invoke with MCP tool entries', () => {
  let cluster: AgentCluster;
  let files: ToolServer;
  let notes: ToolServer;
  let alice: string;
  let bob: string;
  const llm = (modelName: string) => ({
    baseUrl: cluster.model.baseUrl,
    apiKey: 'sk-llm',
    modelName,
  });
  const mcp = (name: string, server: ToolServer) => ({
    type: 'mcp',
    name,
    base_url: server.url,
    api_key: MCP_KEY,
  });
  const offered = (model: string, index = 0) =>
    (cluster.model.requests(model)[index]?.body.tools ?? []).map((t) => t.function);
  const toolMessages = (model: string, index: number) =>
    (cluster.model.requests(model)[index]?.body.messages ?? []).filter((m) => m.role === 'tool');

  beforeAll(async () => {
    [cluster, files, notes] = await Promise.all([
      startAgentCluster({ AGENT_LLM_MAX_RETRIES: '0' }),
      startToolServer(),
      startToolServer(),
    ]);
    alice = await cluster.token('alice');
    bob = await cluster.token('bob');
  });
  afterAll(async () => {
    await cluster?.stop();
    await Promise.all([files?.close(), notes?.close()]);
  });

  it('offers the tools and returns text and an image to the model and the stream', async () => {
    cluster.model.script('m-picture', [
      toolCallsReply([{ id: 'call_pic', name: 'mcp_files__picture', args: {} }]),
      textReply('A picture.'),
    ]);
    const stream = await invoke(cluster.api[0]!.url, alice, {
      message: 'Draw',
      llm_config: llm('m-picture'),
      tools: [mcp('files', files)],
    });
    const events = await stream.ended;
    expect(events.at(-1)!.data.type).toBe('done');
    const echo = offered('m-picture').find((f) => f.name === 'mcp_files__echo');
    expect(echo).toEqual({
      name: 'mcp_files__echo',
      description: 'Echoes its text (tool "echo" of MCP server "files")',
      parameters: {
        type: 'object',
        properties: { text: { type: 'string' } },
        required: ['text'],
      },
    });
    const result = 'Here is the picture.\n\n[image: image/png, 70 bytes]';
    expect(events.find((e) => e.data.type === 'tool_result')!.data).toEqual({
      type: 'tool_result',
      tool_name: 'mcp_files__picture',
      result,
      tool_call_id: 'call_pic',
      // The image itself travels to the client; the model reads the text announcing it.
      images: [{ data: expect.stringMatching(/^iVBOR/), mimeType: 'image/png' }],
    });
    expect(toolMessages('m-picture', 1)).toEqual([
      { role: 'tool', tool_call_id: 'call_pic', content: result },
    ]);
    expect(files.calls.at(-1)).toMatchObject({ name: 'picture' });
  });

  it('turns a throwing tool, an isError result and an unreachable server into tool errors', async () => {
    cluster.model.script('m-failing', [
      toolCallsReply([
        { id: 'c1', name: 'mcp_files__explode', args: {} },
        { id: 'c2', name: 'mcp_files__refuse', args: {} },
        { id: 'c3', name: 'mcp_gone__unavailable', args: {} },
      ]),
      textReply('Sorry.'),
    ]);
    const stream = await invoke(cluster.api[0]!.url, alice, {
      message: 'Try',
      llm_config: llm('m-failing'),
      tools: [
        mcp('files', files),
        { type: 'mcp', name: 'gone', base_url: 'http://127.0.0.1:9/mcp' },
      ],
    });
    const events = await stream.ended;
    expect(events.at(-1)!.data.type).toBe('done');
    const gone = offered('m-failing').find((f) => f.name === 'mcp_gone__unavailable');
    expect(gone?.description).toContain(
      'The MCP server "gone" is unavailable for this run (unreachable)',
    );
    // The calls of a turn run concurrently: results stream as they complete, in any order, and
    // are stored in the model's order (c1, c2, c3).
    const results = events
      .filter((e) => e.data.type === 'tool_result')
      .map((e) => e.data)
      .sort((a, b) => String(a.tool_call_id).localeCompare(String(b.tool_call_id)));
    expect(results.map((r) => [r.tool_call_id, r.is_error])).toEqual([
      ['c1', true],
      ['c2', true],
      ['c3', true],
    ]);
    expect(results[0]!.result).toContain('the explode tool blew up');
    expect(results[1]!.result).toBe('refused: quota exceeded');
    expect(results[2]!.result).toMatch(
      /^The MCP server "gone" is unavailable for this run \(unreachable\)/,
    );
    expect(toolMessages('m-failing', 1).map((m) => m.content)).toEqual(
      results.map((r) => r.result),
    );
    expect(cluster.logs()).toContain('mcp server unavailable for this run');
  });

  it('gives two servers with the same tool names distinct names, each calling its own server', async () => {
    cluster.model.script('m-two', [
      toolCallsReply([{ id: 'n1', name: 'mcp_notes__echo', args: { text: 'to notes' } }]),
      textReply('ok'),
    ]);
    const before = { files: files.calls.length, notes: notes.calls.length };
    const events = await (
      await invoke(cluster.api[1]!.url, alice, {
        message: 'Two',
        llm_config: llm('m-two'),
        tools: [mcp('files', files), mcp('notes', notes)],
      })
    ).ended;
    expect(events.at(-1)!.data.type).toBe('done');
    const names = offered('m-two').map((f) => f.name);
    expect(names).toContain('mcp_files__echo');
    expect(names).toContain('mcp_notes__echo');
    expect(new Set(names).size).toBe(names.length);
    expect(notes.calls.length).toBe(before.notes + 1);
    expect(notes.calls.at(-1)).toMatchObject({ name: 'echo', args: { text: 'to notes' } });
    expect(files.calls.length).toBe(before.files);
  });

  it('reuses the session of a user across invokes and opens another for another user', async () => {
    const echoTurn = (id: string) => [
      toolCallsReply([{ id, name: 'mcp_notes__echo', args: { text: id } }]),
      textReply('ok'),
    ];
    cluster.model.script('m-reuse', [...echoTurn('a1'), ...echoTurn('a2'), ...echoTurn('b1')]);
    const fresh = await startToolServer();
    const run = async (token: string) => {
      const events = await (
        await invoke(cluster.api[0]!.url, token, {
          message: 'Echo',
          llm_config: llm('m-reuse'),
          tools: [mcp('notes', fresh)],
        })
      ).ended;
      expect(events.at(-1)!.data.type).toBe('done');
    };
    try {
      await run(alice);
      await run(alice);
      await run(bob);
      const calls = fresh.calls;
      expect(calls.map((c) => c.args)).toEqual([{ text: 'a1' }, { text: 'a2' }, { text: 'b1' }]);
      expect(calls[0]!.session).toBe(calls[1]!.session);
      expect(calls[2]!.session).not.toBe(calls[0]!.session);
      expect(fresh.sessions).toEqual([calls[0]!.session, calls[2]!.session]);
      expect(cluster.logs()).not.toContain(MCP_KEY);
    } finally {
      await fresh.close();
    }
  });
});
