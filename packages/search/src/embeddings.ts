import type OpenAI from 'openai';

/**
 * Turns texts into vectors for search (knowledge-base chunks, memories, their queries). The
 * vectors are unit length, so the dot product of two of them is their cosine similarity.
 */
export interface Embedder {
  /** The model name; stored with every vector so that only comparable vectors are compared. */
  readonly model: string;
  /**
   * One vector per text, in order; null for a text whose vector has no direction (all zeros),
   * which vector search then skips. Rejects with {@link EmbeddingError}.
   */
  embed(texts: readonly string[], signal?: AbortSignal): Promise<Array<number[] | null>>;
}

/**
 * An embeddings request that failed. `retryable` is false when sending the same texts again
 * cannot help (the endpoint refused them: 400, 401, 403, 404, 422, or answered with vectors
 * we cannot use). Messages carry the status and the endpoint's message, never the API key.
 */
export class EmbeddingError extends Error {
  constructor(
    message: string,
    readonly retryable: boolean,
  ) {
    super(message);
    this.name = 'EmbeddingError';
  }
}

export interface OpenAiEmbedderOptions {
  /** The OpenAI-compatible API root, e.g. `https://api.openai.com/v1`. */
  readonly baseUrl: string;
  readonly apiKey?: string;
  readonly model: string;
  /** Asks for vectors of this size (models that support `dimensions`); also checked. */
  readonly dimensions?: number;
  /** Texts per request. @default 64 */
  readonly batchSize?: number;
  /** Deadline of one request. @default 30000 */
  readonly timeoutMs?: number;
  /** Retries of one request on 408/409/429/5xx and connection errors (the client's). @default 2 */
  readonly maxRetries?: number;
}

const PERMANENT_STATUSES = new Set([400, 401, 403, 404, 422]);

/** Scales `vector` to unit length; undefined when it has no direction (all zeros). */
export function normalize(vector: readonly number[]): number[] | undefined {
  let sum = 0;
  for (const x of vector) sum += x * x;
  if (!(sum > 0) || !Number.isFinite(sum)) return undefined;
  const norm = Math.sqrt(sum);
  return vector.map((x) => x / norm);
}

/**
 * An {@link Embedder} calling an OpenAI-compatible `POST /embeddings` with the official client.
 * Asks for `encoding_format: 'float'` (some compatible servers do not implement base64), sends
 * `batchSize` texts per request, one request at a time, and validates every answer: one vector
 * per input (placed by `index`), all of one size (the configured one when set), finite numbers.
 */
export function createOpenAiEmbedder(options: OpenAiEmbedderOptions): Embedder {
  // The SDK is loaded at the first request, not at import: a role that never embeds (the
  // gateway, an idle api) never loads it (docs/BENCHMARKS.md, "Footprint").
  let sdk: Promise<{ client: OpenAI; APIError: typeof OpenAI.APIError }> | undefined;
  const open = async () => {
    const { default: OpenAI } = await import('openai');
    const client = new OpenAI({
      baseURL: options.baseUrl.replace(/\/+$/, ''),
      // The client insists on a key; endpoints without authentication ignore it.
      apiKey: options.apiKey ?? 'unused',
      timeout: options.timeoutMs ?? 30_000,
      maxRetries: options.maxRetries ?? 2,
      logLevel: 'off',
    });
    return { client, APIError: OpenAI.APIError };
  };
  const batchSize = options.batchSize ?? 64;
  let size = options.dimensions;

  async function embedBatch(
    texts: string[],
    signal?: AbortSignal,
  ): Promise<Array<number[] | null>> {
    const { client, APIError } = await (sdk ??= open());
    let response: OpenAI.CreateEmbeddingResponse;
    try {
      response = await client.embeddings.create(
        {
          model: options.model,
          input: texts,
          encoding_format: 'float',
          ...(options.dimensions ? { dimensions: options.dimensions } : {}),
        },
        { signal },
      );
    } catch (error) {
      if (error instanceof APIError && error.status !== undefined) {
        throw new EmbeddingError(
          `embeddings endpoint answered ${error.status}: ${error.message}`,
          !PERMANENT_STATUSES.has(error.status),
        );
      }
      const reason = error instanceof Error ? error.message : String(error);
      throw new EmbeddingError(`embeddings request failed: ${reason}`, true);
    }
    const data: unknown = response?.data;
    if (!Array.isArray(data) || data.length !== texts.length) {
      throw new EmbeddingError(
        `embeddings endpoint returned ${Array.isArray(data) ? data.length : 'no'} vectors for ${texts.length} texts`,
        false,
      );
    }
    const vectors = new Array<number[] | null | undefined>(texts.length);
    data.forEach((item: { index?: unknown; embedding?: unknown }, position) => {
      const index = typeof item?.index === 'number' ? item.index : position;
      const embedding = item?.embedding;
      if (
        !Number.isInteger(index) ||
        index < 0 ||
        index >= texts.length ||
        vectors[index] !== undefined
      ) {
        throw new EmbeddingError(
          `embeddings endpoint returned a bad index ${String(index)}`,
          false,
        );
      }
      if (
        !Array.isArray(embedding) ||
        embedding.length === 0 ||
        !embedding.every((x) => typeof x === 'number' && Number.isFinite(x))
      ) {
        throw new EmbeddingError(
          'embeddings endpoint returned a vector that is not numbers',
          false,
        );
      }
      size ??= embedding.length;
      if (embedding.length !== size) {
        throw new EmbeddingError(
          `embeddings endpoint returned a vector of ${embedding.length} numbers, expected ${size}`,
          false,
        );
      }
      vectors[index] = normalize(embedding as number[]) ?? null;
    });
    return vectors as Array<number[] | null>;
  }

  return {
    model: options.model,
    async embed(texts, signal) {
      const out: Array<number[] | null> = [];
      for (let i = 0; i < texts.length; i += batchSize) {
        out.push(...(await embedBatch(texts.slice(i, i + batchSize), signal)));
      }
      return out;
    },
  };
}

/** The embeddings settings of the environment (packages/config, `EMBEDDINGS_*`). */
export interface EmbeddingsSettings {
  readonly EMBEDDINGS_BASE_URL?: string;
  readonly EMBEDDINGS_API_KEY?: string;
  readonly EMBEDDINGS_MODEL?: string;
  readonly EMBEDDINGS_DIMENSIONS?: number;
  readonly EMBEDDINGS_BATCH_SIZE: number;
  readonly EMBEDDINGS_TIMEOUT_MS: number;
}

/** The configured embedder; undefined when no endpoint is configured (full-text search only). */
export function embedderFromSettings(settings: EmbeddingsSettings): Embedder | undefined {
  if (!settings.EMBEDDINGS_BASE_URL || !settings.EMBEDDINGS_MODEL) return undefined;
  return createOpenAiEmbedder({
    baseUrl: settings.EMBEDDINGS_BASE_URL,
    apiKey: settings.EMBEDDINGS_API_KEY,
    model: settings.EMBEDDINGS_MODEL,
    dimensions: settings.EMBEDDINGS_DIMENSIONS,
    batchSize: settings.EMBEDDINGS_BATCH_SIZE,
    timeoutMs: settings.EMBEDDINGS_TIMEOUT_MS,
  });
}
