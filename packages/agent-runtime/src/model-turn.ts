import { performance } from 'node:perf_hooks';
import type OpenAI from 'openai';
import type { AgentMetrics } from '@agent-backend/metrics';
import type { ChatMessage } from './chat-message.js';
import { AgentRunError, RUN_ERROR_CODES } from './errors.js';
import { toRunError } from './provider-errors.js';
import type { AgentTool } from './tool.js';
import { ToolCallAccumulator, type AssembledToolCall } from './tool-call-accumulator.js';
import { traced } from './traced.js';

/** One model request of a run. */
export interface ModelTurnRequest {
  readonly client: OpenAI;
  readonly model: string;
  readonly temperature: number;
  readonly messages: readonly ChatMessage[];
  readonly tools: readonly AgentTool[];
  /** The run's signal: aborting it aborts the HTTP request to the provider at once. */
  readonly signal: AbortSignal;
  /** Longest silence between two chunks of the answer before the turn fails with `llm_timeout`. */
  readonly idleTimeoutMs: number;
  /** Only to scrub it out of provider error messages. */
  readonly apiKey: string;
  /** Receives the time to the first chunk and the usage the provider reports. */
  readonly metrics?: AgentMetrics;
  /**
   * The run's previous step, still being stored: the request goes out at once, but the turn's
   * first text waits for it (so no event of this turn precedes it), and so does the turn's end.
   * The idle timeout does not run meanwhile (a slow write is not the model's silence). Its
   * failure ends the turn with that error.
   */
  readonly after?: Promise<void>;
  /**
   * Writes the turn's end waits for, but not its text: the run's own rows, written while its
   * first model request starts (its text goes out at once; its tool calls run, and its answer
   * is stored, once they are). Their failure ends the turn with that error.
   */
  readonly endsAfter?: Promise<void>;
  /** Each piece of answer text as it arrives. */
  onText(text: string): void;
}

/** The model's complete answer of one turn. */
export interface ModelTurn {
  readonly content: string;
  readonly toolCalls: AssembledToolCall[];
  readonly finishReason: string | null;
  /** Prompt plus completion tokens the provider reported for this request (0: none reported). */
  readonly tokens: number;
}

/** Thrown when the run's signal aborted the turn; the run knows the reason. */
export class TurnAbortedError extends Error {
  constructor() {
    super('the model request was aborted');
    this.name = 'TurnAbortedError';
  }
}

/**
 * One streamed chat completion: forwards text as it arrives, reassembles tool calls from their
 * deltas, and fails with a run error on provider errors, malformed streams and silence. The SDK
 * treats an abort as a normal end of the stream, so the cause is checked after the loop.
 */
export function streamModelTurn(request: ModelTurnRequest): Promise<ModelTurn> {
  return traced(
    `chat ${request.model}`,
    { 'gen_ai.operation.name': 'chat', 'gen_ai.request.model': request.model },
    modelTurn,
    request,
  );
}

async function modelTurn(request: ModelTurnRequest): Promise<ModelTurn> {
  const controller = new AbortController();
  const abort = () => controller.abort();
  request.signal.addEventListener('abort', abort, { once: true });
  if (request.signal.aborted) controller.abort();
  let idle = false;
  let timer: NodeJS.Timeout | undefined;
  const arm = () => {
    clearTimeout(timer);
    timer = setTimeout(() => {
      idle = true;
      controller.abort();
    }, request.idleTimeoutMs);
  };
  const calls = new ToolCallAccumulator();
  let content = '';
  let finishReason: string | null = null;
  let chunks = 0;
  let tokens = 0;
  let after = request.after;
  let afterFailed: { error: unknown } | undefined;
  // `inStream`: called inside the stream, whose idle timer waits too (a slow write is not the
  // model's silence) and starts again after.
  const passAfter = async (inStream: boolean) => {
    if (!after) return;
    const previous = after;
    after = undefined;
    clearTimeout(timer);
    await previous.catch((error: unknown) => {
      afterFailed = { error };
      throw error;
    });
    if (inStream) arm();
  };
  const started = performance.now();
  try {
    const stream = await request.client.chat.completions.create(
      {
        model: request.model,
        temperature: request.temperature,
        messages: request.messages as OpenAI.Chat.ChatCompletionMessageParam[],
        stream: true,
        // The last chunk then carries the request's token usage (OpenAI's stream option, which
        // OpenAI-compatible servers such as vLLM, Ollama and LM Studio accept too).
        stream_options: { include_usage: true },
        ...(request.tools.length > 0
          ? {
              tools: request.tools.map((tool) => ({
                type: 'function' as const,
                function: {
                  name: tool.name,
                  description: tool.description,
                  parameters: tool.parameters,
                },
              })),
            }
          : {}),
      },
      { signal: controller.signal },
    );
    arm();
    for await (const chunk of stream) {
      arm();
      const choice = chunk.choices?.[0];
      if (chunk.usage) {
        const prompt = chunk.usage.prompt_tokens ?? 0;
        const completion = chunk.usage.completion_tokens ?? 0;
        tokens += prompt + completion;
        request.metrics?.tokens(request.model, prompt, completion);
        // The usage chunk closes the stream: it is not part of the answer.
        if (!choice) continue;
      }
      if (chunks++ === 0) request.metrics?.firstToken((performance.now() - started) / 1000);
      if (!choice) continue;
      const text = choice.delta?.content;
      if (text) {
        await passAfter(true);
        content += text;
        request.onText(text);
      }
      for (const delta of choice.delta?.tool_calls ?? []) calls.add(delta);
      if (choice.finish_reason) finishReason = choice.finish_reason;
    }
  } catch (error) {
    if (afterFailed) throw afterFailed.error;
    if (request.signal.aborted) throw new TurnAbortedError();
    if (idle)
      throw new AgentRunError('llm_timeout', `${RUN_ERROR_CODES.llm_timeout} (the answer stalled)`);
    throw toRunError(error, request.apiKey);
  } finally {
    clearTimeout(timer);
    request.signal.removeEventListener('abort', abort);
  }
  await passAfter(false);
  await request.endsAfter;
  if (request.signal.aborted) throw new TurnAbortedError();
  if (idle)
    throw new AgentRunError('llm_timeout', `${RUN_ERROR_CODES.llm_timeout} (the answer stalled)`);
  if (chunks === 0) {
    throw new AgentRunError(
      'llm_bad_response',
      `${RUN_ERROR_CODES.llm_bad_response} (an empty stream)`,
    );
  }
  return { content, toolCalls: calls.finish(), finishReason, tokens };
}
