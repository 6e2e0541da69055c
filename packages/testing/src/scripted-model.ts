/**
 * A scripted OpenAI-compatible chat-completions server for tests: real HTTP, the real wire
 * format (`data: <chunk JSON>` lines, `data: [DONE]`, `{ error }` bodies), answers scripted per
 * model name, and every request recorded (body, headers, whether the client aborted it).
 *
 * Scripts are keyed by the request's `model`, so one server serves many tests (and several
 * service processes) without them consuming each other's steps.
 */
import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/** One piece of a streamed answer. */
export type StreamPiece =
  | { text: string }
  | { toolCall: { index: number; id?: string; name?: string; arguments?: string } }
  | { finish: 'stop' | 'tool_calls' | 'length' | 'content_filter' }
  /** Pause before the next piece. */
  | { waitMs: number }
  /** Pause until the promise settles (a test holds the answer open). */
  | { waitFor: Promise<unknown> }
  /** Bytes written as they are, e.g. a malformed line. */
  | { raw: string };

/** What the server does with one request. */
export type ScriptStep =
  | { kind: 'stream'; pieces: StreamPiece[] }
  | { kind: 'error'; status: number; message: string; headers?: Record<string, string> }
  /** Accepts the request and never answers. */
  | { kind: 'hang' }
  /** Sends a 200 event stream, writes `pieces`, then destroys the connection without ending it. */
  | { kind: 'drop'; pieces: StreamPiece[] };

export interface RecordedRequest {
  readonly path: string;
  readonly headers: IncomingHttpHeaders;
  /** The parsed JSON body. */
  readonly body: {
    model?: string;
    messages?: Array<Record<string, unknown>>;
    tools?: Array<{ function: { name: string; description?: string; parameters?: unknown } }>;
    [key: string]: unknown;
  };
  /** True once the client closed the connection before the answer was complete. */
  aborted: boolean;
  /** True once the whole answer was sent. */
  completed: boolean;
}

