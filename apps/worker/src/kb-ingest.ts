import { ingestDocument, KB_INGEST_QUEUE, KnowledgeRepository } from '@agent-backend/knowledge';
import { KbIngestJob } from '@agent-backend/protocol';
import type { ServiceContext } from '@agent-backend/runtime';

/**
 * Processes `kb-ingest` jobs (queued by the API when a document is added): chunks the document
 * and stores its chunks, marking it `ready` (docs/knowledge-base.md). A job whose data does not
 * parse is dropped, not retried: retrying cannot fix it. A database error throws, so the queue
 * retries; ingestion is idempotent. Only ids and counts are logged, never content.
 */
export async function processKnowledgeIngestion(
  context: Pick<ServiceContext, 'engines' | 'logger'>,
): Promise<void> {
  const { engines, logger } = context;
  const repo = new KnowledgeRepository(engines.db);
  await engines.jobs.process(
    KB_INGEST_QUEUE,
    async (data, job) => {
      const parsed = KbIngestJob.safeParse(data);
      if (!parsed.success) {
        logger.error({ jobId: job.jobId }, 'invalid kb-ingest job dropped');
        return;
      }
      const { document_id: documentId, user_id: userId } = parsed.data;
      const outcome = await ingestDocument(repo, userId, documentId);
      logger.info({ documentId, ...outcome }, 'knowledge document ingested');
    },
    { concurrency: 2 },
  );
}
