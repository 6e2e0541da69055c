import { z } from 'zod';

/*
 * Events of the agent SSE stream (spec 6.1). Each is sent as one `data: <JSON>` line.
 *
 * To add an event type, define its schema here and add it to `AgentEvent`; clients that do not
 * know a type are expected to ignore it, so adding one is not a breaking change.
 */

/** A piece of the answer text; concatenating all chunks of a run gives the answer. */
export const MessageChunkEvent = z.object({
  type: z.literal('message_chunk'),
  content: z.string(),
});
export type MessageChunkEvent = z.infer<typeof MessageChunkEvent>;

/** The model called a tool; `tool_args` are the arguments it chose. */
export const ToolCallEvent = z.object({
  type: z.literal('tool_call'),
  tool_name: z.string(),
  tool_args: z.record(z.string(), z.unknown()),
});
export type ToolCallEvent = z.infer<typeof ToolCallEvent>;

/** What a tool returned, as text. */
export const ToolResultEvent = z.object({
  type: z.literal('tool_result'),
  tool_name: z.string(),
  result: z.string(),
});
export type ToolResultEvent = z.infer<typeof ToolResultEvent>;

/** The run finished; `session_id` continues the conversation (generated when none was sent). */
export const DoneEvent = z.object({
  type: z.literal('done'),
  session_id: z.string(),
});
export type DoneEvent = z.infer<typeof DoneEvent>;

/**
 * The run failed after the stream had started, so an HTTP status can no longer say so. Not in
 * the spec. It is the last event: the service closes the stream after it, without `done`.
 */
export const ErrorEvent = z.object({
  type: z.literal('error'),
  code: z.string().min(1),
  message: z.string(),
});
export type ErrorEvent = z.infer<typeof ErrorEvent>;

/** Any event of the agent stream, selected by `type`. */
export const AgentEvent = z.discriminatedUnion('type', [
  MessageChunkEvent,
  ToolCallEvent,
  ToolResultEvent,
  DoneEvent,
  ErrorEvent,
]);
export type AgentEvent = z.infer<typeof AgentEvent>;
export type AgentEventType = AgentEvent['type'];
