/** The scripted model's `POST .../embeddings` answers and its OpenAI-style error bodies. */
import type { ServerResponse } from 'node:http';
import { words } from './hashing-embedding.js';
import type { EmbedFunction, EmbeddingStep, RecordedRequest } from './scripted-steps.js';

/** A valid embeddings request, as the server reads it. */
interface EmbeddingRequest {
  model: string;
  inputs: string[];
  base64: boolean;
  dimensions?: number;
}

/** Checks an embeddings request body; returns the request, or what is wrong and which field. */
function parseEmbeddingRequest(
  body: RecordedRequest['body'],
): EmbeddingRequest | { invalid: string; param: string } {
  const { model, input, encoding_format: format, dimensions } = body;
  if (typeof model !== 'string' || model === '') {
    return { invalid: 'you must provide a model parameter', param: 'model' };
  }
  const inputs = typeof input === 'string' ? [input] : input;
  if (!Array.isArray(inputs) || !inputs.every((item) => typeof item === 'string')) {
    return { invalid: "'input' must be a string or an array of strings", param: 'input' };
  }
  if (inputs.length === 0) return { invalid: "'input' must not be empty", param: 'input' };
  if (format !== undefined && format !== 'float' && format !== 'base64') {
    return { invalid: "'encoding_format' must be 'float' or 'base64'", param: 'encoding_format' };
  }
  if (dimensions !== undefined && (!Number.isInteger(dimensions) || (dimensions as number) < 1)) {
    return { invalid: "'dimensions' must be a positive integer", param: 'dimensions' };
  }
  return {
    model,
    inputs,
    base64: format === 'base64',
    dimensions: dimensions as number | undefined,
  };
}

/** Base64 of the vector's little-endian float32 bytes (OpenAI's `encoding_format: base64`). */
function float32Base64(vector: number[]): string {
  const bytes = Buffer.alloc(vector.length * 4);
  vector.forEach((value, i) => bytes.writeFloatLE(value, i * 4));
  return bytes.toString('base64');
}

/** Answers one embeddings request: the scripted step if any, else the embeddings of its inputs. */
export function answerEmbeddings(
  res: ServerResponse,
  record: RecordedRequest,
  step: EmbeddingStep | undefined,
  embed: EmbedFunction,
): void {
  if (step?.kind === 'hang') return;
  if (step?.kind === 'error') {
    return sendError(res, record, step.status, step.message, step.headers);
  }
  const request = parseEmbeddingRequest(record.body);
  if ('invalid' in request) return sendInvalid(res, record, request.invalid, request.param);
  let vectors: number[][];
  try {
    vectors = request.inputs.map((text) => embed(text, request.model, request.dimensions));
  } catch (error) {
    return sendError(res, record, 500, `scripted model: embed failed: ${String(error)}`);
  }
  const tokens = request.inputs.reduce((sum, text) => sum + words(text).length, 0);
  record.completed = true;
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(
    JSON.stringify({
      object: 'list',
      data: vectors.map((vector, index) => ({
        object: 'embedding',
        index,
        embedding: request.base64 ? float32Base64(vector) : vector,
      })),
      model: request.model,
      usage: { prompt_tokens: tokens, total_tokens: tokens },
    }),
  );
}

/** Ends the answer with OpenAI's error body; `details` sets its `type` and `param`. */
export function sendError(
  res: ServerResponse,
  record: RecordedRequest,
  status: number,
  message: string,
  headers: Record<string, string> = {},
  details: { type?: string; param?: string } = {},
): void {
  record.completed = true;
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  const type = details.type ?? 'scripted_error';
  res.end(JSON.stringify({ error: { message, type, code: null, param: details.param ?? null } }));
}

/** Ends the answer with a 400 and OpenAI's `invalid_request_error` body naming `param`. */
function sendInvalid(
  res: ServerResponse,
  record: RecordedRequest,
  message: string,
  param: string,
): void {
  sendError(res, record, 400, message, {}, { type: 'invalid_request_error', param });
}
