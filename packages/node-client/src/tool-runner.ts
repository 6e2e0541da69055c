import {
  fieldErrors,
  JSONRPC_VERSION,
  JsonRpcErrorCode,
  ToolCallRequest,
  ToolCallResult,
  type JsonRpcError,
  type JsonRpcSuccess,
  type ToolCallResultInput,
} from '@agent-backend/protocol';
import { checkArguments, ToolParamsError, type JsonSchema } from './input-schema.js';
import { messageOf } from './reconnecting-socket.js';
import { TaskTimeoutError, type TaskSet } from './task-set.js';

/** What a tool handler may return: plain text, or a full `tools/call` result. */
export type ToolOutput = string | ToolCallResultInput;

/** What a handler gets besides its arguments. */
export interface ToolContext {
  /** The JSON-RPC request id. */
  readonly requestId: string;
  /** The agent session the call belongs to, when the server sent one. */
  readonly sessionId?: string;
  /** Aborts on timeout, when the connection drops, and on `close()`: stop work then. */
  readonly signal: AbortSignal;
}

/** A tool a node offers. */
export interface ToolDefinition {
  /** Shown to the model; sent in `register.tools`. */
  description?: string;
  /** JSON Schema of the arguments; sent in `register.tools`, top level checked on each call. */
  inputSchema?: JsonSchema;
  /** The tool changes something (as opposed to only reading); sent in `register.tools`. */
  writes?: boolean;
  /** Deadline of one call. @default the client's `toolTimeoutMs` */
  timeoutMs?: number;
  handler(args: Record<string, unknown>, context: ToolContext): Promise<ToolOutput> | ToolOutput;
}

/** The JSON-RPC code a node answers when it is at `max_concurrent_tasks`. */
export const NODE_BUSY_CODE = -32000;

/** Reported through the client's `toolCall` / `toolResult` events. */
export interface ToolCallEvent {
  readonly id: string;
  readonly name: string;
  readonly arguments: Record<string, unknown>;
  readonly sessionId?: string;
}
export interface ToolResultEvent {
  readonly id: string;
  readonly name: string;
  /** `isError` of the result, or false when the call failed with a JSON-RPC error. */
  readonly ok: boolean;
  /** The JSON-RPC error code, when the call failed. */
  readonly errorCode?: number;
  readonly message?: string;
  readonly durationMs: number;
}

export interface ToolRunnerDeps {
  readonly tools: Readonly<Record<string, ToolDefinition>>;
  readonly tasks: TaskSet;
  readonly defaultTimeoutMs: number;
  /** Sends a response; false when the socket is gone (the response is lost, as the call is). */
  send(response: JsonRpcSuccess | JsonRpcError): boolean;
  onCall(event: ToolCallEvent): void;
  onResult(event: ToolResultEvent): void;
}

/**
 * Answers the server's JSON-RPC `tools/call` requests (spec 6.2): -32600 for a request that is
 * not one, -32601 for another method or an unknown tool, -32602 for arguments the tool's schema
 * refuses, -32000 when the node is at `max_concurrent_tasks`, -32603 when the handler throws,
 * times out or returns something that is not a tool result. A call whose connection dropped
 * is aborted and not answered: the server has already failed it.
 */
export class ToolRunner {
  constructor(private readonly deps: ToolRunnerDeps) {}

