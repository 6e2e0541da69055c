import type { AgentTool, RunInfo, ToolOutput } from '@agent-backend/agent-runtime';
import type { Logger } from '@agent-backend/logger';
import {
  connectMcp,
  displayUrl,
  McpConnectError,
  type McpFailureKind,
  type McpPolicy,
  type McpServerConfig,
} from '@agent-backend/mcp';
import type { McpToolEntry } from '@agent-backend/protocol';
import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import { ConnectionPool, type ConnectionPoolOptions } from './connection-pool.js';
import { withLinkedSignal } from './linked-signal.js';
import { failureText, unavailableTool } from './unavailable-tool.js';
import { resultImages, resultText } from './result-text.js';
import { ToolNameAllocator } from './tool-names.js';

export interface McpToolsOptions extends ConnectionPoolOptions {
  /** SSRF guard and stdio allowlist: the same policy as `POST /api/tools/mcp/validate`. */
  readonly policy: McpPolicy;
  readonly logger: Logger;
  /** Deadline per server for connecting and listing its tools, at the start of a run. @default 10_000 */
  readonly listTimeoutMs?: number;
  /** Deadline of one tool call. @default 60_000 */
  readonly callTimeoutMs?: number;
}

/** The tool source of a process plus the pool it owns. */
export interface McpTools {
  /** Adds the tools of the run's `mcp` tool entries. */
  /** The tool source (see `ToolSource`), answering with tools only. */
  readonly source: (run: RunInfo) => Promise<AgentTool[]>;
  readonly pool: ConnectionPool;
  /** Closes every pooled connection (on shutdown). */
  close(): Promise<void>;
}

/** Listing failures a fresh connection can cure; refusals and timeouts would only repeat. */
const RETRYABLE: ReadonlySet<McpFailureKind> = new Set([
  'dns_failed',
  'unreachable',
  'not_mcp',
  'handshake',
]);

/** Longest tool description offered to the model. */
const MAX_DESCRIPTION = 1_024;

/**
 * MCP servers as agent tools (docs/mcp.md, "MCP servers as agent tools"). Per run, every `mcp`
 * entry of the request is connected (in parallel, through the pool, each within
 * `listTimeoutMs`) and its tools are offered as `mcp_<server>__<tool>`. A server that cannot be
 * reached or refuses is logged and replaced by one stand-in tool whose description and result
 * tell the model why, so the model can explain it instead of guessing. Tool calls run with
 * `callTimeoutMs` and the run's signal; every failure is a tool error, never a failed run.
 */
export function createMcpTools(options: McpToolsOptions): McpTools {
  const listTimeoutMs = options.listTimeoutMs ?? 10_000;
  const callTimeoutMs = options.callTimeoutMs ?? 60_000;
  const pool = new ConnectionPool(
    (config, signal) => connectMcp(config, options.policy, { signal, timeoutMs: listTimeoutMs }),
    options,
  );

  const source = async (run: RunInfo): Promise<AgentTool[]> => {
    const entries = dedupe(run.request.capabilities.mcpServers);
    if (entries.length === 0) return [];
    const listed = await Promise.all(entries.map((entry) => listServer(run, entry)));
    const names = new ToolNameAllocator();
    const tools: AgentTool[] = [];
    listed.forEach((result, i) => {
      const entry = entries[i]!;
      if ('error' in result) {
        tools.push(
          unavailableTool(
            names.allocate(entry.name, entry.base_url, 'unavailable'),
            entry,
            result.error,
          ),
        );
        return;
      }
      for (const tool of result.tools) {
        tools.push(
          toAgentTool(run, entry, tool, names.allocate(entry.name, entry.base_url, tool.name)),
        );
      }
    });
    return tools;
  };

  async function listServer(
    run: RunInfo,
    entry: McpToolEntry,
  ): Promise<{ tools: Tool[] } | { error: unknown }> {
    const config = serverConfig(entry);
    const list = () =>
      withLinkedSignal(run.signal, (signal) =>
        pool.use(run.userId, config, signal, (connection) =>
          connection.listTools({ signal, timeoutMs: listTimeoutMs }),
        ),
      );
    try {
      return { tools: await list() };
    } catch (first) {
      // A pooled session the server has forgotten (restart, its own idle timeout) fails once;
      // listing is read-only, so one retry on a fresh connection is safe.
      if (first instanceof McpConnectError && RETRYABLE.has(first.kind) && !run.signal.aborted) {
        try {
          return { tools: await list() };
        } catch (error) {
          return { error: logged(run, entry, error) };
        }
      }
      return { error: logged(run, entry, first) };
    }
  }

  function logged(run: RunInfo, entry: McpToolEntry, error: unknown): unknown {
    options.logger.warn(
      {
        runId: run.runId,
        sessionId: run.sessionId,
        mcp: {
          name: entry.name,
          transport: entry.transport_type,
          server: entry.transport_type === 'stdio' ? undefined : displayUrl(entry.base_url),
          kind: error instanceof McpConnectError ? error.kind : 'internal',
        },
      },
      'mcp server unavailable for this run; its tools are missing',
    );
    return error;
  }

  function toAgentTool(run: RunInfo, entry: McpToolEntry, tool: Tool, name: string): AgentTool {
    const config = serverConfig(entry);
    const about = `(tool "${tool.name}" of MCP server "${entry.name}")`;
    const description = tool.description ? `${tool.description} ${about}` : `Tool ${about}.`;
    const { $schema: _ignored, ...schema } = tool.inputSchema as Record<string, unknown>;
    return {
      name,
      description: description.slice(0, MAX_DESCRIPTION),
      parameters: { ...schema, type: 'object' },
      // MCP's default for readOnlyHint is false: only an explicit read-only tool is not a write.
      writes: tool.annotations?.readOnlyHint !== true,
      async execute(args, context): Promise<ToolOutput> {
        try {
          const result = await withLinkedSignal(context.signal, (signal) =>
            pool.use(run.userId, config, signal, (connection) =>
              connection.callTool(tool.name, args, { signal, timeoutMs: callTimeoutMs }),
            ),
          );
          const images = resultImages(result);
          return {
            content: resultText(result),
            ...(result.isError ? { isError: true } : {}),
            ...(images.length > 0 ? { images } : {}),
          };
        } catch (error) {
          return { content: failureText(entry, tool.name, error), isError: true };
        }
      },
    };
  }

  return { source, pool, close: () => pool.close() };
}

/** The connection-relevant part of an entry. */
function serverConfig(entry: McpToolEntry): McpServerConfig {
  return {
    name: entry.name,
    base_url: entry.base_url,
    transport_type: entry.transport_type,
    api_key: entry.api_key,
    headers: entry.headers,
  };
}

/** The same server listed twice (same name, URL and transport) is offered once. */
function dedupe(entries: readonly McpToolEntry[]): McpToolEntry[] {
  const seen = new Set<string>();
  return entries.filter((entry) => {
    const key = JSON.stringify([entry.name, entry.transport_type, entry.base_url]);
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}