export interface ScriptedModel {
  /** The base URL to give as `llm_config.baseUrl`: `http://127.0.0.1:<port>/v1`. */
  readonly baseUrl: string;
  /** Appends steps for requests naming `model`; each request consumes one step. */
  script(model: string, steps: ScriptStep[]): void;
  /** Requests received so far, for one model or all. */
  requests(model?: string): RecordedRequest[];
  /** Resolves once `count` requests for `model` arrived. */
  waitForRequests(model: string, count: number, timeoutMs?: number): Promise<RecordedRequest[]>;
  /** Resolves once the client aborted `request`. */
  waitForAbort(request: RecordedRequest, timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

/** A text answer split into `parts` chunks, then `finish_reason: stop`. */
export function textReply(text: string, parts = 3): ScriptStep {
  const size = Math.max(1, Math.ceil(text.length / parts));
  const pieces: StreamPiece[] = [];
  for (let i = 0; i < text.length; i += size) pieces.push({ text: text.slice(i, i + size) });
  return { kind: 'stream', pieces: [...pieces, { finish: 'stop' }] };
}

/**
 * A turn calling tools: per call a first delta with id and name, then the JSON arguments in
 * `parts` pieces; with `interleave`, the pieces of the calls alternate (as some servers send).
 */
export function toolCallsReply(
  calls: Array<{ id?: string; name: string; args: unknown }>,
  options: { parts?: number; interleave?: boolean; text?: string } = {},
): ScriptStep {
  const parts = options.parts ?? 3;
  const perCall = calls.map((call, index) => {
    const json = JSON.stringify(call.args);
    const size = Math.max(1, Math.ceil(json.length / parts));
    const pieces: StreamPiece[] = [
      { toolCall: { index, id: call.id ?? `call_${index + 1}`, name: call.name, arguments: '' } },
    ];
    for (let i = 0; i < json.length; i += size) {
      pieces.push({ toolCall: { index, arguments: json.slice(i, i + size) } });
    }
    return pieces;
  });
  const pieces: StreamPiece[] = options.text ? [{ text: options.text }] : [];
  if (options.interleave) {
    const longest = Math.max(...perCall.map((p) => p.length));
    for (let i = 0; i < longest; i++) for (const p of perCall) if (p[i]) pieces.push(p[i]!);
  } else {
    pieces.push(...perCall.flat());
  }
  return { kind: 'stream', pieces: [...pieces, { finish: 'tool_calls' }] };
}

/** Starts the server on 127.0.0.1 and a free port. */
export async function startScriptedModel(): Promise<ScriptedModel> {
  const scripts = new Map<string, ScriptStep[]>();
  const recorded: RecordedRequest[] = [];
  const sockets = new Set<Socket>();
  const listeners = new Set<() => void>();
  const notify = () => {
    for (const listener of [...listeners]) listener();
  };
  let counter = 0;

  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      let body: RecordedRequest['body'] = {};
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as RecordedRequest['body'];
      } catch {
        // recorded with an empty body; the step decides the answer
      }
      const record: RecordedRequest = {
        path: req.url ?? '',
        headers: req.headers,
        body,
        aborted: false,
        completed: false,
      };
      recorded.push(record);
      res.on('close', () => {
        if (!record.completed) record.aborted = true;
        notify();
      });
      notify();
      const step = scripts.get(body.model ?? '')?.shift();
      void answer(res, record, step, `chatcmpl-scripted-${++counter}`).catch(() => {
        res.destroy();
      });
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  function waitUntil<T>(check: () => T | undefined, timeoutMs: number, what: string): Promise<T> {
    return new Promise((resolve, reject) => {
      const done = check();
      if (done !== undefined) return resolve(done);
      const timer = setTimeout(() => {
        listeners.delete(listener);
        reject(new Error(`scripted model: timed out waiting for ${what}`));
      }, timeoutMs);
      const listener = () => {
        const value = check();
        if (value === undefined) return;
        clearTimeout(timer);
        listeners.delete(listener);
        resolve(value);
      };
      listeners.add(listener);
    });
  }

  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    script(model, steps) {
      scripts.set(model, [...(scripts.get(model) ?? []), ...steps]);
    },
    requests: (model) =>
      model === undefined ? [...recorded] : recorded.filter((r) => r.body.model === model),
    waitForRequests(model, count, timeoutMs = 10_000) {
      return waitUntil(
        () => {
          const found = recorded.filter((r) => r.body.model === model);
          return found.length >= count ? found : undefined;
        },
        timeoutMs,
        `${count} request(s) for ${model}`,
      );
    },
    async waitForAbort(request, timeoutMs = 10_000) {
      await waitUntil(() => (request.aborted ? true : undefined), timeoutMs, 'the client to abort');
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

async function answer(
  res: ServerResponse,
  record: RecordedRequest,
  step: ScriptStep | undefined,
  id: string,
): Promise<void> {
  const model = record.body.model ?? 'unknown';
  if (!record.path.endsWith('/chat/completions')) {
    return sendError(res, record, 404, `no route ${record.path}`);
  }
  if (!step) return sendError(res, record, 500, `scripted model: no step left for model ${model}`);
  if (step.kind === 'hang') return;
  if (step.kind === 'error') return sendError(res, record, step.status, step.message, step.headers);
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  const created = Math.floor(Date.now() / 1000);
  let first = true;
  const chunk = (delta: Record<string, unknown>, finish: string | null = null) => {
    const payload = {
      id,
      object: 'chat.completion.chunk',
      created,
      model,
      choices: [
        { index: 0, delta: first ? { role: 'assistant', ...delta } : delta, finish_reason: finish },
      ],
    };
    first = false;
    return `data: ${JSON.stringify(payload)}\n\n`;
  };
  for (const piece of step.pieces) {
    if (res.destroyed) return;
    if ('waitMs' in piece) await new Promise((resolve) => setTimeout(resolve, piece.waitMs));
    else if ('waitFor' in piece) await piece.waitFor.catch(() => undefined);
    else if ('raw' in piece) res.write(piece.raw);
    else if ('text' in piece) res.write(chunk({ content: piece.text }));
    else if ('finish' in piece) res.write(chunk({}, piece.finish));
    else {
      const { index, id: callId, name, arguments: args } = piece.toolCall;
      const call: Record<string, unknown> = { index };
      if (callId) Object.assign(call, { id: callId, type: 'function' });
      const fn: Record<string, string> = {};
      if (name !== undefined) fn.name = name;
      if (args !== undefined) fn.arguments = args;
      call.function = fn;
      res.write(chunk({ tool_calls: [call] }));
    }
  }
  if (step.kind === 'drop') {
    // Let what was written reach the client first, so it is a drop mid-answer, not a refusal.
    await new Promise((resolve) => setTimeout(resolve, 50));
    res.destroy();
    return;
  }
  record.completed = true;
  res.end('data: [DONE]\n\n');
}

function sendError(
  res: ServerResponse,
  record: RecordedRequest,
  status: number,
  message: string,
  headers: Record<string, string> = {},
): void {
  record.completed = true;
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify({ error: { message, type: 'scripted_error', code: null, param: null } }));
}
