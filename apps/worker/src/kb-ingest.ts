import {
  embedderFromSettings,
  ingestDocument,
  KB_INGEST_ATTEMPTS,
  KB_INGEST_QUEUE,
  KnowledgeRepository,
} from '@agent-backend/knowledge';
import { KbIngestJob } from '@agent-backend/protocol';
import type { ServiceContext } from '@agent-backend/runtime';

/**
 * Processes `kb-ingest` jobs (queued by the API when a document is added): chunks the document,
 * embeds the chunks when `EMBEDDINGS_*` is configured, and stores them, marking the document
 * `ready` (docs/knowledge-base.md). A job whose data does not parse is dropped, not retried:
 * retrying cannot fix it. A database error, or an embeddings endpoint that is down before the
 * last attempt, throws, so the queue retries; ingestion is idempotent. Only ids and counts are
 * logged, never content.
 */
export async function processKnowledgeIngestion(
  context: Pick<ServiceContext, 'engines' | 'logger' | 'config'>,
): Promise<void> {
  const { engines, logger, config } = context;
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
      const { document_id: documentId, user_id: userId } = parsed.data;
      const outcome = await ingestDocument(repo, userId, documentId, {
        embedder,
        lastAttempt: job.attempt >= KB_INGEST_ATTEMPTS,
        signal: job.signal,
      });
      logger.info({ documentId, attempt: job.attempt, ...outcome }, 'knowledge document ingested');
    },
    { concurrency: 2 },
  );
}
