import { describe, expect, it } from 'vitest';
import { parseMessageText } from './chat-platform.js';

describe('parseMessageText', () => {
  it('returns the text of a text message', () => {
    expect(parseMessageText('{"text":"hello @_user_1"}')).toBe('hello @_user_1');
  });

  it('keeps an empty text', () => {
    expect(parseMessageText('{"text":""}')).toBe('');
  });

  it.each([
    ['not JSON', 'hello'],
    ['JSON without text', '{"image_key":"img_1"}'],
    ['a non-string text', '{"text":42}'],
    ['JSON null', 'null'],
    ['a JSON string', '"text"'],
    ['a JSON array', '["text"]'],
    ['an empty string', ''],
  ])('returns null for %s', (_label, content) => {
    expect(parseMessageText(content)).toBeNull();
  });
});
