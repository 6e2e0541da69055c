import { describe, expect, it } from 'vitest';
import { parseSse } from './sse.js';

const streamOf = (...chunks: string[]) =>
  new ReadableStream<Uint8Array>({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(new TextEncoder().encode(chunk));
      controller.close();
    },
  });

const collect = async (body: ReadableStream<Uint8Array>) => {
  const out = [];
  for await (const message of parseSse(body)) out.push(message);
  return out;
};

describe('parseSse', () => {
  it('joins data lines, keeps ids, skips comments, across chunk and line-ending splits', async () => {
    const messages = await collect(
      streamOf(
        ': keepalive\n\nid: r1:1\nda',
        'ta: {"a":\r',
        '\ndata: 1}\r\n\r\nid: r1:2\rdata: x\r\r',
      ),
    );
    expect(messages).toEqual([
      { id: 'r1:1', data: '{"a":\n1}' },
      { id: 'r1:2', data: 'x' },
    ]);
  });

  it('drops an event the stream cut before its blank line', async () => {
    expect(await collect(streamOf('data: whole\n\ndata: cut'))).toEqual([{ data: 'whole' }]);
  });
});
