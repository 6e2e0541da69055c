import { runMigrateCommand } from '@agent-backend/runtime';

/** `pnpm migrate`: applies the database migrations to `DATABASE_URL` and exits. */
await runMigrateCommand();
