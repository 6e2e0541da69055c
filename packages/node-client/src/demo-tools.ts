import { setTimeout as sleep } from 'node:timers/promises';
import { renderDemoPng } from './demo-png.js';
import { ToolParamsError } from './input-schema.js';
import type { ToolDefinition } from './tool-runner.js';
import type { WorkflowProvider } from './workflow-runner.js';

/** Longest wait `slow` and the demo workflows accept, so a typo cannot park a task for days. */
const MAX_WAIT_MS = 600_000;

/**
 * The simulator's tools, one per path a real node takes (all read-only, `writes: false`, so an
 * `ask`-mode run may call them too): `echo` (text), `add` (typed
 * arguments, -32602 on bad ones), `screenshot` (an image plus `_screenshot`), `fail` (a throw,
 * -32603) and `slow` (a long call that honours its abort signal).
 */
export function demoTools(): Record<string, ToolDefinition> {
  let shots = 0;
  return {
    echo: {
      writes: false,
      description: 'Returns its text unchanged.',
      inputSchema: {
        type: 'object',
        properties: { text: { type: 'string' } },
        required: ['text'],
      },
      handler: (args) => String(args.text),
    },
    add: {
      writes: false,
      description: 'Adds two numbers.',
      inputSchema: {
        type: 'object',
        properties: { a: { type: 'number' }, b: { type: 'number' } },
        required: ['a', 'b'],
      },
      handler: (args) => String((args.a as number) + (args.b as number)),
    },
    screenshot: {
      writes: false,
      description: 'Returns a small generated PNG, as a real node returns a screen capture.',
      inputSchema: { type: 'object', properties: {} },
      handler: () => {
        const data = renderDemoPng(64, 40, shots++ * 37).toString('base64');
        return {
          content: [
            { type: 'text', text: 'screenshot taken (64x40, generated)' },
            { type: 'image', data, mimeType: 'image/png' },
          ],
          isError: false,
          _screenshot: data,
        };
      },
    },
    fail: {
      writes: false,
      description: 'Always throws, to show how a failed tool is reported (JSON-RPC -32603).',
      inputSchema: {
        type: 'object',
        properties: { message: { type: 'string' } },
      },
      handler: (args) => {
        throw new Error(typeof args.message === 'string' ? args.message : 'demo failure');
      },
    },
    slow: {
      writes: false,
      description: `Waits ms milliseconds (at most ${MAX_WAIT_MS}), then answers; aborted on timeout or disconnect.`,
      inputSchema: {
        type: 'object',
        properties: { ms: { type: 'integer' } },
      },
      handler: async (args, { signal }) => {
        const ms = args.ms === undefined ? 1_000 : (args.ms as number);
        if (ms < 0 || ms > MAX_WAIT_MS)
          throw new ToolParamsError(`ms must be within 0..${MAX_WAIT_MS}`);
        await sleep(ms, undefined, { signal });
        return `waited ${ms} ms`;
      },
    },
  };
}

/**
 * Two demo workflows of a browser extension: `wf_summarize_page` (needs the variable `url`;
 * finishes after `delay_ms`, default 200) and `wf_fill_form` (reports the fields it "filled";
 * fails when the variable `fail` is true, to show a failed run).
 */
export function demoWorkflows(): WorkflowProvider {
  return {
    list: () => [
      {
        id: 'wf_summarize_page',
        name: 'Summarize page',
        description: 'Opens a page and summarizes it.',
        variables: [{ name: 'url', type: 'string', required: true }],
      },
      {
        id: 'wf_fill_form',
        name: 'Fill form',
        description: 'Fills the form on the current page.',
        variables: [{ name: 'fields', type: 'object', required: false }],
      },
    ],
    execute: async (workflowId, variables, { signal }) => {
      const delay = typeof variables.delay_ms === 'number' ? variables.delay_ms : 200;
      await sleep(Math.min(Math.max(delay, 0), MAX_WAIT_MS), undefined, { signal });
      if (workflowId === 'wf_summarize_page') {
        if (typeof variables.url !== 'string')
          return { success: false, error: 'variable url is required' };
        return {
          result: { url: variables.url, words: 42 },
          output: `Summary of ${variables.url}: a demo page with 42 words.`,
        };
      }
      if (workflowId === 'wf_fill_form') {
        if (variables.fail === true) return { success: false, error: 'demo failure requested' };
        const fields =
          typeof variables.fields === 'object' && variables.fields !== null ? variables.fields : {};
        return {
          result: { filled: Object.keys(fields) },
          output: `Filled ${Object.keys(fields).length} fields.`,
        };
      }
      throw new Error(`Unknown workflow: ${workflowId}`);
    },
  };
}
