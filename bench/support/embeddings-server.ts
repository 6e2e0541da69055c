/**
 * A scripted OpenAI-compatible embeddings endpoint in a process of its own, answering every
 * input with a dense 1536-number vector (`denseEmbedding`): benchmarks that measure latency in
 * their own process start it as a child, so producing large answers never stalls their probes.
 * Prints its base URL as the first line on stdout; stops on SIGTERM.
 *
 *   node --import tsx bench/support/embeddings-server.ts
 */
import { denseEmbedding, startScriptedModel } from '../../packages/testing/src/index.js';

const model = await startScriptedModel({
  embed: (text, _model, dimensions) => denseEmbedding(text, dimensions ?? 1536),
});
console.log(model.baseUrl);
process.on('SIGTERM', () => void model.close().then(() => process.exit(0)));
