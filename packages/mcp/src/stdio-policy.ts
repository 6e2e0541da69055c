import { CommandLineError, parseCommandLine } from './command-line.js';
import { McpConnectError } from './errors.js';

/**
 * Decides which stdio command lines may run. Each allowlist entry is itself a command line
 * (`MCP_STDIO_ALLOWLIST` entries are comma-separated): a request is allowed when its argument
 * array *starts with* the argument array of an entry, token for token.
 *
 * - An entry `mcp-server-everything` allows `mcp-server-everything stdio` and any other arguments.
 * - An entry `node /opt/mcp/server.js` allows that script with any further arguments, and not
 *   `node -e ...`: launchers and interpreters (`node`, `npx`, `uvx`, `python`, `sh`) must only
 *   ever be listed with the script or package pinned, or the allowlist allows anything.
 * - The command token is compared exactly, never by basename: `mcp-server-everything` does not
 *   allow `/tmp/x/mcp-server-everything`. A bare name runs whatever the service's `PATH` finds,
 *   so absolute paths are the stricter choice.
 *
 * Entries are parsed once, when the policy is built, so a malformed allowlist fails at start.
 */
export class StdioPolicy {
  readonly #entries: readonly string[][];

  constructor(allowlist: readonly string[]) {
    this.#entries = allowlist.map(parseEntry);
  }

  /**
   * Returns the argument array to spawn; throws {@link McpConnectError} `command_refused` (not
   * on the list, or stdio disabled) or `invalid_config` (a command line that does not parse).
   */
  allow(commandLine: string): string[] {
    return allowStdioCommand(commandLine, this.#entries);
  }
}

function allowStdioCommand(commandLine: string, entries: readonly string[][]): string[] {
  if (entries.length === 0) {
    throw new McpConnectError(
      'command_refused',
      'The stdio transport is disabled on this server (no command is allowed). Use streamable_http or sse, or ask the operator to set MCP_STDIO_ALLOWLIST.',
    );
  }
  let argv: string[];
  try {
    argv = parseCommandLine(commandLine);
  } catch (error) {
    if (!(error instanceof CommandLineError)) throw error;
    throw new McpConnectError('invalid_config', `Invalid stdio command line: ${error.message}.`);
  }
  if (entries.some((entry) => entry.every((token, i) => argv[i] === token))) return argv;

  const command = argv[0]!;
  const sameCommand = entries.some((entry) => entry[0] === command);
  throw new McpConnectError(
    'command_refused',
    sameCommand
      ? `The stdio command "${command}" is allowed on this server only with specific arguments, and these are not among them.`
      : `The stdio command "${command}" is not on this server's allowlist; only commands the operator listed in MCP_STDIO_ALLOWLIST can run.`,
  );
}

function parseEntry(entry: string): string[] {
  try {
    return parseCommandLine(entry);
  } catch (error) {
    throw new TypeError(`MCP_STDIO_ALLOWLIST entry "${entry}": ${(error as Error).message}`);
  }
}
