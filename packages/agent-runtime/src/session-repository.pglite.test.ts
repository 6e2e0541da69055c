import { createPgliteDatabase } from '@agent-backend/store';
import { describeSessionStoreContract } from './session-repository.contract.js';

describeSessionStoreContract('PGlite', () => createPgliteDatabase());
