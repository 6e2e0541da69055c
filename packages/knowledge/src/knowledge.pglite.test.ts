import { createPgliteDatabase } from '@agent-backend/store';
import { describeKnowledgeContract } from './knowledge.contract.js';

describeKnowledgeContract('PGlite', () => createPgliteDatabase());
