/** What {@link FrameRate.take} decided about one frame. */
export type FrameVerdict = 'ok' | 'refused' | 'abuse';

export interface FrameRateOptions {
  /** Frames a second, sustained; also the burst. 0: frames are not counted. */
  framesPerSecond: number;
  /** Bytes a second, sustained; 0: bytes are not counted. */
  bytesPerSecond: number;
  /** The largest frame the socket accepts: the byte bucket holds at least one of it. */
  maxFrameBytes: number;
  /** Monotonic clock in ms; tests inject one. @default performance.now */
  now?: () => number;
}

/** Refusals a connection may pile up, in seconds of its frame rate, before it is closed. */
const ABUSE_SECONDS = 2;
/** How fast refusals are forgiven, when frames are not counted (a bytes-only limit). */
const DEFAULT_FORGIVE_PER_SECOND = 10;

/**
 * The rate of one WebSocket connection (docs/limits.md): a token bucket of frames and one of
 * bytes, each refilled continuously and holding one second's worth (so a burst of a second is
 * fine). A frame that finds either bucket short is refused. Refusals are strikes that are
 * forgiven at the frame rate: a client sending at twice the rate stays open (half its frames
 * refused), one sending well above it piles up strikes and is `abuse` once they pass two
 * seconds' worth.
 */
export class FrameRate {
  private frames: number;
  private bytes: number;
  private strikes = 0;
  private last: number;
  private readonly now: () => number;
  private readonly bytesCapacity: number;
  private readonly abuseAt: number;
  private readonly forgivePerSecond: number;

  constructor(private readonly options: FrameRateOptions) {
    this.now = options.now ?? (() => performance.now());
    this.last = this.now();
    this.bytesCapacity = Math.max(options.bytesPerSecond, options.maxFrameBytes);
    this.frames = options.framesPerSecond;
    this.bytes = this.bytesCapacity;
    this.forgivePerSecond = options.framesPerSecond || DEFAULT_FORGIVE_PER_SECOND;
    this.abuseAt = Math.max(10, ABUSE_SECONDS * this.forgivePerSecond);
  }

  /** Takes one frame of `size` bytes. */
  take(size: number): FrameVerdict {
    const { framesPerSecond, bytesPerSecond } = this.options;
    const now = this.now();
    const seconds = Math.max(0, now - this.last) / 1000;
    this.last = now;
    this.frames = Math.min(framesPerSecond, this.frames + seconds * framesPerSecond);
    this.bytes = Math.min(this.bytesCapacity, this.bytes + seconds * bytesPerSecond);
    this.strikes = Math.max(0, this.strikes - seconds * this.forgivePerSecond);
    const framesShort = framesPerSecond > 0 && this.frames < 1;
    const bytesShort = bytesPerSecond > 0 && this.bytes < size;
    if (framesShort || bytesShort) {
      this.strikes += 1;
      return this.strikes > this.abuseAt ? 'abuse' : 'refused';
    }
    if (framesPerSecond > 0) this.frames -= 1;
    if (bytesPerSecond > 0) this.bytes -= size;
    return 'ok';
  }
}
