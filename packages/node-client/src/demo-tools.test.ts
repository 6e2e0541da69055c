import { inflateSync, crc32 } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { renderDemoPng } from './demo-png.js';
import { demoTools, demoWorkflows } from './demo-tools.js';
import { ToolParamsError } from './input-schema.js';

const context = (signal = new AbortController().signal) => ({ requestId: 'r', signal });

describe('demo PNG', () => {
  it('is a valid PNG of the requested size', () => {
    const png = renderDemoPng(10, 6, 3);
    expect(png.subarray(0, 8)).toEqual(
      Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    );
    let offset = 8;
    const chunks: Record<string, Buffer> = {};
    while (offset < png.length) {
      const length = png.readUInt32BE(offset);
      const type = png.subarray(offset + 4, offset + 8).toString('ascii');
      const data = png.subarray(offset + 8, offset + 8 + length);
      expect(png.readUInt32BE(offset + 8 + length)).toBe(
        crc32(png.subarray(offset + 4, offset + 8 + length)),
      );
      chunks[type] = data;
      offset += 12 + length;
    }
    expect(Object.keys(chunks)).toEqual(['IHDR', 'IDAT', 'IEND']);
    expect(chunks.IHDR?.readUInt32BE(0)).toBe(10);
    expect(chunks.IHDR?.readUInt32BE(4)).toBe(6);
    expect(inflateSync(chunks.IDAT!)).toHaveLength(6 * (1 + 10 * 3));
  });

  it('differs with the seed', () => {
    expect(renderDemoPng(8, 8, 1).equals(renderDemoPng(8, 8, 2))).toBe(false);
  });
});

describe('demo tools', () => {
  const tools = demoTools();

  it('echo, add and screenshot answer', async () => {
    expect(await tools.echo!.handler({ text: 'hi' }, context())).toBe('hi');
    expect(await tools.add!.handler({ a: 1.5, b: 2 }, context())).toBe('3.5');
    const shot = await tools.screenshot!.handler({}, context());
    expect(shot).toMatchObject({
      content: [{ type: 'text' }, { type: 'image', mimeType: 'image/png' }],
      _screenshot: expect.any(String),
    });
  });

  it('fail throws and slow honours its bounds and its signal', async () => {
    expect(() => tools.fail!.handler({ message: 'boom' }, context())).toThrow('boom');
    await expect(tools.slow!.handler({ ms: -1 }, context())).rejects.toBeInstanceOf(
      ToolParamsError,
    );
    await expect(tools.slow!.handler({ ms: 5 }, context())).resolves.toBe('waited 5 ms');
    const controller = new AbortController();
    const waiting = tools.slow!.handler({ ms: 60_000 }, context(controller.signal));
    controller.abort(new Error('stop'));
    await expect(waiting).rejects.toMatchObject({ name: 'AbortError' });
  });

  it('the workflows list two entries and report their outcomes', async () => {
    const workflows = demoWorkflows();
    expect((await workflows.list()).map((w) => w.id)).toEqual([
      'wf_summarize_page',
      'wf_fill_form',
    ]);
    const ctx = { taskId: 't', signal: new AbortController().signal };
    expect(await workflows.execute('wf_summarize_page', { delay_ms: 0 }, ctx)).toEqual({
      success: false,
      error: 'variable url is required',
    });
    await expect(workflows.execute('nope', { delay_ms: 0 }, ctx)).rejects.toThrow(
      'Unknown workflow: nope',
    );
  });
});
