import { execFileSync } from 'node:child_process';
import { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { createLogger } from './logger.js';
import { PRETTY_LOGS_UNAVAILABLE } from './pretty-stream.js';

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

  it('writes JSON lines, the first a warning, where pino-pretty is not installed', () => {
    // A real process in which resolving pino-pretty fails as it does after `pnpm install --prod`:
    // a module hook answers MODULE_NOT_FOUND for it (Node >= 22.15 has module.registerHooks).
    const hide = `import { registerHooks } from 'node:module';
      registerHooks({ resolve(specifier, context, next) {
        if (specifier === 'pino-pretty')
          throw Object.assign(new Error("Cannot find module 'pino-pretty'"), { code: 'MODULE_NOT_FOUND' });
        return next(specifier, context);
      } });`;
    const logger = fileURLToPath(new URL('./logger.ts', import.meta.url));
    const script = `import { createLogger } from ${JSON.stringify(logger)};
      createLogger({ format: 'pretty', base: { role: 'api' } }).info({ token: 'sk-secret-value' }, 'ready');`;
    const out = execFileSync(
      process.execPath,
      [
        '--import',
        `data:text/javascript,${encodeURIComponent(hide)}`,
        '--import',
        'tsx',
        '--input-type=module',
        '-e',
        script,
      ],
      { encoding: 'utf8', cwd: fileURLToPath(new URL('..', import.meta.url)) },
    );
    const lines = out.trim().split('\n');
    expect(lines).toHaveLength(2);
    const [warning, entry] = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(warning).toMatchObject({
      level: 'warn',
      code: 'pretty_logs_unavailable',
      msg: PRETTY_LOGS_UNAVAILABLE,
    });
    expect(entry).toMatchObject({ level: 'info', msg: 'ready', role: 'api' });
    expect(out).not.toContain('sk-secret-value');
  });
});
