import { describe, expect, it } from 'vitest';
import type { ChatMessage } from './chat-message.js';
import { contextSection, fitHistory, userMessage } from './context.js';
import { DEFAULT_CONTEXT_LIMITS, truncate } from './context-limits.js';

const limits = { ...DEFAULT_CONTEXT_LIMITS, fileChars: 10, filesTotalChars: 25, sandboxFiles: 2 };

describe('context limits', () => {
  it('truncates with a note saying how much was cut', () => {
    expect(truncate('abc', 5)).toBe('abc');
    expect(truncate('abcdefgh', 3)).toBe('abc\n[… truncated: 5 of 8 characters omitted]');
  });

  it('drops whole old turns, never separating tool calls from their results', () => {
    const history: ChatMessage[] = [
      { role: 'user', content: 'a'.repeat(50) },
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'c1', type: 'function', function: { name: 't', arguments: '{}' } }],
      },
      { role: 'tool', tool_call_id: 'c1', content: 'x'.repeat(50) },
      { role: 'assistant', content: 'done' },
      { role: 'user', content: 'second' },
      { role: 'assistant', content: 'reply' },
    ];
    expect(fitHistory(history, 10_000)).toEqual(history);
    expect(fitHistory(history, 20)).toEqual(history.slice(4));
    // The latest turn is kept even when it alone is over the budget.
    expect(fitHistory(history.slice(0, 4), 1)).toEqual(history.slice(0, 4));
  });

  it('inlines text attachments within limits and only names binary ones', () => {
    const message = userMessage(
      'Look at these',
      [
        { id: '1', name: 'notes.md', size: 30, type: 'text/markdown', content: 'n'.repeat(30) },
        { id: '2', name: 'photo.png', size: 2048, type: 'image/png', content: 'iVBORw0KGgo=' },
      ],
      limits,
    );
    expect(message.role).toBe('user');
    expect(message.content).toContain('Look at these\n\nAttachments:');
    expect(message.content).toContain('<attachment name="notes.md" type="text/markdown">');
    expect(message.content).toContain('[… truncated: 20 of 30 characters omitted]');
    expect(message.content).toContain(
      '[attachment "photo.png" (image/png, 2048 bytes) is not shown to the model]',
    );
    expect(message.content).not.toContain('iVBORw0KGgo=');
  });

  it('puts resource files and the sandbox listing in the system context, within a total budget', () => {
    const section = contextSection(
      [
        { name: 'a.txt', type: 'text/plain', content: 'A'.repeat(10) },
        { name: 'b.txt', type: 'text/plain', content: 'B'.repeat(10) },
        { name: 'c.txt', type: 'text/plain', content: 'C'.repeat(10) },
        { name: 'd.txt', type: 'text/plain', content: 'D'.repeat(10) },
      ],
      [
        { name: 'x.py', path: '/work/x.py', type: 'text/x-python', size: 12 },
        { name: 'y.py', path: '/work/y.py', type: 'text/x-python' },
        { name: 'z.py', path: '/work/z.py', type: 'text/x-python' },
      ],
      limits,
    );
    expect(section).toContain('A'.repeat(10));
    expect(section).toContain('B'.repeat(10));
    expect(section).toContain('CCCCC\n[… truncated: 5 of 10 characters omitted]');
    expect(section).toContain('[1 more resource_file(s) left out: context limit reached]');
    expect(section).toContain('- /work/x.py (x.py, text/x-python, 12 bytes)');
    expect(section).toContain('- … and 1 more');
    expect(section).not.toContain('z.py');
  });
});
