/**
 * The code a reader copies from the README, docs/clients.md and the client package's
 * README works. Their shell blocks run as typed (npm forms included) and their TypeScript
 * blocks run with tsx, against an all-in-one started here instead of `localhost:8000`. Every
 * TypeScript block is either run or listed with the reason it is not, so a new one is not
 * silently left out.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  REPO_ROOT,
  runEntry,
  startScriptedModel,
  startServiceProcess,
  textReply,
  type ScriptedModel,
  type ServiceProcess,
} from '@agent-backend/testing';
import {
  codeBlocks,
  jsonObjects,
  keeps,
  promisedAnswers,
  runShellBlocks,
  type CodeBlock,
} from './doc-blocks.js';
import { requireBuild, tempDir } from './helpers.js';

const MAIN = 'apps/all-in-one/dist/main.js';
const TOKEN_ISSUE = 'apps/all-in-one/dist/token-issue.js';
const SIMULATOR = 'packages/node-client/dist/simulate-node.js';

/** How each TypeScript block of a page is run (in page order), or why it is not. */
interface TsExample {
  /** Declarations the block takes for granted (imports, a token). */
  prelude?: string;
  /** Runs after the block: checks that what it set up works, prints what the test reads. */
  epilogue?: string;
  /** What its output must contain. */
  prints?: string[];
  skip?: string;
}

const CALL_TOOL = (tool: string, args: string) => `
const called = await fetch(process.env.ORIGIN + '/node/tools/call', {
  method: 'POST',
  headers: { authorization: 'Bearer ' + process.env.EXAMPLE_TOKEN, 'content-type': 'application/json' },
  body: JSON.stringify({ node_type: 'desktop', tool_name: '${tool}', arguments: ${args} }),
});
console.log('CALLED', await called.text());
await node.close();`;

const TS_EXAMPLES: Record<string, TsExample[]> = {
  'docs/clients.md': [
    {
      prelude: `import { WebClient } from '@agent-backend/node-client';
const token = process.env.EXAMPLE_TOKEN!;`,
      prints: ['wf_summarize_page', 'success: true'],
    },
    {
      prelude: `import { readFile } from 'node:fs/promises';
const refresh = async () => process.env.EXAMPLE_TOKEN!;
const cachedToken = async () => process.env.EXAMPLE_TOKEN!;`,
      epilogue: CALL_TOOL('read_file', '{ path: process.env.EXAMPLE_FILE }'),
      prints: ['CALLED {"success":true,"text":"read by the docs example"'],
    },
    {
      prelude: `import { WebClient } from '@agent-backend/node-client';
const token = process.env.EXAMPLE_TOKEN!;`,
      prints: ['true Filled 1 fields.', 'true Summary of https://example.com'],
    },
  ],
  'packages/client/README.md': [
    {
      prelude: `const refreshToken = process.env.EXAMPLE_REFRESH_TOKEN!;
const apiKey = 'sk-docs-example';`,
      prints: ['Your open issues: none.', 'session '],
    },
    { skip: 'a fragment inside the loop of the block before (run, runId, request_id)' },
    {
      prelude: `import { AgentBackendClient } from '@agent-backend/client';
const client = new AgentBackendClient({ baseUrl: process.env.ORIGIN!, token: process.env.EXAMPLE_TOKEN! });
const signal = new AbortController().signal;
const message = 'Hello';
const llm_config = { baseUrl: 'http://127.0.0.1:9/v1', apiKey: 'sk-docs-example', modelName: 'm' };`,
      epilogue: `console.log('SKILLS', Array.isArray(skills), typeof run.events);`,
      prints: ['SKILLS true function'],
    },
    {
      prelude: `const currentAccessToken = () => process.env.EXAMPLE_TOKEN!;`,
      epilogue: CALL_TOOL('echo', `{ text: 'hi' }`),
      prints: ['CALLED {"success":true,"text":"hi"'],
    },
    {
      skip: "the browser's WebSocket (tests/client-sdk.browser.test.ts runs it in Chromium)",
    },
  ],
};

