import { randomUUID } from 'node:crypto';
import { AgentRunError, RUN_ERROR_CODES } from './errors.js';

/** A tool call as the model finished it: `arguments` is the raw JSON text it produced. */
export interface AssembledToolCall {
  readonly id: string;
  readonly name: string;
  readonly arguments: string;
}

/** The part of a streamed `delta.tool_calls[]` item this needs (OpenAI wire format). */
export interface ToolCallDelta {
  index?: number;
  id?: string | null;
  function?: { name?: string | null; arguments?: string | null } | null;
}

/**
 * Reassembles tool calls from streamed deltas. OpenAI sends, per call, a first delta with
 * `index`, `id` and `function.name`, then deltas with the same `index` carrying pieces of
 * `function.arguments`; several calls of one turn interleave by `index`.
 *
 * Tolerated, because OpenAI-compatible servers do it: a missing `index` (the delta continues
 * the call with the same `id`, else the last call, else starts one), a name split over deltas or repeated in each,
 * a missing `id` (one is generated). Not tolerated: a call that never got a name.
 */
export class ToolCallAccumulator {
  private readonly calls = new Map<number, { id: string; name: string; arguments: string }>();
  private lastIndex: number | undefined;

  add(delta: ToolCallDelta): void {
    const index = this.indexOf(delta);
    let call = this.calls.get(index);
    if (!call) {
      call = { id: '', name: '', arguments: '' };
      this.calls.set(index, call);
    }
    if (delta.id && !call.id) call.id = delta.id;
    // Some servers repeat the whole name in every delta, others split it: append unless repeated.
    const name = delta.function?.name;
    if (name && name !== call.name) call.name += name;
    if (delta.function?.arguments) call.arguments += delta.function.arguments;
    this.lastIndex = index;
  }

  get size(): number {
    return this.calls.size;
  }

  /** The calls in `index` order; throws `llm_bad_response` when one has no name. */
  finish(): AssembledToolCall[] {
    return [...this.calls.entries()]
      .sort(([a], [b]) => a - b)
      .map(([, call]) => {
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

  private indexOf(delta: ToolCallDelta): number {
    if (typeof delta.index === 'number') return delta.index;
    if (delta.id) {
      for (const [index, call] of this.calls) if (call.id === delta.id) return index;
      return this.calls.size === 0 ? 0 : Math.max(...this.calls.keys()) + 1;
    }
    return this.lastIndex ?? 0;
  }
}
