import type { AgentEvent } from '@agent-backend/protocol';
import { describe, expect, it } from 'vitest';
import { MAX_RESULT_IMAGE_BYTES, MAX_RESULT_IMAGES } from './tool-bounds.js';
import { executeToolCall } from './tool-execution.js';
import { ToolRegistry, type AgentTool, type ToolContext } from './tool.js';

const context: ToolContext = {
  userId: 'u',
  sessionId: 's',
  runId: 'r',
  mode: 'agent',
  signal: new AbortController().signal,
  state: { todos: [] },
  emit: () => undefined,
};

/** A tool answering `images` as it is (an MCP server, a device: anything may send many). */
const imageTool = (images: Array<{ data: string; mimeType: string }>): AgentTool => ({
  name: 'draw',
  description: '',
  parameters: { type: 'object' },
  writes: false,
  execute: async () => ({ content: 'drawn', images }),
});

async function run(tool: AgentTool) {
  const registry = new ToolRegistry();
  registry.add(tool);
  const events: AgentEvent[] = [];
  const output = await executeToolCall(
    { id: 'call-1', name: tool.name, arguments: '{}' },
    { registry, context, emit: (event) => events.push(event) },
  );
  const result = events.find((e) => e.type === 'tool_result');
  if (result?.type !== 'tool_result') throw new Error('no tool_result');
  return { output, result };
}

const image = (bytes: number, fill: number) => ({
  data: Buffer.alloc(bytes, fill).toString('base64'),
  mimeType: 'image/png',
});

describe('tool results with images', () => {
  it('carry at most 10 images, and tell the model how many were left out', async () => {
    const images = Array.from({ length: 40 }, (_, i) => image(1024, i));
    const { output, result } = await run(imageTool(images));
    expect(result.images).toHaveLength(MAX_RESULT_IMAGES);
    expect(result.images).toEqual(images.slice(0, MAX_RESULT_IMAGES));
    expect(result.result).toBe(
      'drawn\n[30 image(s) left out: a tool result carries at most 10 images and 10 MiB of them]',
    );
    expect(output.content).toBe(result.result);
  });

  it('carry at most 10 MiB of images', async () => {
    const big = Array.from({ length: 4 }, (_, i) => image(4 * 1024 * 1024, i));
    const { result } = await run(imageTool([...big, image(100, 9)]));
    const bytes = (result.images ?? []).reduce(
      (n, i) => n + Buffer.from(i.data, 'base64').length,
      0,
    );
    expect(bytes).toBeLessThanOrEqual(MAX_RESULT_IMAGE_BYTES);
    // Two of 4 MiB fit; the small one after them still does.
    expect(result.images).toEqual([big[0], big[1], image(100, 9)]);
    expect(result.result).toMatch(/\[2 image\(s\) left out/);
  });

  it('leave a result within the limits as the tool gave it', async () => {
    const images = [image(10, 1), image(10, 2)];
    const { result } = await run(imageTool(images));
    expect(result).toMatchObject({ result: 'drawn', images });
  });
});
