import { createHash } from 'node:crypto';
import { inJobSpan } from '@agent-backend/jobs';
import {
  ingestDocument,
  KB_INGEST_ATTEMPTS,
  KB_INGEST_QUEUE,
  KnowledgeRepository,
} from '@agent-backend/knowledge';
import { KbIngestJob } from '@agent-backend/protocol';
import type { ServiceContext } from '@agent-backend/runtime';
import { embedderFromSettings } from '@agent-backend/search';

/**
 * Processes `kb-ingest` jobs (queued by the API when a document is added): chunks the document,
 * embeds the chunks when `EMBEDDINGS_*` is configured, and stores them, marking the document
 * `ready` (docs/knowledge-base.md). A job whose data does not parse is dropped, not retried:
 * retrying cannot fix it. A database error, or an embeddings endpoint that is down before the
 * last attempt, throws, so the queue retries; ingestion is idempotent. Only ids and counts are
 * logged, never content.
 */
export async function processKnowledgeIngestion(
  context: Pick<ServiceContext, 'engines' | 'logger' | 'config' | 'metrics'>,
): Promise<void> {
  const { engines, logger, config } = context;
  const metrics = context.metrics.knowledge;
  const repo = new KnowledgeRepository(engines.db);
  const embedder = embedderFromSettings(config);
  await engines.jobs.process(
    KB_INGEST_QUEUE,
    async (data, job) => {
      const parsed = KbIngestJob.safeParse(data);
      if (!parsed.success) {
        logger.error({ jobId: job.jobId }, 'invalid kb-ingest job dropped');
        return;
      }
      const { document_id: documentId, user_id: userId, reembed, trace } = parsed.data;
      // The trace of the request that added the document continues here (its log line too).
      await inJobSpan('kb-ingest', trace, { 'agent_backend.document.id': documentId }, async () => {
        let outcome;
        try {
          outcome = await ingestDocument(repo, userId, documentId, {
            embedder,
            lastAttempt: job.attempt >= KB_INGEST_ATTEMPTS,
            reembed,
            signal: job.signal,
          });
        } catch (error) {
          metrics.failed();
          throw error;
        }
        if (outcome.status === 'ready') metrics.ingested(outcome.chunks);
        else if (outcome.status === 'failed') metrics.failed();
        logger.info(
          { documentId, attempt: job.attempt, ...outcome },
          'knowledge document ingested',
        );
      });
    },
    { concurrency: 2 },
  );
  if (embedder && config.KNOWLEDGE_REEMBED === 'auto') {
    // In the background: a large corpus must not hold up the worker's start.
    void queueReembedding(repo, context, embedder.model).catch((error: unknown) =>
      logger.error({ err: error }, 'could not queue knowledge re-embedding'),
    );
  }
}

/**
 * Queues a `kb-ingest` of every ready document that has no vectors of the configured model
 * and size, so that search by meaning covers it again after `EMBEDDINGS_MODEL` changed (or
 * embeddings were configured after it was added). Ingestion replaces a document's chunks in
 * one transaction, so it stays searchable meanwhile. The job id names the model and size:
 * workers starting together queue each document once, and a later change queues it again.
 */
async function queueReembedding(
  repo: KnowledgeRepository,
  { engines, logger, config }: Pick<ServiceContext, 'engines' | 'logger' | 'config'>,
  model: string,
): Promise<void> {
  const dimensions = config.EMBEDDINGS_DIMENSIONS;
  const documents = await repo.documentsToReembed(model, dimensions);
  if (documents.length === 0) return;
  logger.info({ documents: documents.length, model }, 'queueing knowledge re-embedding');
  const version = createHash('sha256')
    .update(`${model}\u0000${dimensions ?? ''}`)
    .digest('hex')
    .slice(0, 16);
  for (const doc of documents) {
    const job: KbIngestJob = {
      document_id: doc.document_id,
      user_id: doc.user_id,
      reembed: true,
    };
    await engines.jobs.add(KB_INGEST_QUEUE, job, {
      jobId: `${doc.document_id}-reembed-${version}`,
      attempts: KB_INGEST_ATTEMPTS,
    });
  }
}
