import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { DEMO_MODEL_NAME } from '@agent-backend/api';

/**
 * The demo model of `pnpm demo`: an OpenAI-compatible chat-completions server on loopback whose
 * answers are scripted, not generated, so a person can see every part of a run without an API
 * key. The agent reaches it over HTTP like any model server (it is not a branch of the agent
 * loop). From the conversation it is sent, it decides the next step:
 *
 * 1. `plan` mode (`propose_plan` offered): proposes a plan, then answers.
 * 2. writes todos (`write_todos`),
 * 3. calls the simulated desktop node's `screenshot` tool (or `echo`), which the playground holds
 *    for approval,
 * 4. marks the todos done, and
 * 5. streams an answer quoting what the node returned (or that the call was rejected).
 *
 * Two messages skip the todos: `echo <text>` calls the node's `echo` with that text (its
 * arguments can be edited in the approval card), and `remember <fact>` (with Memory on) calls
 * `memory_save` with the fact; each then answers quoting the tool's result.
 */
export interface DemoModel {
  /** The base URL to put in `llm_config.baseUrl` (`http://127.0.0.1:<port>/v1`). */
  readonly baseUrl: string;
  close(): Promise<void>;
}

export interface ChatMessage {
  role: string;
  content?: string | null | Array<{ type: string; text?: string }>;
  tool_calls?: Array<{ id: string; function: { name: string; arguments: string } }>;
  tool_call_id?: string;
}

interface ChatRequest {
  model?: string;
  stream?: boolean;
  messages?: ChatMessage[];
  tools?: Array<{ function?: { name?: string } }>;
}

interface Reply {
  text: string;
  call?: { name: string; args: Record<string, unknown> };
}

/** Pause between streamed words, so the answer visibly streams. */
const WORD_DELAY_MS = 25;
const MAX_BODY = 4 * 1024 * 1024;

