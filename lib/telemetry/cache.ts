/**
 * A value read at most once per `maxAgeMs`: callers within that time share the same read (also while it is
 * in flight). A failed read is not kept, so the next caller tries again.
 */
export class Cached<T> {
  private value: Promise<T> | undefined;
  private readAt = -Infinity;

  constructor(
    private readonly read: () => Promise<T>,
    private readonly maxAgeMs: number,
    private readonly now: () => number = () => performance.now(),
  ) {}

  get(): Promise<T> {
    const t = this.now();
    if (this.value && t - this.readAt < this.maxAgeMs) return this.value;
    this.readAt = t;
    const value = this.read();
    this.value = value;
    value.catch(() => {
      if (this.value === value) this.value = undefined;
    });
    return value;
  }
}
