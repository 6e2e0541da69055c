/** A listener that receives the payload of one event. */
export type Listener<T> = (payload: T) => void;

/**
 * A minimal typed event emitter, free of Node's `EventEmitter` so the event names and payloads
 * are checked at compile time. Unlike `EventEmitter`, an `error` without listeners is dropped
 * (fatal errors also reject `start()` and end in `stopped`), and a throwing listener neither
 * stops the other listeners nor corrupts the client's state: its error is rethrown on a
 * microtask, where it surfaces as an uncaught exception like any bug.
 */
export class TypedEmitter<Events extends object> {
  readonly #listeners = new Map<keyof Events, Set<Listener<never>>>();

  constructor(
    /** Where a listener's throw goes. @default rethrown on a microtask (an uncaught exception) */
    private readonly onListenerError: (error: unknown) => void = rethrowLater,
  ) {}

  /** Adds a listener; returns a function that removes it. */
  on<K extends keyof Events>(event: K, listener: Listener<Events[K]>): () => void {
    let set = this.#listeners.get(event);
    if (!set) this.#listeners.set(event, (set = new Set()));
    set.add(listener as Listener<never>);
    return () => this.off(event, listener);
  }

  /** Adds a listener that runs for the next event only. */
  once<K extends keyof Events>(event: K, listener: Listener<Events[K]>): () => void {
    const off = this.on(event, (payload) => {
      off();
      listener(payload);
    });
    return off;
  }

  off<K extends keyof Events>(event: K, listener: Listener<Events[K]>): void {
    this.#listeners.get(event)?.delete(listener as Listener<never>);
  }

  protected emit<K extends keyof Events>(event: K, payload: Events[K]): void {
    const set = this.#listeners.get(event);
    if (!set) return;
    for (const listener of [...set]) {
      try {
        (listener as Listener<Events[K]>)(payload);
      } catch (error) {
        this.onListenerError(error);
      }
    }
  }
}

function rethrowLater(error: unknown): void {
  queueMicrotask(() => {
    throw error;
  });
}
