/**
 * A scripted OpenAI-compatible chat-completions server for tests: real HTTP, the real wire
 * format (`data: <chunk JSON>` lines, `data: [DONE]`, `{ error }` bodies), answers scripted per
 * model name, and every request recorded (body, headers, whether the client aborted it).
 *
 * It also answers `POST .../embeddings` in OpenAI's format (float or base64 vectors), with a
 * deterministic embedding by default and failures scripted per model.
 *
 * Scripts are keyed by the request's `model`, so one server serves many tests (and several
 * service processes) without them consuming each other's steps.
 */
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { hashingEmbedding } from './hashing-embedding.js';
import { answerEmbeddings, sendError } from './scripted-embeddings.js';
import type {
  EmbedFunction,
  EmbeddingStep,
  RecordedRequest,
  ScriptedModel,
  ScriptedModelOptions,
  ScriptStep,
  StreamPiece,
} from './scripted-steps.js';

export * from './scripted-steps.js';
export { hashingEmbedding } from './hashing-embedding.js';

/** Starts the server on 127.0.0.1 and a free port. */
export async function startScriptedModel(
  options: ScriptedModelOptions = {},
): Promise<ScriptedModel> {
  const embed: EmbedFunction =
    options.embed ?? ((text, _model, dimensions) => hashingEmbedding(text, dimensions));
  const scripts = new Map<string, ScriptStep[]>();
  const embeddingScripts = new Map<string, EmbeddingStep[]>();
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
        const parsed: unknown = JSON.parse(Buffer.concat(chunks).toString('utf8'));
        if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)) {
          body = parsed as RecordedRequest['body'];
        }
      } catch {
        // recorded with an empty body; the step decides the answer
      }
      const record: RecordedRequest = {
        path: req.url ?? '',
        headers: req.headers,
        body,
        receivedAt: Date.now(),
        aborted: false,
        completed: false,
      };
      recorded.push(record);
      res.on('close', () => {
        if (!record.completed) record.aborted = true;
        notify();
      });
      notify();
      if (record.path.endsWith('/embeddings')) {
        const step =
          typeof body.model === 'string' ? embeddingScripts.get(body.model)?.shift() : undefined;
        answerEmbeddings(res, record, step, embed);
        return;
      }
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
    scriptEmbeddings(model, steps) {
      embeddingScripts.set(model, [...(embeddingScripts.get(model) ?? []), ...steps]);
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
      const fn: Record<string, unknown> = {};
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
  const options = record.body.stream_options as { include_usage?: boolean } | undefined;
  if (options?.include_usage) {
    // As OpenAI does: one last chunk with no choices and the request's usage (counted in
    // characters here: the tests only need numbers that move).
    const prompt = JSON.stringify(record.body.messages ?? []).length;
    const completion = pieceChars(step.pieces);
    const usage = {
      prompt_tokens: prompt,
      completion_tokens: completion,
      total_tokens: prompt + completion,
    };
    res.write(
      `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model, choices: [], usage })}\n\n`,
    );
  }
  record.completed = true;
  res.end('data: [DONE]\n\n');
}

/** Characters of text and tool-call arguments in a scripted answer. */
function pieceChars(pieces: readonly StreamPiece[]): number {
  let chars = 0;
  for (const piece of pieces) {
    if ('text' in piece) chars += piece.text.length;
    else if ('toolCall' in piece) {
      const args = piece.toolCall.arguments;
      chars += (typeof args === 'object' ? JSON.stringify(args) : (args ?? '')).length;
    }
  }
  return chars;
}
