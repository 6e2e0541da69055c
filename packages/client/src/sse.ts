/** One server-sent event: its `id:`, `event:` and the `data:` lines joined. */
export interface SseMessage {
  readonly id?: string;
  readonly event?: string;
  readonly data: string;
}

/**
 * The events of a `text/event-stream` body, as the HTML standard parses them: lines end with
 * LF, CR or CRLF; `data:` lines join with LF; comments (`: keepalive`) and fields without data
 * dispatch nothing. Works on any `ReadableStream` of bytes (fetch in browsers and Node).
 */
export async function* parseSse(body: ReadableStream<Uint8Array>): AsyncGenerator<SseMessage> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  let data: string[] = [];
  let id: string | undefined;
  let event: string | undefined;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      buffer += done ? decoder.decode() : decoder.decode(value, { stream: true });
      let end: number;
      while ((end = buffer.search(/\r\n|\r|\n/)) >= 0) {
        // A lone CR at the end of the buffer may be the first half of CRLF: wait for more.
        if (buffer[end] === '\r' && end === buffer.length - 1 && !done) break;
        const line = buffer.slice(0, end);
        buffer = buffer.slice(end + (buffer.startsWith('\r\n', end) ? 2 : 1));
        if (line === '') {
          if (data.length > 0) {
            yield {
              ...(id !== undefined ? { id } : {}),
              ...(event ? { event } : {}),
              data: data.join('\n'),
            };
          }
          data = [];
          event = undefined;
          continue;
        }
        if (line.startsWith(':')) continue;
        const colon = line.indexOf(':');
        const field = colon < 0 ? line : line.slice(0, colon);
        let value = colon < 0 ? '' : line.slice(colon + 1);
        if (value.startsWith(' ')) value = value.slice(1);
        if (field === 'data') data.push(value);
        else if (field === 'id' && !value.includes('\0')) id = value;
        else if (field === 'event') event = value;
      }
      if (done) return;
    }
  } finally {
    await reader.cancel().catch(() => undefined);
  }
}
