import {
  MAX_IMAGE_BYTES,
  MAX_IMAGE_BYTES_PER_CALL,
  MAX_IMAGES_PER_CALL,
  type ExecImage,
} from './sandbox.js';

/** The eight bytes every PNG file starts with. */
const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

/** Whether `data` starts as a PNG file does (the only image format the tools return). */
export function isPng(data: Uint8Array): boolean {
  return (
    data.length >= PNG_SIGNATURE.length &&
    PNG_SIGNATURE.equals(data.subarray(0, PNG_SIGNATURE.length))
  );
}

/**
 * The images of one call as the adapters collect them: each file is offered with the size it
 * says it has before a byte is read ({@link room}), read only up to the room it was given, and
 * kept only when it fits and is a PNG ({@link take}). Every file read counts against
 * {@link MAX_IMAGES_PER_CALL} and {@link MAX_IMAGE_BYTES_PER_CALL}, kept or not, so what the
 * host reads for one call is bounded whatever the files hold; the rest is counted as left out.
 */
export class ImageBudget {
  readonly images: ExecImage[] = [];
  leftOut = 0;
  private reads = 0;
  private bytes = 0;

  /**
   * The most bytes the next image may have, or 0 when none fits any more (the count or the
   * total is spent). A file whose size is already past it is {@link skip}ped unread.
   */
  room(): number {
    if (this.reads >= MAX_IMAGES_PER_CALL) return 0;
    return Math.min(MAX_IMAGE_BYTES, MAX_IMAGE_BYTES_PER_CALL - this.bytes);
  }

  /** Counts a file left out unread. */
  skip(): void {
    this.leftOut += 1;
  }

  /**
   * Keeps `data`, a file read with at most `room() + 1` bytes (so a file that grew past its room
   * since its size was taken shows as too long), when it fits, is a PNG and is `whole` (false:
   * the file changed while it was read); counts it as left out otherwise. Either way the read
   * counts.
   */
  take(data: Uint8Array, whole = true): void {
    const room = this.room();
    this.reads += 1;
    this.bytes += Math.min(data.length, room);
    if (!whole || data.length === 0 || data.length > room || !isPng(data)) {
      this.leftOut += 1;
      return;
    }
    this.images.push({ data: Buffer.from(data).toString('base64'), mimeType: 'image/png' });
  }
}
