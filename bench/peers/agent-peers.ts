/**
 * The peers of `agent-stream.ts`, each behind the same minimal `node:http` wrapper: a process
 * (`BENCH_ROLE=<peer>-server`) whose `POST /invoke` streams one answer from the peer's own
 * streaming API and writes each text delta as an SSE `message_chunk` event.
 *
 * With `tool: true` in the body the peer's agent gets one trivial local function tool, defined
 * with the peer's own tool API: `write_todos`, the same name, arguments and result text as the
 * service's built-in planning tool (`packages/agent-runtime/src/planning-tools.ts`), so the
 * scripted model sends and receives the same bytes whichever server is in front of it.
 */
import { createServer } from 'node:http';
import { requirePeer } from './peers.js';

export const API_KEY = 'sk-bench';

/** The tool every variant offers in the one-tool-call runs. */
export const TOOL_NAME = 'write_todos';
export const TOOL_DESCRIPTION = 'Create or update your todo list for the current task.';

export interface Todo {
  content: string;
  status: 'pending' | 'in_progress' | 'completed';
}

/** The tool's result, as the service's `write_todos` words it. */
export const todoResult = (todos: readonly Todo[]) =>
  `Todo list updated:\n${todos.map((t, i) => `${i + 1}. [${t.status}] ${t.content}`).join('\n')}`;

// ---------------------------------------------------------------- the few peer members used

interface ZodModule {
  z: {
    object(shape: Record<string, unknown>): unknown;
    array(item: unknown): unknown;
    string(): unknown;
    enum(values: readonly string[]): unknown;
  };
}

interface AgentsModule {
  Agent: new (options: {
    name: string;
    instructions: string;
    model: unknown;
    tools?: unknown[];
  }) => unknown;
  OpenAIChatCompletionsModel: new (client: unknown, model: string) => unknown;
  tool(options: {
    name: string;
    description: string;
    parameters: unknown;
    execute(args: { todos: Todo[] }): string;
  }): unknown;
  run(
    agent: unknown,
    input: string,
    options: { stream: true },
  ): Promise<
    AsyncIterable<{ type: string; data?: { type: string; delta?: string } }> & {
      completed: Promise<void>;
    }
  >;
  setTracingDisabled(disabled: boolean): void;
}
interface OpenAIModule {
  OpenAI: new (options: Record<string, unknown>) => unknown;
}

interface MastraModule {
  Agent: new (options: {
    id: string;
    name: string;
    instructions: string;
    model: { id: string; url: string; apiKey: string };
    tools?: Record<string, unknown>;
  }) => { stream(input: string): Promise<{ textStream: AsyncIterable<string> }> };
}
interface MastraToolsModule {
  createTool(options: {
    id: string;
    description: string;
    inputSchema: unknown;
    execute(input: { todos: Todo[] }): Promise<string>;
  }): unknown;
}
interface LangGraphPrebuiltModule {
  createReactAgent(options: { llm: unknown; tools: unknown[] }): {
    stream(
      input: { messages: Array<{ role: string; content: string }> },
      options: { streamMode: 'messages' },
    ): Promise<AsyncIterable<[{ content: unknown }, { langgraph_node?: string }]>>;
  };
}
interface LangChainOpenAIModule {
  ChatOpenAI: new (options: Record<string, unknown>) => unknown;
}
interface LangChainToolsModule {
  tool(
    func: (input: { todos: Todo[] }) => string,
    fields: { name: string; description: string; schema: unknown },
  ): unknown;
}

/** The tool's arguments as a zod schema (each peer takes zod; all three accept zod 4). */
function todosSchema(): unknown {
  const { z } = requirePeer<ZodModule>('zod');
  return z.object({
    todos: z.array(
      z.object({ content: z.string(), status: z.enum(['pending', 'in_progress', 'completed']) }),
    ),
  });
}

// ---------------------------------------------------------------- the peers' streams

/** Text deltas of one answer of `model` to `message`, from a peer's own streaming API. */
type PeerStream = (message: string, model: string, withTool: boolean) => AsyncIterable<string>;

