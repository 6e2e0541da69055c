import type { AgentTool } from '@agent-backend/agent-runtime';
import { McpConnectError } from '@agent-backend/mcp';
import type { McpToolEntry } from '@agent-backend/protocol';

/**
 * What the model reads when an MCP server or tool failed. An {@link McpConnectError}'s `detail`
 * is written by the service (URL without credentials, secrets scrubbed), so it may be shown;
 * anything else is reduced to a generic sentence, because its message could carry a secret.
 */
export function failureText(
  entry: McpToolEntry,
  toolName: string | undefined,
  error: unknown,
): string {
  const what = toolName
    ? `The tool "${toolName}" of MCP server "${entry.name}" failed`
    : `The MCP server "${entry.name}" is unavailable for this run`;
  if (error instanceof McpConnectError) return `${what} (${error.kind}): ${error.detail}`;
  return `${what}.`;
}

/**
 * Stands in for the tools of a server that could not be connected or listed: its description
 * tells the model the server is unavailable and why, and calling it returns that as a tool
 * error. Read-only, so it is offered in every mode and the model can always explain the gap.
 */
export function unavailableTool(name: string, entry: McpToolEntry, error: unknown): AgentTool {
  const text = failureText(entry, undefined, error);
  return {
    name,
    description: `${text} Its tools cannot be used now; tell the user instead of retrying.`.slice(
      0,
      1_024,
    ),
    parameters: { type: 'object', properties: {} },
    writes: false,
    execute: () => Promise.resolve({ content: text, isError: true }),
  };
}
