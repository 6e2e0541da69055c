import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger } from './logger.js';

function capture() {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(...chunk.toString('utf8').split('\n').filter(Boolean));
      done();
    },
  });
  return { lines, stream };
}

describe('createLogger', () => {
  it('writes one JSON object per line by default, secrets redacted', () => {
    const { lines, stream } = capture();
    const logger = createLogger({ destination: stream, base: { role: 'api' } });
    logger.info({ token: 'sk-secret-value', port: 8000 }, 'listening');
    expect(lines).toHaveLength(1);
    const entry = JSON.parse(lines[0]!) as Record<string, unknown>;
    expect(entry).toMatchObject({ level: 'info', msg: 'listening', role: 'api', port: 8000 });
    expect(lines[0]).not.toContain('sk-secret-value');
  });

  it('writes readable lines with LOG_FORMAT=pretty, still redacted', () => {
    const { lines, stream } = capture();
    const logger = createLogger({ destination: stream, format: 'pretty', base: { role: 'api' } });
    logger.info({ token: 'sk-secret-value' }, 'api ready at http://localhost:8000');
    expect(lines[0]).toMatch(
      /^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: api ready at http:\/\/localhost:8000 /,
    );
    expect(lines.join('\n')).not.toContain('sk-secret-value');
    expect(() => JSON.parse(lines[0]!)).toThrow();
  });
});