/** @openai/agents: `run(agent, input, { stream: true })`, the chat-completions model. */
function openaiAgentsStream(baseURL: string): PeerStream {
  const agents = requirePeer<AgentsModule>('@openai/agents');
  const { OpenAI: PeerOpenAI } = requirePeer<OpenAIModule>('openai');
  agents.setTracingDisabled(true);
  const client = new PeerOpenAI({ baseURL, apiKey: API_KEY, maxRetries: 0 });
  const todos = agents.tool({
    name: TOOL_NAME,
    description: TOOL_DESCRIPTION,
    parameters: todosSchema(),
    execute: (args) => todoResult(args.todos),
  });
  return async function* (message, model, withTool) {
    const agent = new agents.Agent({
      name: 'bench',
      instructions: 'You are a helpful assistant.',
      model: new agents.OpenAIChatCompletionsModel(client, model),
      ...(withTool ? { tools: [todos] } : {}),
    });
    const stream = await agents.run(agent, message, { stream: true });
    for await (const event of stream)
      if (event.type === 'raw_model_stream_event' && event.data?.type === 'output_text_delta')
        yield event.data.delta ?? '';
    await stream.completed;
  };
}

/**
 * Mastra: an `Agent` whose model is Mastra's OpenAI-compatible `{ id, url, apiKey }` config.
 * Its default `stopWhen` (5 steps) lets it answer after a tool call.
 */
function mastraStream(baseURL: string): PeerStream {
  const { Agent } = requirePeer<MastraModule>('@mastra/core/agent');
  const { createTool } = requirePeer<MastraToolsModule>('@mastra/core/tools');
  const todos = createTool({
    id: TOOL_NAME,
    description: TOOL_DESCRIPTION,
    inputSchema: todosSchema(),
    execute: async (input) => todoResult(input.todos),
  });
  return async function* (message, model, withTool) {
    const agent = new Agent({
      id: 'bench',
      name: 'bench',
      instructions: 'You are a helpful assistant.',
      model: { id: `scripted/${model}`, url: baseURL, apiKey: API_KEY },
      ...(withTool ? { tools: { [TOOL_NAME]: todos } } : {}),
    });
    const output = await agent.stream(message);
    yield* output.textStream;
  };
}

/** LangGraph: the prebuilt ReAct agent over `ChatOpenAI`, tokens with `streamMode: 'messages'`. */
function langGraphStream(baseURL: string): PeerStream {
  const { createReactAgent } = requirePeer<LangGraphPrebuiltModule>(
    '@langchain/langgraph/prebuilt',
  );
  const { ChatOpenAI } = requirePeer<LangChainOpenAIModule>('@langchain/openai');
  const { tool } = requirePeer<LangChainToolsModule>('@langchain/core/tools');
  const todos = tool((input) => todoResult(input.todos), {
    name: TOOL_NAME,
    description: TOOL_DESCRIPTION,
    schema: todosSchema(),
  });
  return async function* (message, model, withTool) {
    const llm = new ChatOpenAI({
      model,
      apiKey: API_KEY,
      configuration: { baseURL },
      maxRetries: 0,
      streaming: true,
    });
    const agent = createReactAgent({ llm, tools: withTool ? [todos] : [] });
    const stream = await agent.stream(
      { messages: [{ role: 'user', content: message }] },
      { streamMode: 'messages' },
    );
    // The last chunks of a turn carry usage and the finish reason with empty content, and so
    // do the tool-call turn's; the `tools` node's messages are the tool's result.
    for await (const [chunk, meta] of stream)
      if (meta.langgraph_node === 'agent' && typeof chunk.content === 'string' && chunk.content)
        yield chunk.content;
  };
}

export const PEER_STREAMS: Record<string, (baseURL: string) => PeerStream> = {
  '@openai/agents': openaiAgentsStream,
  mastra: mastraStream,
  langgraph: langGraphStream,
};

/**
 * The minimal HTTP wrapper every peer runs behind: `POST /invoke` `{ message, model, tool? }`
 * answers SSE, one `message_chunk` event per text delta as the peer yields it, then `done` (or
 * `error`).
 */
export function runPeerServer(peer: string): void {
  const stream = PEER_STREAMS[peer]!(process.env.MODEL_BASE_URL!);
  const server = createServer((request, response) => {
    if (request.url === '/healthz') return void response.end('ok');
    let body = '';
    request.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
    request.on('end', () => {
      void (async () => {
        const { message, model, tool } = JSON.parse(body) as {
          message: string;
          model: string;
          tool?: boolean;
        };
        response.writeHead(200, {
          'content-type': 'text/event-stream',
          'cache-control': 'no-cache',
        });
        for await (const delta of stream(message, model, tool === true))
          response.write(`data: ${JSON.stringify({ type: 'message_chunk', content: delta })}\n\n`);
        response.end(`data: ${JSON.stringify({ type: 'done' })}\n\n`);
      })().catch((error: unknown) => {
        response.end(`data: ${JSON.stringify({ type: 'error', message: String(error) })}\n\n`);
      });
    });
  });
  server.listen(Number(process.env.PORT), '127.0.0.1');
}
