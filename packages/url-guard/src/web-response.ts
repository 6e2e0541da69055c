import type { IncomingMessage } from 'node:http';
import { Readable, Transform } from 'node:stream';
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib';

/** Statuses whose responses never carry a body (the `Response` constructor rejects one). */
const NULL_BODY = new Set([101, 103, 204, 205, 304]);

const DECODERS: Record<string, () => Transform> = {
  gzip: createGunzip,
  'x-gzip': createGunzip,
  deflate: createInflate,
  br: createBrotliDecompress,
};

/**
 * Wraps a `node:http` response in a WHATWG `Response` the way `fetch` would present it: headers
 * as received (repeated headers appended), the body as a web stream that is read as it arrives
 * (SSE needs that) and decoded when it is compressed, `url` and `redirected` set.
 */
export function toWebResponse(
  res: IncomingMessage,
  url: URL,
  method: string,
  redirected: boolean,
  maxBytes = Infinity,
): Response {
  const status = res.statusCode ?? 0;
  if (status < 200 || status > 599) {
    res.destroy();
    throw new TypeError(`unsupported HTTP status ${status}`);
  }
  const headers = new Headers();
  for (let i = 0; i + 1 < res.rawHeaders.length; i += 2)
    headers.append(res.rawHeaders[i]!, res.rawHeaders[i + 1]!);

  let body: ReadableStream | null = null;
  if (NULL_BODY.has(status) || method === 'HEAD') {
    res.resume();
  } else {
    const decoder = DECODERS[(headers.get('content-encoding') ?? '').trim().toLowerCase()];
    let source: Readable = decoder ? res.pipe(decoder()) : res;
    if (decoder) res.once('error', (error) => source.destroy(error));
    if (Number.isFinite(maxBytes)) {
      const limited = source.pipe(byteLimit(maxBytes));
      source.once('error', (error) => limited.destroy(error));
      source = limited;
    }
    body = Readable.toWeb(source) as ReadableStream;
  }
  const response = new Response(body, { status, statusText: res.statusMessage ?? '', headers });
  Object.defineProperty(response, 'url', { value: url.href });
  Object.defineProperty(response, 'redirected', { value: redirected });
  return response;
}

/** Fails the body once more than `max` (decoded) bytes arrived, so a hostile server cannot fill memory. */
function byteLimit(max: number): Transform {
  let seen = 0;
  return new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      seen += chunk.length;
      if (seen > max) callback(new RangeError(`response body larger than ${max} bytes`));
      else callback(null, chunk);
    },
  });
}
