/**
 * The client side of `agent-stream.ts`: reading the servers' SSE answers (one `message_chunk`
 * event per text delta, then `done`) and the scripted model's own (`choices[0].delta.content`,
 * then `[DONE]`).
 */
import { request as httpRequest } from 'node:http';
import { performance } from 'node:perf_hooks';

/**
 * Reads a server's SSE response; resolves with the times of the first and the last
 * `message_chunk` and their count, and calls `onFirst` at the first.
 */
export async function readChunks(response: Response, started: number, onFirst?: () => void) {
  if (!response.ok) throw new Error(`HTTP ${response.status}: ${await response.text()}`);
  const decoder = new TextDecoder();
  const parser = sseParser('agent');
  let first = NaN;
  let last = NaN;
  let chunks = 0;
  let done = false;
  for await (const bytes of response.body as unknown as AsyncIterable<Uint8Array>) {
    for (const event of parser(decoder.decode(bytes, { stream: true }))) {
      if (event === 'done') done = true;
      else {
        last = performance.now() - started;
        if (chunks++ === 0) {
          first = last;
          onFirst?.();
        }
      }
    }
  }
  if (!done) throw new Error('the stream ended without done');
  return { first, last, chunks };
}

/** What a stream's SSE carries: a server's agent events, or the model's own chunks. */
export type StreamFormat = 'agent' | 'openai';

/**
 * An incremental SSE parser: fed text as it arrives, it returns what the complete events in it
 * were, `'chunk'` for each text chunk and `'done'` at the end; it throws on an `error` event.
 */
export function sseParser(format: StreamFormat): (text: string) => Array<'chunk' | 'done'> {
  let buffer = '';
  return (text) => {
    buffer += text;
    const found: Array<'chunk' | 'done'> = [];
    let at: number;
    while ((at = buffer.indexOf('\n\n')) >= 0) {
      const data = buffer
        .slice(0, at)
        .split('\n')
        .find((line) => line.startsWith('data: '))
        ?.slice(6);
      buffer = buffer.slice(at + 2);
      if (!data) continue;
      if (format === 'openai') {
        if (data === '[DONE]') found.push('done');
        else {
          const chunk = JSON.parse(data) as { choices: Array<{ delta: { content?: string } }> };
          if (chunk.choices[0]?.delta.content) found.push('chunk');
        }
        continue;
      }
      const event = JSON.parse(data) as { type: string; message?: string };
      if (event.type === 'message_chunk') found.push('chunk');
      else if (event.type === 'done') found.push('done');
      else if (event.type === 'error') throw new Error(`stream error: ${event.message}`);
    }
    return found;
  };
}

/**
 * POSTs `body` and reads the SSE answer with `node:http` (lighter per chunk than `fetch`, which
 * matters when this process reads hundreds of streams): `onChunk(at)` with the arrival time of
 * each text chunk; resolves with their count once the stream is done. `signal` aborts it.
 */
export function streamChunks(
  url: string,
  headers: Record<string, string>,
  body: unknown,
  format: StreamFormat,
  onChunk: (at: number) => void,
  signal?: AbortSignal,
): Promise<number> {
  return new Promise((resolve, reject) => {
    const parse = sseParser(format);
    let chunks = 0;
    let done = false;
    const req = httpRequest(url, {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/json' },
      ...(signal ? { signal } : {}),
    });
    req.on('error', reject);
    req.on('response', (res) => {
      if (res.statusCode !== 200) {
        res.resume();
        return reject(new Error(`HTTP ${res.statusCode}`));
      }
      res.setEncoding('utf8');
      res.on('data', (text: string) => {
        const at = performance.now();
        try {
          for (const event of parse(text)) {
            if (event === 'done') done = true;
            else {
              chunks++;
              onChunk(at);
            }
          }
        } catch (error) {
          req.destroy();
          reject(error as Error);
        }
      });
      res.on('end', () =>
        done ? resolve(chunks) : reject(new Error('the stream ended without done')),
      );
      res.on('error', reject);
    });
    req.end(JSON.stringify(body));
  });
}
