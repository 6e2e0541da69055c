/** What a scripted model answers (its steps, and helpers that build them) and what it records. */
import type { IncomingHttpHeaders } from 'node:http';

/** One piece of a streamed answer. */
export type StreamPiece =
  | { text: string }
  /**
   * One `delta.tool_calls` item; `arguments` as an object is sent as that object (as some
   * OpenAI-compatible servers do), not as its JSON text.
   */
  | { toolCall: { index: number; id?: string; name?: string; arguments?: string | object } }
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

/** Options of `startScriptedModel`. */
export interface ScriptedModelOptions {
  /** The embeddings `/embeddings` answers with; by default `hashingEmbedding(text, dimensions)`. */
  embed?: EmbedFunction;
}

/** One request the scripted model received, as the tests inspect it. */
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
  /** `Date.now()` when the whole request had arrived. */
  readonly receivedAt: number;
  /** True once the client closed the connection before the answer was complete. */
  aborted: boolean;
  /** True once the whole answer was sent. */
  completed: boolean;
}

/** A running scripted model server. */
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
