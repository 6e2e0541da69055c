import { describe, expect, it } from 'vitest';
import { McpConnectError } from './errors.js';
import { StdioPolicy } from './stdio-policy.js';

const refusal = (policy: StdioPolicy, line: string) => {
  try {
    policy.allow(line);
  } catch (error) {
    return error as McpConnectError;
  }
  throw new Error(`expected ${line} to be refused`);
};

describe('StdioPolicy', () => {
  const policy = new StdioPolicy([
    'mcp-server-everything',
    'node /opt/mcp/server.js',
    `'/opt/my tools/mcp' --safe`,
  ]);

  it('allows a listed command with any further arguments', () => {
    expect(policy.allow('mcp-server-everything')).toEqual(['mcp-server-everything']);
    expect(policy.allow('mcp-server-everything stdio')).toEqual(['mcp-server-everything', 'stdio']);
    expect(policy.allow('node /opt/mcp/server.js --port 1')).toEqual([
      'node',
      '/opt/mcp/server.js',
      '--port',
      '1',
    ]);
    expect(policy.allow(`"/opt/my tools/mcp" --safe -v`)).toEqual([
      '/opt/my tools/mcp',
      '--safe',
      '-v',
    ]);
  });

  it('refuses commands that are not listed, also by another path to the same name', () => {
    for (const line of [
      'sh -c "touch /tmp/x"',
      'bash',
      '/tmp/evil/mcp-server-everything',
      './mcp-server-everything',
      'mcp-server-everything2',
    ]) {
      const error = refusal(policy, line);
      expect(error, line).toBeInstanceOf(McpConnectError);
      expect(error.kind).toBe('command_refused');
      expect(error.detail).toContain('not on this server');
    }
  });

  it('refuses a listed launcher whose pinned arguments differ', () => {
    for (const line of [
      `node -e "require('fs').writeFileSync('/tmp/x', '')"`,
      'node /opt/mcp/other.js',
      'node',
      "'/opt/my tools/mcp'",
    ]) {
      const error = refusal(policy, line);
      expect(error.kind, line).toBe('command_refused');
      expect(error.detail).toContain('only with specific arguments');
    }
  });

  it('refuses everything when the allowlist is empty', () => {
    const error = refusal(new StdioPolicy([]), 'mcp-server-everything');
    expect(error.kind).toBe('command_refused');
    expect(error.detail).toContain('disabled');
  });

  it('reports a command line that does not parse as invalid, not as refused', () => {
    const error = refusal(policy, 'mcp-server-everything; touch /tmp/x');
    expect(error.kind).toBe('invalid_config');
    expect(error.detail).toContain('shell syntax');
  });

  it('rejects a malformed allowlist entry when the policy is built', () => {
    expect(() => new StdioPolicy(['ok', 'bad | entry'])).toThrow(/MCP_STDIO_ALLOWLIST entry/);
  });
});
