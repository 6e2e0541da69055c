/**
 * The one-tool-call runs of `agent-stream.ts`: the scripted model first answers with one call of
 * `write_todos`, the server runs the tool, and the model's second request (with the tool's
 * result) streams the text answer.
 */
import { performance } from 'node:perf_hooks';
import type OpenAI from 'openai';
import {
  textReply,
  toolCallsReply,
  type RecordedRequest,
  type ScriptStep,
} from '../../packages/testing/src/index.js';
import { TOOL_DESCRIPTION, TOOL_NAME, todoResult, type Todo } from './agent-peers.js';

const TODOS: Todo[] = [{ content: 'Check the bench', status: 'pending' }];
const CALL_ID = 'call_1';
const ANSWER = 'A short streamed answer of a few words.';

/** The model's two answers of a run: the tool call, then 3 chunks of text. */
export const toolRun = (): ScriptStep[] => [
  toolCallsReply([{ id: CALL_ID, name: TOOL_NAME, args: { todos: TODOS } }]),
  textReply(ANSWER, 3),
];

/** The tool as the `openai` client offers it, for the model's own run. */
const TOOL_DEFINITION = {
  type: 'function' as const,
  function: {
    name: TOOL_NAME,
    description: TOOL_DESCRIPTION,
    parameters: {
      type: 'object',
      properties: {
        todos: {
          type: 'array',
          items: {
            type: 'object',
            properties: {
              content: { type: 'string' },
              status: { type: 'string', enum: ['pending', 'in_progress', 'completed'] },
            },
            required: ['content', 'status'],
          },
        },
      },
      required: ['todos'],
    },
  },
};

/**
 * The model's own one-tool-call run, as an application calling it directly would make it: the
 * first request streamed to its end, then the second with the call and the tool's result.
 * Resolves with the time from the first request's start to the second's first text chunk.
 */
export async function directToolRun(client: OpenAI, model: string) {
  const started = performance.now();
  const user = { role: 'user' as const, content: 'Hi' };
  const call = await client.chat.completions.create({
    model,
    messages: [user],
    tools: [TOOL_DEFINITION],
    stream: true,
  });
  let args = '';
  for await (const chunk of call)
    args += chunk.choices[0]?.delta.tool_calls?.[0]?.function?.arguments ?? '';
  const { todos } = JSON.parse(args) as { todos: Todo[] };
  const answer = await client.chat.completions.create({
    model,
    messages: [
      user,
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: CALL_ID, type: 'function', function: { name: TOOL_NAME, arguments: args } },
        ],
      },
      { role: 'tool', tool_call_id: CALL_ID, content: todoResult(todos) },
    ],
    tools: [TOOL_DEFINITION],
    stream: true,
  });
  let first = NaN;
  let chunks = 0;
  for await (const chunk of answer)
    if (chunk.choices[0]?.delta.content && chunks++ === 0) first = performance.now() - started;
  return { first, chunks };
}

/**
 * Why a variant's run was not one tool call, or undefined if it was: two streaming model
 * requests, the first offering the tool, the second carrying the tool's result (which only
 * running the tool produces) for the call's id; and the answer's 3 chunks.
 */
export function toolRunProblem(requests: RecordedRequest[], chunks: number): string | undefined {
  if (requests.length !== 2) return `${requests.length} model requests`;
  if (!requests.every((r) => r.body.stream === true)) return 'a model request without stream';
  if (!requests[0]!.body.tools?.some((t) => t.function.name === TOOL_NAME))
    return `the first request does not offer ${TOOL_NAME}`;
  const result = requests[1]!.body.messages?.find(
    (m) => m.role === 'tool' && m.tool_call_id === CALL_ID,
  );
  if (!JSON.stringify(result?.content ?? '').includes('Todo list updated:'))
    return `the second request has no tool result: ${JSON.stringify(result)}`;
  if (chunks !== 3) return `${chunks} text chunks`;
  return undefined;
}
