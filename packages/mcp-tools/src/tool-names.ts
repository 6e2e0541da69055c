import { createHash } from 'node:crypto';
import { sanitizeToolName } from '@agent-backend/agent-runtime';

/** Longest OpenAI function name. */
const MAX_NAME = 64;
/** Characters kept of a name that is suffixed: 64 minus `__` and 8 hex digits. */
const SUFFIXED_BASE = MAX_NAME - 10;

/**
 * Allocates the function names of one run's MCP tools so they cannot collide: with each other,
 * across servers, or with the run's own tools (which never start with `mcp_`).
 *
 * The readable form is `mcp_<server>__<tool>`, each part reduced to `[A-Za-z0-9_-]`. When that
 * form is over 64 characters or already taken (two tools whose names differ only in characters
 * that were replaced, or two entries with the same server name), it is cut to 54 characters
 * and suffixed with `__` and 8 hex digits of a SHA-256 over the server's URL, its name and the
 * tool's name: stable across runs, so the conversation history keeps making sense.
 */
export class ToolNameAllocator {
  private readonly used = new Set<string>();

  /** The name for `toolName` of server `serverName` at `serverUrl`; never returns a used name. */
  allocate(serverName: string, serverUrl: string, toolName: string): string {
    const readable = `mcp_${part(serverName)}__${part(toolName)}`;
    if (readable.length <= MAX_NAME && !this.used.has(readable)) return this.take(readable);
    for (let attempt = 0; ; attempt++) {
      const hash = createHash('sha256')
        .update(`${serverUrl}\0${serverName}\0${toolName}\0${attempt}`)
        .digest('hex')
        .slice(0, 8);
      const name = `${readable.slice(0, SUFFIXED_BASE)}__${hash}`;
      if (!this.used.has(name)) return this.take(name);
    }
  }

  private take(name: string): string {
    this.used.add(name);
    return name;
  }
}

/** One part of a name: invalid characters become `_`; an empty part becomes `x`. */
function part(name: string): string {
  return name === '' ? 'x' : sanitizeToolName(name);
}
