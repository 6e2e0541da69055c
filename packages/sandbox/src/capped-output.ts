/** Keeps the first `max` bytes of a stream and drops the rest (still reading it). */
export class CappedOutput {
  private readonly chunks: Buffer[] = [];
  private size = 0;
  cut = false;
  /** Every byte pushed, kept or not. */
  seen = 0;

  constructor(private readonly max: number) {}

  push(chunk: Buffer): void {
    this.seen += chunk.length;
    const room = this.max - this.size;
    if (chunk.length > room) this.cut = true;
    if (room <= 0) return;
    const kept = chunk.length > room ? chunk.subarray(0, room) : chunk;
    this.chunks.push(kept);
    this.size += kept.length;
  }

  text(): string {
    // A multi-byte character cut at the limit decodes as U+FFFD; no more.
    return Buffer.concat(this.chunks, this.size).toString('utf8');
  }
}
