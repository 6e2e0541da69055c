import { z } from 'zod';
import { checkMcpBaseUrl, mcpServerShape } from './mcp-server.js';

export { McpTransportType } from './mcp-server.js';

/** Body of `POST /api/tools/mcp/validate` (spec 4.4). */
export const McpValidateRequest = z.object(mcpServerShape).superRefine(checkMcpBaseUrl);
export type McpValidateRequest = z.infer<typeof McpValidateRequest>;
export type McpValidateRequestInput = z.input<typeof McpValidateRequest>;

/** A tool an MCP server offers (spec 2.9). MCP makes `description` optional; we answer `''`. */
export const McpToolDescriptor = z.object({
  name: z.string(),
  description: z.string().default(''),
});
export type McpToolDescriptor = z.infer<typeof McpToolDescriptor>;

/**
 * One argument of an MCP prompt. The spec only says "array"; this is the MCP `PromptArgument`
 * shape, so clients can render a form from it.
 */
export const McpPromptArgument = z.object({
  name: z.string(),
  description: z.string().optional(),
  required: z.boolean().optional(),
});
export type McpPromptArgument = z.infer<typeof McpPromptArgument>;

/** A prompt an MCP server offers (spec 2.9). */
export const McpPromptDescriptor = z.object({
  name: z.string(),
  description: z.string().default(''),
  arguments: z.array(McpPromptArgument).default([]),
});
export type McpPromptDescriptor = z.infer<typeof McpPromptDescriptor>;

/** 200 answer of MCP validation (spec 4.4). Failures use other bodies, so `status` is a literal. */
export const McpValidateResponse = z.object({
  success: z.boolean(),
  status: z.literal('connected'),
  tools: z.array(McpToolDescriptor),
  tool_count: z.number().int().nonnegative(),
  prompts: z.array(McpPromptDescriptor),
  prompt_count: z.number().int().nonnegative(),
});
export type McpValidateResponse = z.infer<typeof McpValidateResponse>;

/**
 * 408 body of MCP validation when the server does not answer in time (spec 7); the spec fixes
 * this shape, and `detail` names the server URL.
 */
export const DetailErrorBody = z.object({
  detail: z.string(),
});
export type DetailErrorBody = z.infer<typeof DetailErrorBody>;
