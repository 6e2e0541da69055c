/**
 * Helpers of the knowledge-base integration tests: the bases/documents API as a user, waiting
 * for ingestion, and a conversation whose scripted model calls `search_knowledge_base` once.
 */
import { expect } from 'vitest';
import { textReply, toolCallsReply, type ScriptedModel } from '@agent-backend/testing';
import type { KnowledgeDocument, KnowledgeSearchHit } from '@agent-backend/protocol';
import { invoke } from './agent-helpers.js';

export interface ApiAnswer {
  readonly status: number;
  readonly body: unknown;
}

/** One JSON request to a service as the holder of `token` (none: anonymous). */
export async function callApi(
  baseUrl: string,
  token: string | undefined,
  method: string,
  path: string,
  body?: unknown,
): Promise<ApiAnswer> {
  const res = await fetch(`${baseUrl}${path}`, {
    method,
    headers: {
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      ...(token ? { authorization: `Bearer ${token}` } : {}),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  return { status: res.status, body: (text ? JSON.parse(text) : undefined) as unknown };
}

/** Polls the document list until the document left `pending` (or `timeoutMs` passed). */
export async function waitForIngestion(
  baseUrl: string,
  token: string,
  baseId: string,
  documentId: string,
  timeoutMs = 30_000,
): Promise<KnowledgeDocument> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const { body } = await callApi(
      baseUrl,
      token,
      'GET',
      `/api/knowledge-bases/${baseId}/documents`,
    );
    const doc = (body as { documents: KnowledgeDocument[] }).documents.find(
      (d) => d.id === documentId,
    );
    if (doc && doc.status !== 'pending') return doc;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`document ${documentId} still pending after ${timeoutMs} ms`);
}

/** What the model got back from `search_knowledge_base`. */
export type SearchToolResult = { results: KnowledgeSearchHit[] } | 'No matching passages found.';

/**
 * Runs one conversation on `baseUrl` whose model (scripted under `modelName`) calls
 * `search_knowledge_base` with `query`, then answers; returns the tool result the model got.
 */
export async function searchThroughAgent(options: {
  baseUrl: string;
  token: string;
  model: ScriptedModel;
  modelName: string;
  knowledgeBaseIds: string[];
  query: string;
}): Promise<SearchToolResult> {
  const { model, modelName } = options;
  model.script(modelName, [
    toolCallsReply([{ name: 'search_knowledge_base', args: { query: options.query } }]),
    textReply('Done.'),
  ]);
  const events = await (
    await invoke(options.baseUrl, options.token, {
      message: 'Look it up, please.',
      knowledge_base_ids: options.knowledgeBaseIds,
      llm_config: { baseUrl: model.baseUrl, apiKey: 'sk-kb-test', modelName },
    })
  ).ended;
  expect(events.at(-1)!.data.type).toBe('done');
  const [first, second] = model.requests(modelName);
  expect(first!.body.tools!.map((t) => t.function.name)).toContain('search_knowledge_base');
  const content = String(second!.body.messages!.find((m) => m.role === 'tool')!.content);
  return content.startsWith('{')
    ? (JSON.parse(content) as SearchToolResult)
    : (content as SearchToolResult);
}
