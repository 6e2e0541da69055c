import { createPgliteDatabase } from '@agent-backend/store';
import { describeSkillsContract } from './skills.contract.js';

describeSkillsContract('PGlite', () => createPgliteDatabase({ vector: false }));
