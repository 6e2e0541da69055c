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

/**
 * What the server does with one embeddings request: answer it (`ok`, as with no step queued),
 * fail with an OpenAI error body, or accept it and never answer.
 */
export type EmbeddingStep =
  | { kind: 'ok' }
  | { kind: 'error'; status: number; message: string; headers?: Record<string, string> }
  | { kind: 'hang' };

/** Computes the embedding of one input text; `dimensions` is the request's, when given. */
export type EmbedFunction = (text: string, model: string, dimensions?: number) => number[];

export interface ScriptedModelOptions {
  /** The embeddings `/embeddings` answers with; by default `hashingEmbedding(text, dimensions)`. */
  embed?: EmbedFunction;
}

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
  /** Appends steps for chat requests naming `model`; each request consumes one step. */
  script(model: string, steps: ScriptStep[]): void;
  /**
   * Appends steps for embeddings requests naming `model`: each one consumes a step while any
   * are queued (before its input is checked), and is answered normally once none are left.
   */
  scriptEmbeddings(model: string, steps: EmbeddingStep[]): void;
  /** Requests received so far (chat and embeddings), for one model or all. */
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

/**
 * A deterministic bag-of-words embedding: each lower-cased run of letters or digits is hashed
 * (32-bit FNV-1a of its UTF-8 bytes) into one of `dimensions` buckets, which count the words.
 * Not normalized. Texts sharing words get similar vectors; a text without words gets zeros.
 */
export function hashingEmbedding(text: string, dimensions = 64): number[] {
  if (!Number.isInteger(dimensions) || dimensions < 1) {
    throw new RangeError(`dimensions must be a positive integer, got ${dimensions}`);
  }
  const vector = new Array<number>(dimensions).fill(0);
  for (const word of words(text)) vector[fnv1a(word) % dimensions]! += 1;
  return vector;
}

/** The lower-cased runs of letters and digits in `text`. */
function words(text: string): string[] {
  return text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
}

/** 32-bit FNV-1a hash of the UTF-8 bytes of `text`, as an unsigned integer. */
function fnv1a(text: string): number {
  let hash = 0x811c9dc5;
  for (const byte of Buffer.from(text, 'utf8')) hash = Math.imul(hash ^ byte, 0x01000193);
  return hash >>> 0;
}

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
    else if ('toolCall' in piece) chars += piece.toolCall.arguments?.length ?? 0;
  }
  return chars;
}

/** A valid embeddings request, as the server reads it. */
interface EmbeddingRequest {
  model: string;
  inputs: string[];
  base64: boolean;
  dimensions?: number;
}

/** Checks an embeddings request body; returns the request, or what is wrong and which field. */
function parseEmbeddingRequest(
  body: RecordedRequest['body'],
): EmbeddingRequest | { invalid: string; param: string } {
  const { model, input, encoding_format: format, dimensions } = body;
  if (typeof model !== 'string' || model === '') {
    return { invalid: 'you must provide a model parameter', param: 'model' };
  }
  const inputs = typeof input === 'string' ? [input] : input;
  if (!Array.isArray(inputs) || !inputs.every((item) => typeof item === 'string')) {
    return { invalid: "'input' must be a string or an array of strings", param: 'input' };
  }
  if (inputs.length === 0) return { invalid: "'input' must not be empty", param: 'input' };
  if (format !== undefined && format !== 'float' && format !== 'base64') {
    return { invalid: "'encoding_format' must be 'float' or 'base64'", param: 'encoding_format' };
  }
  if (dimensions !== undefined && (!Number.isInteger(dimensions) || (dimensions as number) < 1)) {
    return { invalid: "'dimensions' must be a positive integer", param: 'dimensions' };
  }
  return {
    model,
    inputs,
    base64: format === 'base64',
    dimensions: dimensions as number | undefined,
  };
}

/** Base64 of the vector's little-endian float32 bytes (OpenAI's `encoding_format: base64`). */
function float32Base64(vector: number[]): string {
  const bytes = Buffer.alloc(vector.length * 4);
  vector.forEach((value, i) => bytes.writeFloatLE(value, i * 4));
  return bytes.toString('base64');
}

/** Answers one embeddings request: the scripted step if any, else the embeddings of its inputs. */
function answerEmbeddings(
  res: ServerResponse,
  record: RecordedRequest,
  step: EmbeddingStep | undefined,
  embed: EmbedFunction,
): void {
  if (step?.kind === 'hang') return;
  if (step?.kind === 'error') {
    return sendError(res, record, step.status, step.message, step.headers);
  }
  const request = parseEmbeddingRequest(record.body);
  if ('invalid' in request) return sendInvalid(res, record, request.invalid, request.param);
  let vectors: number[][];
  try {
    vectors = request.inputs.map((text) => embed(text, request.model, request.dimensions));
  } catch (error) {
    return sendError(res, record, 500, `scripted model: embed failed: ${String(error)}`);
  }
  const tokens = request.inputs.reduce((sum, text) => sum + words(text).length, 0);
  record.completed = true;
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(
    JSON.stringify({
      object: 'list',
      data: vectors.map((vector, index) => ({
        object: 'embedding',
        index,
        embedding: request.base64 ? float32Base64(vector) : vector,
      })),
      model: request.model,
      usage: { prompt_tokens: tokens, total_tokens: tokens },
    }),
  );
}

/** Ends the answer with OpenAI's error body; `details` sets its `type` and `param`. */
function sendError(
  res: ServerResponse,
  record: RecordedRequest,
  status: number,
  message: string,
  headers: Record<string, string> = {},
  details: { type?: string; param?: string } = {},
): void {
  record.completed = true;
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  const type = details.type ?? 'scripted_error';
  res.end(JSON.stringify({ error: { message, type, code: null, param: details.param ?? null } }));
}

/** Ends the answer with a 400 and OpenAI's `invalid_request_error` body naming `param`. */
function sendInvalid(
  res: ServerResponse,
  record: RecordedRequest,
  message: string,
  param: string,
): void {
  sendError(res, record, 400, message, {}, { type: 'invalid_request_error', param });
}
