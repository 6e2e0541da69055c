import type { Prompt, Tool } from '@modelcontextprotocol/sdk/types.js';
import type {
  McpPromptDescriptor,
  McpToolDescriptor,
  McpValidateResponse,
} from '@agent-backend/protocol';
import { connectMcp, type McpPolicy, type McpServerConfig } from './connect.js';
import { McpConnectError } from './errors.js';
import { serverPhrase } from './classify-error.js';
import { parseCommandLine } from './command-line.js';
import { displayUrl } from './redact.js';

/** Default deadline of one validation: connect, handshake and every listing page. */
export const DEFAULT_VALIDATE_TIMEOUT_MS = 15_000;

export interface ValidateOptions {
  /** Deadline for the whole validation. @default DEFAULT_VALIDATE_TIMEOUT_MS */
  timeoutMs?: number;
  /** Gives up early (the HTTP client went away). */
  signal?: AbortSignal;
}

/**
 * Spec 4.4: connects to the server, lists every tool and prompt (all pages), closes the session,
 * and answers with the descriptors and their counts. One deadline covers all of it; when it
 * passes, the failure is `timeout` and its detail names the server URL (spec 7). Every other
 * failure is an {@link McpConnectError} with a detail for the user.
 */
export async function validateMcpServer(
  config: McpServerConfig,
  policy: McpPolicy,
  options: ValidateOptions = {},
): Promise<McpValidateResponse> {
  const timeoutMs = options.timeoutMs ?? DEFAULT_VALIDATE_TIMEOUT_MS;
  const started = Date.now();
  const deadline = AbortSignal.timeout(timeoutMs);
  const signal = options.signal ? AbortSignal.any([options.signal, deadline]) : deadline;
  const remaining = () => Math.max(1, timeoutMs - (Date.now() - started));
  try {
    const connection = await connectMcp(config, policy, { signal, timeoutMs });
    try {
      const tools = await connection.listTools({ signal, timeoutMs: remaining() });
      const prompts = await connection.listPrompts({ signal, timeoutMs: remaining() });
      return {
        success: true,
        status: 'connected',
        tools: tools.map(toolDescriptor),
        tool_count: tools.length,
        prompts: prompts.map(promptDescriptor),
        prompt_count: prompts.length,
      };
    } finally {
      await connection.close();
    }
  } catch (error) {
    // Every step ran under this one deadline (a listing reports it as its caller's abort, or as
    // its own timeout with the time that was left): report it once, with the whole deadline.
    const expired =
      deadline.aborted ||
      (error instanceof McpConnectError && (error.kind === 'timeout' || error.kind === 'aborted'));
    if (expired && !(options.signal?.aborted ?? false)) {
      const stdio = config.transport_type === 'stdio';
      const target = stdio
        ? `stdio command "${commandName(config.base_url)}"`
        : displayUrl(config.base_url);
      throw new McpConnectError(
        'timeout',
        `Timed out after ${timeoutMs} ms waiting for ${serverPhrase(target, stdio)}.`,
        { cause: error },
      );
    }
    throw error;
  }
}

function commandName(commandLine: string): string {
  try {
    return parseCommandLine(commandLine)[0] ?? '';
  } catch {
    return '';
  }
}

function toolDescriptor(tool: Tool): McpToolDescriptor {
  return { name: tool.name, description: tool.description ?? '' };
}

function promptDescriptor(prompt: Prompt): McpPromptDescriptor {
  return {
    name: prompt.name,
    description: prompt.description ?? '',
    arguments: (prompt.arguments ?? []).map((a) => ({
      name: a.name,
      ...(a.description !== undefined ? { description: a.description } : {}),
      ...(a.required !== undefined ? { required: a.required } : {}),
    })),
  };
}
