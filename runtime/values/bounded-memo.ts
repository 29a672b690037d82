/**
 * A memo with a bound on its size, for answers built once per key where the keys come from
 * requests (a sparse fieldset, a user's token): a client must not be able to grow it without end.
 * The oldest entry goes first.
 */
export class BoundedMemo<V> {
  private readonly kept = new Map<string, V>();

  constructor(private readonly limit: number) {}

  get(key: string, build: () => V): V {
    let value = this.kept.get(key);
    if (value === undefined) {
      value = build();
      if (this.kept.size >= this.limit) this.kept.delete(this.kept.keys().next().value!);
      this.kept.set(key, value);
    }
    return value;
  }
}
