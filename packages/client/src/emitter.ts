/** A minimal typed event emitter that works in Node and browsers alike. */
export class Emitter<Events extends Record<string, unknown>> {
  private readonly handlers = new Map<keyof Events, Set<(value: never) => void>>();

  /** Subscribe; returns the unsubscribe function. */
  on<K extends keyof Events>(event: K, handler: (value: Events[K]) => void): () => void {
    let set = this.handlers.get(event);
    if (!set) {
      set = new Set();
      this.handlers.set(event, set);
    }
    set.add(handler as (value: never) => void);
    return () => set.delete(handler as (value: never) => void);
  }

  /** Deliver to every subscriber; one throwing handler does not stop the others. */
  emit<K extends keyof Events>(event: K, value: Events[K]): void {
    for (const handler of [...(this.handlers.get(event) ?? [])]) {
      try {
        (handler as (v: Events[K]) => void)(value);
      } catch (err) {
        queueMicrotask(() => {
          throw err;
        });
      }
    }
  }
}
