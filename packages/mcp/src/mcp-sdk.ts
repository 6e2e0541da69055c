/**
 * The parts of the MCP SDK this package uses, loaded by the first `connectMcp`: a role that
 * never connects to an MCP server (the gateway, an idle api or worker) never loads the SDK and
 * its schemas (docs/BENCHMARKS.md, "Footprint").
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { SSEClientTransport, SseError } from '@modelcontextprotocol/sdk/client/sse.js';
import type {
  StreamableHTTPClientTransport,
  StreamableHTTPError,
} from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { ReadBuffer, serializeMessage } from '@modelcontextprotocol/sdk/shared/stdio.js';
import type { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';

export interface McpSdk {
  readonly Client: typeof Client;
  readonly SSEClientTransport: typeof SSEClientTransport;
  readonly SseError: typeof SseError;
  readonly StreamableHTTPClientTransport: typeof StreamableHTTPClientTransport;
  readonly StreamableHTTPError: typeof StreamableHTTPError;
  readonly ReadBuffer: typeof ReadBuffer;
  readonly serializeMessage: typeof serializeMessage;
  readonly ErrorCode: typeof ErrorCode;
  readonly McpError: typeof McpError;
}

let loaded: McpSdk | undefined;

/** Loads the SDK once; later calls return the same modules. */
export async function loadMcpSdk(): Promise<McpSdk> {
  if (loaded) return loaded;
  const [client, sse, http, stdio, types] = await Promise.all([
    import('@modelcontextprotocol/sdk/client/index.js'),
    import('@modelcontextprotocol/sdk/client/sse.js'),
    import('@modelcontextprotocol/sdk/client/streamableHttp.js'),
    import('@modelcontextprotocol/sdk/shared/stdio.js'),
    import('@modelcontextprotocol/sdk/types.js'),
  ]);
  return (loaded = {
    Client: client.Client,
    SSEClientTransport: sse.SSEClientTransport,
    SseError: sse.SseError,
    StreamableHTTPClientTransport: http.StreamableHTTPClientTransport,
    StreamableHTTPError: http.StreamableHTTPError,
    ReadBuffer: stdio.ReadBuffer,
    serializeMessage: stdio.serializeMessage,
    ErrorCode: types.ErrorCode,
    McpError: types.McpError,
  });
}

/**
 * The loaded SDK, for code that only runs within or after `connectMcp` (transports, error
 * classification, connections), which loads it first.
 */
export function mcpSdk(): McpSdk {
  if (!loaded) throw new Error('the MCP SDK is not loaded yet (connectMcp loads it)');
  return loaded;
}
