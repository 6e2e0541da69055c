import { describe, expect, it } from 'vitest';
import { MAX_RESULT_CHARS, resultText } from './result-text.js';

describe('resultText', () => {
  it('joins text, announces binary items and shows embedded text resources', () => {
    expect(
      resultText({
        content: [
          { type: 'text', text: 'one' },
          { type: 'audio', data: 'AAAA', mimeType: 'audio/wav' },
          { type: 'resource', resource: { uri: 'file:///a.txt', text: 'inside' } },
          { type: 'resource', resource: { uri: 'file:///b.bin', blob: 'AA==' } },
          { type: 'resource_link', uri: 'file:///c', name: 'c' },
        ],
      }),
    ).toBe(
      'one\n\n[audio: audio/wav, 3 bytes]\n\ninside\n\n[resource: file:///b.bin]\n\n[resource link: file:///c]',
    );
  });

  it('falls back to structured content, then to "(no output)"', () => {
    expect(resultText({ content: [], structuredContent: { a: 1 } })).toBe('{"a":1}');
    expect(resultText({ content: [] })).toBe('(no output)');
  });

  it('cuts very long results and says so', () => {
    const text = resultText({
      content: [{ type: 'text', text: 'x'.repeat(MAX_RESULT_CHARS + 5) }],
    });
    expect(text).toBe(
      `${'x'.repeat(MAX_RESULT_CHARS)}\n[truncated: ${MAX_RESULT_CHARS + 5} characters in all]`,
    );
  });
});
