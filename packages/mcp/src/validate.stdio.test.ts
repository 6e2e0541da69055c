import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { McpServerConfig } from './connect.js';
import { StdioPolicy } from './stdio-policy.js';
import { fixtureStdioCommand } from './testing/stdio-command.js';
import { validateMcpServer } from './validate.js';
import { countingSpawn, dev, failure } from './testing/validate-helpers.js';

describe('validateMcpServer over stdio', () => {
  const dir = mkdtempSync(join(tmpdir(), 'mcp-stdio-'));
  const stdio = (base_url: string): McpServerConfig => ({
    name: 'local',
    base_url,
    transport_type: 'stdio',
  });

  it('runs an allowlisted command, lists with pagination and ends the process tree', async () => {
    const grandchild = join(dir, 'grandchild.pid');
    const spawn = countingSpawn();
    const result = await validateMcpServer(
      stdio(
        fixtureStdioCommand(
          '--tools',
          '5',
          '--page-size',
          '2',
          '--no-prompts',
          '--grandchild',
          grandchild,
        ),
      ),
      dev(spawn),
    );
    expect(result).toMatchObject({ tool_count: 5, prompt_count: 0, prompts: [] });
    expect(spawn.calls).toBe(1);
    const pid = Number(readFileSync(grandchild, 'utf8'));
    const alive = () => {
      try {
        process.kill(pid, 0);
        return true;
      } catch {
        return false;
      }
    };
    await expect.poll(alive, { timeout: 5_000 }).toBe(false);
  });

  it('gives the process only PATH and HOME and the temp directory, and skips stdout noise', async () => {
    const result = await validateMcpServer(
      stdio(fixtureStdioCommand('--env-report', '--stdout-noise')),
      dev(),
    );
    const report = JSON.parse(result.tools.find((t) => t.name === 'env-report')!.description) as {
      env: string[];
      cwd: string;
    };
    // Node adds nothing of its own to the child environment; tsx may read but does not add keys.
    expect(report.env.filter((k) => !['PATH', 'HOME'].includes(k))).toEqual([]);
    expect(report.cwd).toBe(tmpdir());
  });

  it('refuses a command that is not allowlisted without spawning anything', async () => {
    const marker = join(dir, 'refused-marker');
    const spawn = countingSpawn();
    for (const line of [
      `node -e "require('fs').writeFileSync('${marker}', 'x')"`,
      `sh -c "touch ${marker}"`,
      `touch ${marker}`,
    ]) {
      const error = await failure(validateMcpServer(stdio(line), dev(spawn)));
      expect(error.kind, line).toBe('command_refused');
    }
    expect(spawn.calls).toBe(0);
    expect(existsSync(marker)).toBe(false);
    // The same marker mechanism works when the command is allowed, so the check above can fail.
    await validateMcpServer(stdio(fixtureStdioCommand('--marker', marker)), dev(spawn));
    expect(existsSync(marker)).toBe(true);
  });

  it('reports a process that exits early, and one that is not found', async () => {
    const exited = await failure(
      validateMcpServer(stdio(fixtureStdioCommand('--exit', '3')), dev()),
    );
    expect(exited.kind).toBe('process_failed');
    expect(exited.detail).toContain('exited with code 3');

    const missing = await failure(
      validateMcpServer(stdio('/nonexistent/mcp-server'), {
        ...dev(),
        stdio: new StdioPolicy(['/nonexistent/mcp-server']),
      }),
    );
    expect(missing.kind).toBe('process_failed');
    expect(missing.detail).toContain('was not found');
  });

  it('times out on a slow stdio server and ends it', async () => {
    const marker = join(dir, 'slow.pid');
    const error = await failure(
      validateMcpServer(stdio(fixtureStdioCommand('--marker', marker, '--slow', '60000')), dev(), {
        timeoutMs: 6_000,
      }),
    );
    expect(error.kind).toBe('timeout');
    const pid = Number(readFileSync(marker, 'utf8'));
    await expect
      .poll(() => {
        try {
          process.kill(pid, 0);
          return true;
        } catch {
          return false;
        }
      })
      .toBe(false);
  });
});
