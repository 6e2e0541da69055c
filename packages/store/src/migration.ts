/** One schema change of `MIGRATIONS` (`migrations.ts`). */
export interface Migration {
  /** Sortable and never renamed once released: `0001_refresh_tokens`. */
  readonly id: string;
  readonly sql: string;
}