describe('code blocks of the README and the client docs', () => {
  const dataDir = tempDir('docs-examples');
  const scratch = tempDir('docs-examples-scratch');
  let service: ServiceProcess;
  let model: ScriptedModel;
  let token: string;
  let refreshToken: string;
  let extension: ReturnType<typeof spawn> | undefined;

  beforeAll(async () => {
    requireBuild(MAIN, TOKEN_ISSUE, SIMULATOR, 'packages/client/dist/node.js');
    model = await startScriptedModel();
    service = await startServiceProcess({
      entry: MAIN,
      env: {
        DATA_DIR: dataDir,
        LLM_ALLOWED_ORIGINS: new URL(model.baseUrl).origin,
      },
    });
    const issued = await runEntry(TOKEN_ISSUE, ['alice'], { DATA_DIR: dataDir });
    ({ accessToken: token, refreshToken } = JSON.parse(issued.stdout) as {
      accessToken: string;
      refreshToken: string;
    });
  }, 120_000);
  afterAll(async () => {
    extension?.kill('SIGKILL');
    await service?.stop('SIGKILL');
    await model?.close();
  });

  const shellBlocks = (page: string) =>
    codeBlocks(page).filter((b) => b.lang === 'sh' || b.lang === 'bash');

  /** Runs a page's shell blocks and checks every answer they promise. */
  async function runPage(page: string): Promise<void> {
    const blocks = shellBlocks(page);
    const run = await runShellBlocks(blocks, {
      origin: service.url,
      scratch,
      env: { DATA_DIR: dataDir },
    });
    expect(run.code, `${run.script}\n--- stderr:\n${run.stderr}`).toBe(0);
    const answers = jsonObjects(run.stdout);
    for (const promised of blocks.flatMap(promisedAnswers)) {
      expect(
        answers.some((answer) => keeps(promised, answer)),
        `${JSON.stringify(promised)} in\n${run.stdout}`,
      ).toBe(true);
    }
  }

  it("the README's shell blocks run as written (npm forms: --silent, -- before flags)", async () => {
    await runPage('README.md');
  }, 180_000);

  it("docs/clients.md's shell blocks run as written", async () => {
    await runPage('docs/clients.md');
  }, 180_000);

  it('every TypeScript block of docs/clients.md and the client README runs, or says why not', async () => {
    // The web client examples run workflows: an extension of alice's with the demo workflows.
    extension = spawn(
      process.execPath,
      [SIMULATOR, '--kind', 'extension', '--user', 'alice', '--url', service.url],
      {
        cwd: REPO_ROOT,
        env: { PATH: process.env.PATH ?? '', SIMULATE_NODE_REFRESH_TOKEN: refreshToken },
        stdio: ['ignore', 'ignore', 'pipe'],
      },
    );
    let simulated = '';
    extension.stderr!.on('data', (chunk: Buffer) => (simulated += chunk.toString()));
    await expect.poll(() => simulated, { timeout: 30_000 }).toContain(' registered ');
    model.script('gpt-4.1-mini', [textReply('Your open issues: none.')]);
    const file = join(scratch, 'example.txt');
    writeFileSync(file, 'read by the docs example');

    for (const [page, examples] of Object.entries(TS_EXAMPLES)) {
      const blocks = codeBlocks(page).filter((b) => ['ts', 'js', 'typescript'].includes(b.lang));
      expect(
        blocks.map((b) => `${page}:${b.line}`),
        'each block is listed in TS_EXAMPLES',
      ).toHaveLength(examples.length);
      for (const [index, block] of blocks.entries()) {
        const example = examples[index]!;
        if (example.skip) continue;
        const output = await runTs(block, example, {
          ORIGIN: service.url,
          EXAMPLE_TOKEN: token,
          EXAMPLE_REFRESH_TOKEN: refreshToken,
          EXAMPLE_FILE: file,
        });
        for (const text of example.prints ?? []) {
          expect(output.text, `${page}:${block.line} prints ${text}`).toContain(text);
        }
        expect(output.code, `${page}:${block.line}\n${output.text}`).toBe(0);
      }
    }
  }, 240_000);

  /**
   * A block as a module of the client package (so its imports resolve as they would for a user
   * of it), with the service and the scripted model in place of the example origins.
   */
  async function runTs(
    block: CodeBlock,
    example: TsExample,
    env: Record<string, string>,
  ): Promise<{ code: number | null; text: string }> {
    const ws = service.url.replace('http', 'ws');
    const code = block.code
      .replace(/wss:\/\/agents\.example\.com|ws:\/\/localhost:8000/g, ws)
      .replace(/https:\/\/agents\.example\.com/g, service.url)
      .replace(/https:\/\/api\.openai\.com\/v1/g, model.baseUrl);
    // Imports first (a module's imports are hoisted anyway), then the prelude's declarations.
    const source = [example.prelude ?? '', code, example.epilogue ?? ''].join('\n');
    const dir = mkdtempSync(join(REPO_ROOT, 'packages/client/.docs-example-'));
    try {
      writeFileSync(join(dir, 'example.ts'), source);
      const child = spawn(process.execPath, ['--import', 'tsx', join(dir, 'example.ts')], {
        cwd: REPO_ROOT,
        env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let text = '';
      child.stdout.on('data', (chunk: Buffer) => (text += chunk.toString()));
      child.stderr.on('data', (chunk: Buffer) => (text += chunk.toString()));
      const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
      const exitCode = await new Promise<number | null>((resolve) =>
        child.on('close', (c) => resolve(c)),
      );
      clearTimeout(timer);
      return { code: exitCode, text };
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
});
