import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { ToolContext } from '@agent-backend/agent-runtime';
import { BubblewrapSandboxProvider } from './local/bwrap-provider.js';
import { sandboxTools } from './tools.js';

const root = mkdtempSync(join(tmpdir(), 'sbx-tools-'));
const provider = new BubblewrapSandboxProvider({ stateDir: join(root, 'state') });
const sandbox = provider.create({ metadata: { userId: 'u', sessionId: 's', deployment: 'tools' } });
let touched = 0;
const tools = sandboxTools(
  {
    sandbox: () => sandbox,
    touch: async () => {
      touched += 1;
    },
  },
  { timeoutMs: 1_500, maxOutputBytes: 200, maxReadBytes: 10 },
);
const tool = (name: string) => tools.find((t) => t.name === name)!;
const context = { signal: new AbortController().signal } as ToolContext;

describe('sandbox tools', () => {
  it('offers writes as writes and reads as reads, one call at a time', () => {
    expect(tools.map((t) => [t.name, t.writes])).toEqual([
      ['execute_code', true],
      ['run_command', true],
      ['write_file', true],
      ['read_file', false],
      ['list_files', false],
    ]);
    expect(tools.every((t) => t.parallelSafe === false)).toBe(true);
  });

  it('reports a call past its deadline as a tool error, and cut output as cut', async () => {
    const slow = await tool('execute_code').execute(
      { language: 'bash', code: 'echo started; sleep 30' },
      context,
    );
    expect(slow.isError).toBe(true);
    expect(slow.content).toMatch(/deadline/);
    expect(slow.content).toContain('started');
    const loud = await tool('run_command').execute({ command: 'seq 1 1000' }, context);
    expect(loud.isError).toBeUndefined();
    expect(loud.content).toContain('[output cut at 200 bytes per stream]');
    const killed = await tool('run_command').execute({ command: 'kill -9 $$' }, context);
    expect(killed.content).toMatch(/^Exit code: 137 \(killed by SIGKILL: a sandbox limit/);
    const bad = await tool('execute_code').execute({ language: 'cobol', code: 'x' }, context);
    expect(bad).toMatchObject({ isError: true });
  });

  it('writes, reads (capped) and lists files; a path outside is a tool error', async () => {
    expect(
      (await tool('write_file').execute({ path: 'a/b.txt', content: 'hello world!' }, context))
        .content,
    ).toBe('Wrote 12 bytes to a/b.txt.');
    expect((await tool('read_file').execute({ path: 'a/b.txt' }, context)).content).toBe(
      'hello worl\n[cut at 10 bytes]',
    );
    expect((await tool('list_files').execute({}, context)).content).toBe('a/\na/b.txt (12 bytes)');
    const outside = await tool('read_file').execute({ path: '../../../etc/passwd' }, context);
    expect(outside).toMatchObject({ isError: true });
    expect(touched).toBeGreaterThan(0);
  });

  it('cuts list_files at 500 entries and says so', async () => {
    await tool('run_command').execute(
      { command: 'mkdir wide && cd wide && seq 1 600 | xargs touch' },
      context,
    );
    const listed = (await tool('list_files').execute({ path: 'wide' }, context)).content.split(
      '\n',
    );
    expect(listed).toHaveLength(501);
    expect(listed.at(-1)).toMatch(/^\[list cut: more entries than shown \(at most 500\)/);
    expect(listed.slice(0, 500).every((line) => /^\d+ \(0 bytes\)$/.test(line))).toBe(true);
  });

  it('shows a name with newlines or control characters escaped, on one line', async () => {
    await tool('execute_code').execute(
      {
        language: 'python',
        code: [
          'import os',
          "os.mkdir('names')",
          "open('names/plain.txt', 'w').write('x')",
          "open('names/evil.txt (0 bytes)\\nshadow (12 bytes)', 'w').write('x')",
          "open('names/\\x1b[2Jclear\\u2028line', 'w').write('x')",
        ].join('\n'),
      },
      context,
    );
    const listed = (await tool('list_files').execute({ path: 'names' }, context)).content;
    // Sorted by the names themselves (ESC before letters).
    expect(listed.split('\n')).toEqual([
      '"\\u001b[2Jclear\\u2028line" (1 bytes)',
      '"evil.txt (0 bytes)\\nshadow (12 bytes)" (1 bytes)',
      'plain.txt (1 bytes)',
    ]);
  });

  it('says how many images it left out of a call', async () => {
    const many = await tool('execute_code').execute(
      {
        language: 'python',
        code: [
          'import os',
          "os.makedirs('/tmp/outputs', exist_ok=True)",
          'for i in range(12):',
          "    open('/tmp/outputs/%02d.png' % i, 'wb').write(b'\\x89PNG\\r\\n\\x1a\\n')",
        ].join('\n'),
      },
      context,
    );
    expect(many.images).toHaveLength(10);
    expect(many.content).toContain('10 image(s) produced (PNG), shown to the user.');
    expect(many.content).toContain(
      '2 more image file(s) left out: a call returns at most 10 images and 10 MiB in all, each a PNG of at most 5 MiB.',
    );
  });
});
