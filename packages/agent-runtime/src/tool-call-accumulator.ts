import { randomUUID } from 'node:crypto';
import { AgentRunError, RUN_ERROR_CODES } from './errors.js';

/** A tool call as the model finished it: `arguments` is the raw JSON text it produced. */
export interface AssembledToolCall {
  readonly id: string;
  readonly name: string;
  readonly arguments: string;
}

/**
 * The part of a streamed `delta.tool_calls[]` item this needs (OpenAI wire format). Some
 * OpenAI-compatible servers send `function.arguments` as a JSON object instead of its text.
 */
export interface ToolCallDelta {
  index?: number;
  id?: string | null;
  function?: { name?: string | null; arguments?: string | object | null } | null;
}

interface PendingCall {
  /** Where the call sorts: its `index`, or the next free one when the server sent none. */
  readonly order: number;
  id: string;
  name: string;
  arguments: string;
}

/**
 * Reassembles tool calls from streamed deltas. OpenAI sends, per call, a first delta with
 * `index`, `id` and `function.name`, then deltas with the same `index` carrying pieces of
 * `function.arguments`; several calls of one turn interleave by `index`.
 *
 * Tolerated, because OpenAI-compatible servers and proxies do it: a missing `index` (the delta
 * continues the call with the same `id`, else the last call, else starts one), two calls sharing
 * one `index` with different `id`s (each is its own call; deltas without an `id` continue the
 * latest call of that `index`), `function.arguments` sent as a JSON object rather than its text,
 * a name split over deltas or repeated in each, a missing `id` (one is generated).
 * Not tolerated: a call that never got a name.
 */
export class ToolCallAccumulator {
  /** Every call, in the order its first delta arrived. */
  private readonly calls: PendingCall[] = [];
  /** The latest call started at each `index`. */
  private readonly byIndex = new Map<number, PendingCall>();
  private last: PendingCall | undefined;

  add(delta: ToolCallDelta): void {
    const call = this.callOf(delta);
    if (delta.id && !call.id) call.id = delta.id;
    // Some servers repeat the whole name in every delta, others split it: append unless repeated.
    const name = delta.function?.name;
    if (name && name !== call.name) call.name += name;
    const args = delta.function?.arguments;
    if (typeof args === 'string') call.arguments += args;
    // A whole object is the whole arguments: its JSON text, as OpenAI would have sent it.
    else if (args && typeof args === 'object') call.arguments = JSON.stringify(args);
    this.last = call;
  }

  get size(): number {
    return this.calls.length;
  }

  /** The calls in `index` order (arrival order within one); throws `llm_bad_response` when one has no name. */
  finish(): AssembledToolCall[] {
    return [...this.calls]
      .sort((a, b) => a.order - b.order)
      .map((call) => {
        if (!call.name) {
          throw new AgentRunError(
            'llm_bad_response',
            `${RUN_ERROR_CODES.llm_bad_response} (a tool call without a function name)`,
          );
        }
        return {
          id: call.id || `call_${randomUUID().replace(/-/g, '').slice(0, 24)}`,
          name: call.name,
          arguments: call.arguments,
        };
      });
  }

  private callOf(delta: ToolCallDelta): PendingCall {
    const sameId = delta.id ? this.calls.find((call) => call.id === delta.id) : undefined;
    if (sameId) return sameId;
    if (typeof delta.index === 'number') {
      const current = this.byIndex.get(delta.index);
      // A new `id` at an index that already has a call with another one: a second call.
      if (current && !(delta.id && current.id)) return current;
      return this.start(delta.index);
    }
    if (!delta.id && this.last) return this.last;
    const next = this.calls.length === 0 ? 0 : Math.max(...this.calls.map((c) => c.order)) + 1;
    return this.start(next);
  }

  private start(order: number): PendingCall {
    const call: PendingCall = { order, id: '', name: '', arguments: '' };
    this.calls.push(call);
    this.byIndex.set(order, call);
    return call;
  }
}
