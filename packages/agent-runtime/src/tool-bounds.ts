import type { NoticeEvent } from '@agent-backend/protocol';
import type { AgentTool, ToolOutput } from './tool.js';

/**
 * Tools one run offers the model. OpenAI's Chat Completions API accepts at most 128 functions
 * in a request; unbounded, 500 nodes of 200 tools each made one run offer 100,001 tools in a
 * 33.7 MB request.
 */
export const DEFAULT_MAX_RUN_TOOLS = 128;

/** The code of the `notice` event of a run that left tools out. */
export const TOOLS_LIMITED_NOTICE = 'tools_limited';

export interface RunTools {
  /** The planning tools every run has. */
  readonly builtIn: readonly AgentTool[];
  /**
   * The sources' fill tools (the user's devices' tools, node by node in their order): they take
   * only the room the other tools leave.
   */
  readonly fill: readonly AgentTool[];
  /** Tools of the run's other sources (sandbox, knowledge, MCP, ...), in the sources' order. */
  readonly source: readonly AgentTool[];
}

/**
 * Cuts a run's tools to `max`: the built-in tools always stay; the sources' tools (a few each,
 * chosen by the request: sandbox, knowledge, memory, skills, MCP servers, accounts) come next;
 * fill tools (the user's devices') take what is left, in their order. What does not fit is left
 * out from the end of its group (fill tools first, then source tools).
 */
export function boundRunTools(
  tools: RunTools,
  max: number,
): { kept: AgentTool[]; leftOut: { fill: number; source: number } } {
  const room = Math.max(0, max - tools.builtIn.length);
  const source = tools.source.slice(0, room);
  const fill = tools.fill.slice(0, room - source.length);
  return {
    kept: [...tools.builtIn, ...fill, ...source],
    leftOut: {
      fill: tools.fill.length - fill.length,
      source: tools.source.length - source.length,
    },
  };
}

/**
 * The `notice` of a run whose tools were cut, or undefined when nothing was. `limits` are what
 * the sources left out by bounds of their own (the devices past `AGENT_MAX_TOOL_NODES`), said
 * first.
 */
export function toolsLimitedNotice(cut: {
  limits: readonly string[];
  leftOut: { fill: number; source: number };
  maxTools: number;
}): NoticeEvent | undefined {
  const parts = [...cut.limits];
  const tools = cut.leftOut.fill + cut.leftOut.source;
  if (tools > 0)
    parts.push(
      `${tools} tools were left out (at most ${cut.maxTools} tools per run: ${cut.leftOut.fill} of your devices', ${cut.leftOut.source} of other sources)`,
    );
  if (parts.length === 0) return undefined;
  return { type: 'notice', code: TOOLS_LIMITED_NOTICE, message: `This run: ${parts.join('; ')}.` };
}

/**
 * Images one tool result carries at most, whatever the tool (a sandbox's figures, an MCP
 * server's, a device's screenshots): the rest are left out of `tool_result` and the model is
 * told. Tools that collect images bound them before reading (the sandbox: docs/sandbox.md); this
 * is the limit every tool result meets on its way to the model, the run log and the client.
 */
export const MAX_RESULT_IMAGES = 10;
/** The images of one tool result together at most, in decoded bytes (base64 is 4/3 of it). */
export const MAX_RESULT_IMAGE_BYTES = 10 * 1024 * 1024;

/**
 * `output` with its images cut to {@link MAX_RESULT_IMAGES} and {@link MAX_RESULT_IMAGE_BYTES},
 * in order (an image that does not fit is left out, a later smaller one may still be kept), and a
 * line added to `content` saying how many were left out; `output` itself when all fit.
 */
export function boundResultImages<T extends ToolOutput>(output: T): T {
  if (!output.images?.length) return output;
  const kept: Array<{ data: string; mimeType: string }> = [];
  let bytes = 0;
  for (const image of output.images) {
    // Decoded size from the base64 length (padding aside): no decode needed to bound it.
    const size = Math.floor((image.data.length * 3) / 4);
    if (kept.length >= MAX_RESULT_IMAGES || bytes + size > MAX_RESULT_IMAGE_BYTES) continue;
    kept.push(image);
    bytes += size;
  }
  const leftOut = output.images.length - kept.length;
  if (leftOut === 0) return output;
  return {
    ...output,
    content:
      `${output.content}\n[${leftOut} image(s) left out: a tool result carries at most ` +
      `${MAX_RESULT_IMAGES} images and ${MAX_RESULT_IMAGE_BYTES / 1024 ** 2} MiB of them]`,
    images: kept,
  };
}
