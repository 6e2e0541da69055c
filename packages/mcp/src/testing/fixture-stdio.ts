/**
 * The fixture MCP server over stdio, as a command the stdio transport can be allowed to run:
 *
 *   node --import tsx packages/mcp/src/testing/fixture-stdio.ts [flags]
 *
 * --tools N, --page-size N, --prompts N, --no-prompts   what it offers (see FixtureOptions)
 * --env-report          adds a tool `env-report` whose description is JSON { env: [names], cwd }
 * --marker PATH         writes its pid to PATH at start (proves whether it was spawned)
 * --grandchild PATH     starts a long-lived child process and writes that child's pid to PATH
 * --slow MS            waits MS before answering tools/list
 * --stdout-noise        writes a line that is not JSON-RPC to stdout first
 * --exit CODE           exits with CODE at once, before answering anything
 */
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { createFixtureServer, type FixtureOptions } from './fixture-server.js';

const args = process.argv.slice(2);
const flag = (name: string) => args.includes(name);
const value = (name: string) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
};

const exitCode = value('--exit');
if (exitCode !== undefined) process.exit(Number(exitCode));

const marker = value('--marker');
if (marker) writeFileSync(marker, String(process.pid));

const grandchildFile = value('--grandchild');
if (grandchildFile) {
  const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], {
    stdio: 'ignore',
  });
  writeFileSync(grandchildFile, String(child.pid));
}

if (flag('--stdout-noise')) process.stdout.write('starting fixture server...\n');

const options: FixtureOptions = {
  tools: Number(value('--tools') ?? 3),
  pageSize: Number(value('--page-size') ?? 1000),
  slowMs: Number(value('--slow') ?? 0),
  prompts: flag('--no-prompts') ? false : Number(value('--prompts') ?? 2),
  extraTools: flag('--env-report')
    ? [
        {
          name: 'env-report',
          description: JSON.stringify({ env: Object.keys(process.env).sort(), cwd: process.cwd() }),
          inputSchema: { type: 'object', properties: {} },
        },
      ]
    : [],
};

await createFixtureServer(options).connect(new StdioServerTransport());
