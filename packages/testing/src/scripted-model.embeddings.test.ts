import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  hashingEmbedding,
  startScriptedModel,
  textReply,
  type EmbedFunction,
  type ScriptedModel,
} from './scripted-model.js';

let model: ScriptedModel;
beforeAll(async () => {
  model = await startScriptedModel();
});
afterAll(async () => {
  await model.close();
});

let counter = 0;
/** A model name no other test uses, so scripted steps and recorded requests stay apart. */
function modelName(): string {
  return `embed-${++counter}`;
}

/** An OpenAI client on `server` that does not retry, so each call is one request. */
function client(server: ScriptedModel, timeout?: number): OpenAI {
  return new OpenAI({ apiKey: 'sk-test', baseURL: server.baseUrl, maxRetries: 0, timeout });
}

/** The float32 values of OpenAI's base64 `embedding` (little-endian bytes). */
function decodeBase64(embedding: string): number[] {
  const bytes = Buffer.from(embedding, 'base64');
  return Array.from({ length: bytes.length / 4 }, (_, i) => bytes.readFloatLE(i * 4));
}

/** POSTs `body` (a JSON value or raw text) to the embeddings endpoint with plain fetch. */
async function postEmbeddings(body: unknown): Promise<{ status: number; json: unknown }> {
  const response = await fetch(`${model.baseUrl}/embeddings`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  return { status: response.status, json: await response.json() };
}

/** Cosine similarity of two vectors of one length. */
function cosine(a: number[], b: number[]): number {
  const dot = a.reduce((sum, x, i) => sum + x * b[i]!, 0);
  return dot / Math.sqrt(a.reduce((s, x) => s + x * x, 0) * b.reduce((s, x) => s + x * x, 0));
}

describe('hashingEmbedding', () => {
  it('counts words into 64 buckets by default, ignoring case and punctuation', () => {
    const vector = hashingEmbedding('Alpha beta, alpha! 42');
    expect(vector).toHaveLength(64);
    expect(vector.reduce((sum, x) => sum + x, 0)).toBe(4);
    expect(Math.max(...vector)).toBeGreaterThanOrEqual(2);
    expect(hashingEmbedding('ALPHA beta alpha 42')).toEqual(vector);
    expect(hashingEmbedding('', 8)).toEqual(new Array(8).fill(0));
  });

  it('makes texts sharing words more similar than unrelated texts', () => {
    const query = hashingEmbedding('how do I reset my router password');
    const related = hashingEmbedding('to reset the router password hold the button');
    const unrelated = hashingEmbedding('quarterly revenue grew in europe and asia');
    expect(cosine(query, related)).toBeGreaterThan(cosine(query, unrelated));
  });

  it('rejects dimensions that are not a positive integer', () => {
    expect(() => hashingEmbedding('x', 0)).toThrow(RangeError);
    expect(() => hashingEmbedding('x', 1.5)).toThrow(RangeError);
  });
});

describe('scripted model: POST /v1/embeddings', () => {
  const texts = ['The quick brown fox', 'jumps over the lazy dog'];

  it('answers float vectors in the OpenAI format and records the request', async () => {
    const name = modelName();
    const response = await client(model).embeddings.create({
      model: name,
      input: texts,
      encoding_format: 'float',
    });
    expect(response.object).toBe('list');
    expect(response.model).toBe(name);
    expect(response.data).toEqual([
      { object: 'embedding', index: 0, embedding: hashingEmbedding(texts[0]!) },
      { object: 'embedding', index: 1, embedding: hashingEmbedding(texts[1]!) },
    ]);
    expect(response.usage).toEqual({ prompt_tokens: 9, total_tokens: 9 });
    const [request] = await model.waitForRequests(name, 1);
    expect(request!.path).toBe('/v1/embeddings');
    expect(request!.body).toMatchObject({ model: name, input: texts, encoding_format: 'float' });
    expect(request!.completed).toBe(true);
  });

  it('answers base64 when the client asks for it by default, which the client decodes', async () => {
    const name = modelName();
    const response = await client(model).embeddings.create({ model: name, input: texts[0]! });
    expect(response.data.map((d) => d.embedding)).toEqual([hashingEmbedding(texts[0]!)]);
    expect(model.requests(name)[0]!.body.encoding_format).toBe('base64');
  });

  it('answers little-endian float32 base64 when asked for it explicitly', async () => {
    const name = modelName();
    const response = await client(model).embeddings.create({
      model: name,
      input: texts,
      encoding_format: 'base64',
    });
    const embeddings = response.data.map((d) => d.embedding as unknown as string);
    expect(embeddings.every((e) => typeof e === 'string')).toBe(true);
    expect(embeddings.map(decodeBase64)).toEqual(texts.map((text) => hashingEmbedding(text)));
  });

  it('passes the requested dimensions to the embedding', async () => {
    const response = await client(model).embeddings.create({
      model: modelName(),
      input: texts[1]!,
      dimensions: 16,
      encoding_format: 'float',
    });
    expect(response.data[0]!.embedding).toEqual(hashingEmbedding(texts[1]!, 16));
  });

  it('uses a custom embed function with the text, model and dimensions', async () => {
    const calls: Array<Parameters<EmbedFunction>> = [];
    const custom = await startScriptedModel({
      embed: (text, name, dimensions) => {
        calls.push([text, name, dimensions]);
        return [text.length, 0.5, -1];
      },
    });
    try {
      const response = await client(custom).embeddings.create({
        model: 'custom-model',
        input: ['abc', 'hello'],
        dimensions: 3,
      });
      expect(response.data.map((d) => d.embedding)).toEqual([
        [3, 0.5, -1],
        [5, 0.5, -1],
      ]);
      expect(calls).toEqual([
        ['abc', 'custom-model', 3],
        ['hello', 'custom-model', 3],
      ]);
    } finally {
      await custom.close();
    }
  });

  it('answers scripted errors as OpenAI.APIError, one step per request, then normally', async () => {
    const name = modelName();
    model.scriptEmbeddings(name, [
      { kind: 'error', status: 429, message: 'slow down' },
      { kind: 'ok' },
      { kind: 'error', status: 500, message: 'upstream broke' },
    ]);
    const openai = client(model);
    const embed = () => openai.embeddings.create({ model: name, input: 'hello world' });
    const first = await embed().catch((error: unknown) => error);
    expect(first).toBeInstanceOf(OpenAI.APIError);
    expect(first).toMatchObject({ status: 429, message: expect.stringContaining('slow down') });
    expect((await embed()).data[0]!.embedding).toEqual(hashingEmbedding('hello world'));
    await expect(embed()).rejects.toMatchObject({ status: 500 });
    expect((await embed()).data).toHaveLength(1);
    expect(model.requests(name)).toHaveLength(4);
  });

  it('never answers a hang step: the client times out and the next request is answered', async () => {
    const name = modelName();
    model.scriptEmbeddings(name, [{ kind: 'hang' }]);
    const openai = client(model, 300);
    await expect(openai.embeddings.create({ model: name, input: 'x' })).rejects.toBeInstanceOf(
      OpenAI.APIConnectionTimeoutError,
    );
    await model.waitForAbort(model.requests(name)[0]!);
    expect((await openai.embeddings.create({ model: name, input: 'x' })).data).toHaveLength(1);
  });

  it('answers 400 with an OpenAI error body for invalid input', async () => {
    const cases: Array<[unknown, string]> = [
      [{ input: 'no model' }, 'model'],
      [{ model: '', input: 'empty model' }, 'model'],
      [{ model: 'm' }, 'input'],
      [{ model: 'm', input: 42 }, 'input'],
      [{ model: 'm', input: ['ok', 7] }, 'input'],
      [{ model: 'm', input: [] }, 'input'],
      [{ model: 'm', input: 'x', encoding_format: 'int8' }, 'encoding_format'],
      [{ model: 'm', input: 'x', dimensions: 0 }, 'dimensions'],
      ['not json', 'model'],
    ];
    for (const [body, param] of cases) {
      const { status, json } = await postEmbeddings(body);
      expect(status, JSON.stringify(body)).toBe(400);
      expect(json).toEqual({
        error: { message: expect.any(String), type: 'invalid_request_error', code: null, param },
      });
    }
  });

  it('leaves the chat steps of the same model to chat requests', async () => {
    const name = modelName();
    model.script(name, [textReply('still here', 1)]);
    await client(model).embeddings.create({ model: name, input: 'x', encoding_format: 'float' });
    const chat = await fetch(`${model.baseUrl}/chat/completions`, {
      method: 'POST',
      body: JSON.stringify({ model: name, stream: true, messages: [] }),
    });
    expect(chat.status).toBe(200);
    expect(await chat.text()).toContain('still here');
    expect(model.requests(name).map((r) => r.path)).toEqual([
      '/v1/embeddings',
      '/v1/chat/completions',
    ]);
  });
});
