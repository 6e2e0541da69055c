import { z } from 'zod';

const FunctionToolCall = z.object({
  id: z.string().min(1),
  type: z.literal('function'),
  function: z.object({ name: z.string().min(1), arguments: z.string() }),
});

/**
 * One message of a conversation, as sent to the model and as stored (`agent_messages.message`):
 * the text-only subset of the OpenAI chat format, so stored history goes to any
 * OpenAI-compatible server unchanged. An assistant message with `tool_calls` is always followed
 * by one `tool` message per call before the next user message.
 */
export const ChatMessage = z.discriminatedUnion('role', [
  z.object({ role: z.literal('system'), content: z.string() }),
  z.object({ role: z.literal('user'), content: z.string() }),
  z.object({
    role: z.literal('assistant'),
    content: z.string().nullable(),
    tool_calls: z.array(FunctionToolCall).min(1).optional(),
  }),
  z.object({ role: z.literal('tool'), tool_call_id: z.string().min(1), content: z.string() }),
]);
export type ChatMessage = z.infer<typeof ChatMessage>;
export type AssistantMessage = Extract<ChatMessage, { role: 'assistant' }>;
export type ToolMessage = Extract<ChatMessage, { role: 'tool' }>;
