import { z } from 'zod';
import { boundedJson, WS_JSON_BOUNDS } from './json-bounds.js';

/*
 * JSON-RPC 2.0 between the server and nodes (spec 6.2, 9): the server sends `tools/call`
 * requests, nodes answer with a result or an error matched by `id`.
 */

export const JSONRPC_VERSION = '2.0';

/** Standard JSON-RPC error codes. `InternalError` is what a node sends for a failed tool. */
export const JsonRpcErrorCode = {
  ParseError: -32700,
  InvalidRequest: -32600,
  MethodNotFound: -32601,
  InvalidParams: -32602,
  InternalError: -32603,
} as const;
export type JsonRpcErrorCode = (typeof JsonRpcErrorCode)[keyof typeof JsonRpcErrorCode];

const jsonrpc = z.literal(JSONRPC_VERSION);

/** Server to node: run a tool. `id` is a UUID, unique per call, echoed by the response. */
export const ToolCallRequest = z.object({
  jsonrpc,
  id: z.string().min(1),
  method: z.literal('tools/call'),
  params: z.object({
    name: z.string().min(1),
    /** Required by the spec; `{}` when a tool takes none, so nodes can rely on an object. */
    arguments: z.record(z.string(), z.unknown()).default({}),
    session_id: z.string().optional(),
  }),
});
export type ToolCallRequest = z.infer<typeof ToolCallRequest>;
export type ToolCallRequestInput = z.input<typeof ToolCallRequest>;

/** Text a tool returned. */
export const TextContentItem = z.object({
  type: z.literal('text'),
  text: z.string(),
});
export type TextContentItem = z.infer<typeof TextContentItem>;

/**
 * An image a tool returned, base64 without a `data:` prefix. The encoding is not checked here:
 * images are large, and whoever decodes them fails anyway on bad data.
 */
export const ImageContentItem = z.object({
  type: z.literal('image'),
  data: z.string(),
  mimeType: z.string().min(1),
});
export type ImageContentItem = z.infer<typeof ImageContentItem>;

/** One item of a tool result's `content`. Other MCP content types are not part of this protocol. */
export const ToolContentItem = z.discriminatedUnion('type', [TextContentItem, ImageContentItem]);
export type ToolContentItem = z.infer<typeof ToolContentItem>;

/** The `result` of a successful `tools/call`. */
export const ToolCallResult = z.object({
  content: z.array(ToolContentItem),
  /** The tool ran but failed; the call itself succeeded. @default false */
  isError: z.boolean().default(false),
  /** A screenshot taken after the tool ran, base64 image data. */
  _screenshot: z.string().optional(),
});
export type ToolCallResult = z.infer<typeof ToolCallResult>;
export type ToolCallResultInput = z.input<typeof ToolCallResult>;

/** Node to server: the tool call was carried out (it may still report `isError`). */
export const JsonRpcSuccess = z.object({
  jsonrpc,
  id: z.string().min(1),
  result: ToolCallResult,
});
export type JsonRpcSuccess = z.infer<typeof JsonRpcSuccess>;

/**
 * Node to server: the call failed. `id` may be null, as JSON-RPC allows when the request could
 * not be read; such an error matches no pending call and is only logged.
 */
export const JsonRpcError = z.object({
  jsonrpc,
  id: z.string().min(1).nullable(),
  error: z.object({
    code: z.number().int(),
    message: z.string(),
    data: boundedJson(z.unknown(), WS_JSON_BOUNDS).optional(),
  }),
});
export type JsonRpcError = z.infer<typeof JsonRpcError>;

/**
 * Any response from a node. A plain union (JSON-RPC has no discriminator field): an object with
 * `result` is a success, one with `error` an error.
 */
export const JsonRpcResponse = z.union([JsonRpcSuccess, JsonRpcError]);
export type JsonRpcResponse = z.infer<typeof JsonRpcResponse>;

/**
 * The `result` of a well-formed {@link JsonRpcSuccess} checked by hand: `raw`'s own `result`
 * object (not a copy; unknown keys stay, which {@link parseToolCallResult} does not read) when
 * {@link JsonRpcResponse} would parse `raw` as a success with this result; undefined for anything
 * else (an error response, a malformed one), which then goes to the schema. Every tool call's
 * answer is checked: the schema's parse (which copies every object) was a measurable share of a
 * caller's time.
 */
export function toolCallSuccessOf(raw: unknown): ToolCallResultInput | undefined {
  if (!isObject(raw) || raw.jsonrpc !== JSONRPC_VERSION) return undefined;
  const { id, result } = raw;
  if (typeof id !== 'string' || id.length === 0 || !isObject(result)) return undefined;
  const { content, isError, _screenshot: screenshot } = result;
  if (!Array.isArray(content)) return undefined;
  if (isError !== undefined && typeof isError !== 'boolean') return undefined;
  if (screenshot !== undefined && typeof screenshot !== 'string') return undefined;
  for (const item of content as unknown[]) {
    if (!isObject(item)) return undefined;
    if (item.type === 'text') {
      if (typeof item.text !== 'string') return undefined;
    } else if (item.type === 'image') {
      const { data, mimeType } = item;
      if (typeof data !== 'string' || typeof mimeType !== 'string' || mimeType.length === 0)
        return undefined;
    } else return undefined;
  }
  return result as ToolCallResultInput;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A tool result reduced to what the agent runtime needs. */
export interface ParsedToolResult {
  /** `!isError`. */
  success: boolean;
  /** The text items, joined with `\n`. */
  text: string;
  images: { data: string; mimeType: string }[];
  /** `_screenshot`, when the node sent one. */
  screenshot?: string;
}

/** Extracts the text, images and screenshot of a tool result and maps `isError` (spec 6.2). */
export function parseToolCallResult(result: ToolCallResultInput): ParsedToolResult {
  const texts: string[] = [];
  const images: ParsedToolResult['images'] = [];
  for (const item of result.content) {
    if (item.type === 'text') texts.push(item.text);
    else images.push({ data: item.data, mimeType: item.mimeType });
  }
  const parsed: ParsedToolResult = { success: !result.isError, text: texts.join('\n'), images };
  if (result._screenshot !== undefined) parsed.screenshot = result._screenshot;
  return parsed;
}