  /** Handles a frame that carries `method`. */
  handle(frame: Record<string, unknown>): void {
    const id = typeof frame.id === 'string' && frame.id.length > 0 ? frame.id : null;
    if (frame.jsonrpc !== JSONRPC_VERSION || id === null) {
      this.#error(id, JsonRpcErrorCode.InvalidRequest, 'Invalid Request');
      return;
    }
    if (frame.method !== 'tools/call') {
      this.#error(id, JsonRpcErrorCode.MethodNotFound, `Method not found: ${String(frame.method)}`);
      return;
    }
    const parsed = ToolCallRequest.safeParse(frame);
    if (!parsed.success) {
      const problems = fieldErrors(parsed.error).map(
        (e) => `${e.path || '(request)'}: ${e.message}`,
      );
      this.#error(id, JsonRpcErrorCode.InvalidParams, `Invalid params: ${problems.join('; ')}`);
      return;
    }
    const { name, arguments: args, session_id: sessionId } = parsed.data.params;
    const tool = Object.hasOwn(this.deps.tools, name) ? this.deps.tools[name] : undefined;
    if (!tool) {
      this.#error(id, JsonRpcErrorCode.MethodNotFound, `Unknown tool: ${name}`);
      return;
    }
    const problems = tool.inputSchema ? checkArguments(tool.inputSchema, args) : [];
    if (problems.length > 0) {
      this.#error(id, JsonRpcErrorCode.InvalidParams, `Invalid params: ${problems.join('; ')}`);
      return;
    }
    const { tasks } = this.deps;
    if (tasks.has(id)) {
      this.#error(id, JsonRpcErrorCode.InvalidRequest, `Duplicate request id: ${id}`);
      return;
    }
    if (tasks.full) {
      this.#error(
        id,
        NODE_BUSY_CODE,
        `Node busy: ${tasks.size} of ${tasks.capacity} tasks running`,
      );
      return;
    }
    const call: ToolCallEvent =
      sessionId === undefined
        ? { id, name, arguments: args }
        : { id, name, arguments: args, sessionId };
    void this.#run(call, tool);
  }

  async #run(call: ToolCallEvent, tool: ToolDefinition): Promise<void> {
    const started = Date.now();
    const slot = this.deps.tasks.add(call.id, tool.timeoutMs ?? this.deps.defaultTimeoutMs);
    this.deps.onCall(call);
    const context: ToolContext = {
      requestId: call.id,
      signal: slot.signal,
      ...(call.sessionId === undefined ? {} : { sessionId: call.sessionId }),
    };
    const aborted = new Promise<never>((_, reject) => {
      slot.signal.addEventListener('abort', () => reject(slot.signal.reason as Error), {
        once: true,
      });
    });
    aborted.catch(() => {});
    let outcome: { result: ToolCallResult } | { code: number; message: string };
    try {
      const output = await Promise.race([
        Promise.resolve(tool.handler(call.arguments, context)),
        aborted,
      ]);
      const result = ToolCallResult.safeParse(
        typeof output === 'string' ? { content: [{ type: 'text', text: output }] } : output,
      );
      outcome = result.success
        ? { result: result.data }
        : {
            code: JsonRpcErrorCode.InternalError,
            message: `Tool ${call.name} returned an invalid result: ${fieldErrors(result.error)
              .map((e) => `${e.path} ${e.message}`)
              .join('; ')}`,
          };
    } catch (error) {
      if (slot.signal.aborted && !(slot.signal.reason instanceof TaskTimeoutError)) {
        slot.finish();
        return;
      }
      outcome =
        error instanceof ToolParamsError
          ? { code: JsonRpcErrorCode.InvalidParams, message: error.message }
          : error instanceof TaskTimeoutError
            ? {
                code: JsonRpcErrorCode.InternalError,
                message: `Tool ${call.name} ${error.message}`,
              }
            : {
                code: JsonRpcErrorCode.InternalError,
                message: messageOf(error) || `Tool ${call.name} failed`,
              };
    }
    if (slot.signal.aborted && !(slot.signal.reason instanceof TaskTimeoutError)) {
      slot.finish();
      return;
    }
    slot.finish();
    const durationMs = Date.now() - started;
    if ('result' in outcome) {
      this.deps.send({ jsonrpc: JSONRPC_VERSION, id: call.id, result: outcome.result });
      this.deps.onResult({ id: call.id, name: call.name, ok: !outcome.result.isError, durationMs });
    } else {
      this.deps.send({
        jsonrpc: JSONRPC_VERSION,
        id: call.id,
        error: { code: outcome.code, message: outcome.message },
      });
      this.deps.onResult({
        id: call.id,
        name: call.name,
        ok: false,
        errorCode: outcome.code,
        message: outcome.message,
        durationMs,
      });
    }
  }

  #error(id: string | null, code: number, message: string): void {
    this.deps.send({ jsonrpc: JSONRPC_VERSION, id, error: { code, message } });
  }
}
