import { MeshIndex } from './joinIndex';
import type { MeshObject } from './model';

/**
 * A join index seen through a private layer: `apply` records the object's new state in the layer, never in
 * the shared index, and lookups answer as if the shared index had been changed. The one-object preview plans
 * with it, so that planning (which applies every change to its index, for the objects planned after it) leaves
 * the process's shared index exactly as it was, and no rebuild is needed after a preview.
 */
export class IndexOverlay {
  private readonly layer: MeshIndex;
  private readonly changed = new Set<string>();

  constructor(private readonly base: MeshIndex) {
    this.layer = new MeshIndex(base.attributes);
  }

  get attributes(): ReadonlySet<string> {
    return this.base.attributes;
  }

  find(by: string | undefined, key: string): string[] {
    return this.merge(this.base.find(by, key), this.layer.find(by, key));
  }

  info(id: string): { objectType: string; anchorValue: string } | undefined {
    return this.changed.has(id) ? this.layer.info(id) : this.base.info(id);
  }

  waiting(by: string | undefined, key: string): string[] {
    return this.merge(this.base.waiting(by, key), this.layer.waiting(by, key));
  }

  incoming(targetId: string): string[] {
    return this.merge(this.base.incoming(targetId), this.layer.incoming(targetId));
  }

  get generation(): number {
    return this.base.generation + this.layer.generation;
  }

  *entries(by: string): IterableIterator<[string, string[]]> {
    for (const [key, ids] of this.base.entries(by)) {
      const kept = this.changed.size ? ids.filter((id) => !this.changed.has(id)) : ids;
      if (kept.length) yield [key, kept];
    }
    yield* this.layer.entries(by);
  }

  apply(id: string, state: MeshObject | null): void {
    this.changed.add(id);
    this.layer.apply(id, state);
  }

  private merge(base: string[], layer: string[]): string[] {
    if (!this.changed.size) return base;
    return [...base.filter((id) => !this.changed.has(id)), ...layer];
  }
}