export async function startDemoModel(options: { port?: number } = {}): Promise<DemoModel> {
  let calls = 0;
  const server: Server = createServer((req, res) => {
    void handle(req, res).catch(() => {
      if (!res.headersSent) send(res, 500, { error: { message: 'demo model failure' } });
      else res.destroy();
    });
  });

  async function handle(req: IncomingMessage, res: ServerResponse) {
    const path = new URL(req.url ?? '/', 'http://demo').pathname;
    if (req.method === 'GET' && path === '/v1/models') {
      return send(res, 200, {
        object: 'list',
        data: [{ id: DEMO_MODEL_NAME, object: 'model', owned_by: 'agent-backend-demo' }],
      });
    }
    if (req.method !== 'POST' || path !== '/v1/chat/completions') {
      return send(res, 404, { error: { message: `the demo model has no ${path}` } });
    }
    const body = await readJson(req);
    if (!body) return send(res, 400, { error: { message: 'a JSON chat-completions body' } });
    const reply = nextStep(body);
    const id = `chatcmpl-demo-${++calls}`;
    const model = body.model ?? DEMO_MODEL_NAME;
    const callId = `call_demo_${calls}`;
    if (!body.stream) {
      return send(res, 200, {
        id,
        object: 'chat.completion',
        created: Math.floor(Date.now() / 1000),
        model,
        choices: [
          {
            index: 0,
            message: {
              role: 'assistant',
              content: reply.text || null,
              ...(reply.call ? { tool_calls: [toolCall(callId, reply.call)] } : {}),
            },
            finish_reason: reply.call ? 'tool_calls' : 'stop',
          },
        ],
      });
    }
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    const created = Math.floor(Date.now() / 1000);
    const chunk = (delta: Record<string, unknown>, finish: string | null = null) =>
      `data: ${JSON.stringify({
        id,
        object: 'chat.completion.chunk',
        created,
        model,
        choices: [{ index: 0, delta, finish_reason: finish }],
      })}\n\n`;
    res.write(chunk({ role: 'assistant', content: '' }));
    for (const word of reply.text.match(/\S+\s*/g) ?? []) {
      if (res.destroyed) return;
      res.write(chunk({ content: word }));
      await sleep(WORD_DELAY_MS);
    }
    if (reply.call)
      res.write(chunk({ tool_calls: [{ index: 0, ...toolCall(callId, reply.call) }] }));
    res.write(chunk({}, reply.call ? 'tool_calls' : 'stop'));
    res.end('data: [DONE]\n\n');
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', () => resolve());
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** What the scripted assistant does next, from the conversation since the user's last message. */
export function nextStep(body: ChatRequest): Reply {
  const messages = body.messages ?? [];
  const offered = new Set((body.tools ?? []).map((tool) => tool.function?.name ?? ''));
  const lastUser = messages.findLastIndex((m) => m.role === 'user');
  const question = lastUser >= 0 ? text(messages[lastUser]!) : '';
  const since = messages.slice(lastUser + 1);
  const called = since.flatMap((m) => m.tool_calls ?? []);
  const resultOf = (name: string) => {
    const call = called.findLast((c) => c.function.name === name);
    const result = call && since.find((m) => m.role === 'tool' && m.tool_call_id === call.id);
    return result ? text(result) : undefined;
  };
  const nodeTool =
    [...offered].find((name) => name === 'screenshot' || name.startsWith('screenshot__')) ??
    [...offered].find((name) => name === 'echo' || name.startsWith('echo__'));
  const todoCalls = called.filter((c) => c.function.name === 'write_todos').length;

  const directive = /^(echo|remember)\b[\s:]*([\s\S]*)$/i.exec(question.trim());
  const directTool =
    directive?.[1]!.toLowerCase() === 'remember'
      ? offered.has('memory_save')
        ? 'memory_save'
        : undefined
      : directive && [...offered].find((name) => name === 'echo' || name.startsWith('echo__'));
  if (directive && directTool && !offered.has('propose_plan')) {
    const argument = directive[2]!.trim();
    if (!called.some((c) => c.function.name === directTool)) {
      return directTool === 'memory_save'
        ? {
            text: 'I will remember that. ',
            call: { name: directTool, args: { text: argument, tags: ['demo'] } },
          }
        : {
            text: `I will call ${directTool} on your desktop node. `,
            call: { name: directTool, args: { text: argument } },
          };
    }
    return {
      text:
        `This is the scripted demo model: no AI wrote this. ${directTool} answered: ` +
        `"${clip(resultOf(directTool) ?? '', 300)}".`,
    };
  }

  if (offered.has('propose_plan')) {
    if (!called.some((c) => c.function.name === 'propose_plan')) {
      return {
        text: 'Here is how I would go about it. ',
        call: {
          name: 'propose_plan',
          args: {
            summary: `Answer "${clip(question, 80)}" with help from your desktop node.`,
            steps: ['Look at the desktop node', 'Describe what it returned', 'Answer the question'],
          },
        },
      };
    }
    return { text: 'I proposed a plan. Reply to accept it, or tell me what to change.' };
  }
  const todos = (done: boolean) => ({
    name: 'write_todos',
    args: {
      todos: [
        {
          content: 'Ask the desktop node for a screenshot',
          status: done ? 'completed' : 'in_progress',
        },
        { content: 'Tell you what came back', status: done ? 'completed' : 'pending' },
      ],
    },
  });
  if (offered.has('write_todos') && todoCalls === 0) {
    return { text: 'Let me plan this in two steps. ', call: todos(false) };
  }
  if (nodeTool && !called.some((c) => c.function.name === nodeTool)) {
    return {
      text: `I will call ${nodeTool} on your desktop node. `,
      call: { name: nodeTool, args: nodeTool.startsWith('echo') ? { text: question } : {} },
    };
  }
  if (offered.has('write_todos') && todoCalls === 1) {
    return { text: 'Both steps are done. ', call: todos(true) };
  }
  const nodeResult = nodeTool ? resultOf(nodeTool) : undefined;
  return {
    text:
      `This is the scripted demo model: no AI wrote this. You asked: "${clip(question, 200)}". ` +
      (nodeResult === undefined
        ? 'No desktop node is connected, so I had no tool to call. '
        : `The desktop node's ${nodeTool} answered: "${clip(nodeResult, 300)}". `) +
      'With a real model (set its base URL, key and name in the Model form) the same service ' +
      'streams real answers and calls the same tools.',
  };
}

function text(message: ChatMessage): string {
  const { content } = message;
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map((part) => part.text ?? '').join('');
  return '';
}

function clip(value: string, max: number): string {
  const flat = value.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

function toolCall(id: string, call: NonNullable<Reply['call']>) {
  return {
    id,
    type: 'function',
    function: { name: call.name, arguments: JSON.stringify(call.args) },
  };
}

function send(res: ServerResponse, status: number, body: unknown) {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

async function readJson(req: IncomingMessage): Promise<ChatRequest | undefined> {
  const parts: Buffer[] = [];
  let size = 0;
  for await (const part of req as AsyncIterable<Buffer>) {
    size += part.length;
    if (size > MAX_BODY) return undefined;
    parts.push(part);
  }
  try {
    const parsed = JSON.parse(Buffer.concat(parts).toString('utf8')) as unknown;
    return parsed && typeof parsed === 'object' ? (parsed as ChatRequest) : undefined;
  } catch {
    return undefined;
  }
}
